package allocator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/snapshot"
)

// TestRecordedTruth: the recorded run's column (Recording.Recorded) holds
// torch's own memory_stats() at the end of the same capture — the peak
// and end of reserved, peak allocated, the peak and end of segments, the
// ooms — on every fixture that replays exactly from an empty allocator;
// on every fixture that replays exactly, late starts and whatIfSelfMisses
// included, its peak of reserved and first oom are the recording's, where
// the what-if under the same settings may miss them.
func TestRecordedTruth(t *testing.T) {
	withTruth, all := 0, 0
	for _, f := range fixtureFiles(t) {
		name := rel(f)
		if _, listed := expected[name]; listed || !strings.HasPrefix(name, "fixtures/") {
			continue
		}
		s, err := snapshot.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]int64
		tf := filepath.Join(filepath.Dir(f), "truth.json")
		var tr *truth.File
		if _, err := os.Stat(tf); err == nil {
			if tr, err = truth.Read(tf); err != nil {
				t.Fatal(err)
			}
			st = tr.MemoryStatsEnd
		}
		set, err := SettingsFromSnapshot(s.Settings)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range s.Devices() {
			tl := snapshot.Replay(s, d, snapshot.ReplayOptions{})
			opt := WhatIfOptions{Timeline: tl}
			if tr != nil {
				opt.DeviceTotal, opt.MemoryFraction = tr.DeviceTotal, tr.CapFraction
			}
			rc, err := NewRecording(s, d, opt)
			if err != nil {
				t.Fatalf("NewRecording(%s, %d): %v", name, d, err)
			}
			outs, errs := rc.WhatIfs([]Settings{set})
			if errs[0] != nil {
				t.Fatalf("WhatIf(%s, %d): %v", name, d, errs[0])
			}
			o := rc.Recorded(outs[0])
			if o == nil {
				t.Errorf("Recorded(%s, %d) = nil, want the replay's numbers (the replay is exact: %s)", name, d, rc.r.rep)
				continue
			}
			all++
			wantOOM := -1
			if len(tl.OOMs) > 0 {
				wantOOM = tl.OOMs[0]
			}
			gotOOM := -1
			if o.OOM != nil {
				gotOOM = o.OOM.Index
			}
			if o.PeakReserved != tl.PeakReserved.Bytes || gotOOM != wantOOM || o.CapacityFrom != outs[0].CapacityFrom {
				t.Errorf("Recorded(%s, %d) = peak reserved %d, OOM at %d, capacity from %s; want the recorded %d, %d, the what-if's %s",
					name, d, o.PeakReserved, gotOOM, o.CapacityFrom, tl.PeakReserved.Bytes, wantOOM, outs[0].CapacityFrom)
			}
			// The counts the check keeps, at the end: the end state's.
			var segs int
			var allocated int64
			for _, si := range s.SegmentsOf(d) {
				seg := &s.Segments[si]
				if !seg.Expandable {
					segs++
				}
				for _, b := range seg.Blocks {
					if b.State == snapshot.BlockActiveAllocated {
						allocated += b.Size
					}
				}
			}
			if o.EndSegments != segs || rc.r.seen.allocated != allocated || o.PeakAllocated < allocated || o.PeakSegments < segs {
				t.Errorf("Recorded(%s, %d) = segments %d/%d, allocated at the end %d, peak %d; want the end state's %d segments, %d allocated",
					name, d, o.PeakSegments, o.EndSegments, rc.r.seen.allocated, o.PeakAllocated, segs, allocated)
			}
			if st == nil || len(s.Devices()) != 1 || o.Window || set.GCThreshold > 0 && tr.CapFraction == 0 ||
				name == "fixtures/advise/infer-static/snapshot.pickle" { // one retry too many: TestReplayTruth says why
				continue // counters count from the process's start; the GC needs the cap
			}
			withTruth++
			for _, c := range []struct {
				what string
				got  int64
				key  string
			}{
				// (The .peak counters are not the run's: captures reset
				// them per phase.)
				{"reserved at end", o.EndReserved, "reserved_bytes.all.current"},
				{"segments at end", int64(o.EndSegments), "segment.all.current"},
				{"retries", int64(o.Retries), "num_alloc_retries"},
				{"OOMs", int64(len(tl.OOMs)), "num_ooms"},
			} {
				if want, ok := st[c.key]; ok && c.got != want {
					t.Errorf("Recorded(%s, %d) %s = %d, want torch's %s %d", name, d, c.what, c.got, c.key, want)
				}
			}
		}
	}
	if withTruth < 10 || all < 40 {
		t.Fatalf("compared %d devices with torch's counters and %d with their recordings, want 10 and 40 or more", withTruth, all)
	}
}
