package allocator

import (
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// TestWhatIfTwins: two programs whose recordings hold the same requests
// and the same start state, made by histories the files do not keep
// (capture/whatif/workloads.py twin*): twinwrap-a and -b under the
// default allocator, their rings wrapped past a prefix that held ten
// 104 MiB blocks at once in a and one at a time in b; twinlate-a and -b
// under expandable segments, recorded after freeing one 500 MiB block in
// a and fifty 10 MiB blocks in b. Torch ran each twin under every setting
// in a fresh process. The what-if from either twin's file is the same
// answer, point and bound, and both twins' torch peaks lie inside that
// bound; under some setting the twins' peaks differ by more than 10.5%,
// so no point can be within 5% of both: a late start's point estimate
// is a guess about history the file does not hold, and the bound is what
// the file can promise.
func TestWhatIfTwins(t *testing.T) {
	for _, c := range []struct{ twin, recorded string }{{"twinwrap", "default"}, {"twinlate", "expandable"}} {
		var outs [2]map[string]*Outcome
		var wants [2]map[string]int64
		for i, side := range []string{"a", "b"} {
			dir := filepath.Join("../fixtures", "whatif-"+c.twin+"-"+side)
			truths := settingTruths(t, dir)
			s, err := snapshot.Open(filepath.Join(dir, c.recorded, "snapshot.pickle.gz"))
			if err != nil {
				t.Fatal(err)
			}
			tr := truths[c.recorded]
			rc, err := NewRecording(s, 0, WhatIfOptions{DeviceTotal: tr.DeviceTotal, MemoryFraction: tr.CapFraction})
			if err != nil {
				t.Fatalf("%s-%s: %v", c.twin, side, err)
			}
			outs[i], wants[i] = map[string]*Outcome{}, map[string]int64{}
			for _, b := range whatIfSettings {
				set, err := ParseConf(truths[b].AllocConf)
				if err != nil {
					t.Fatal(err)
				}
				o, err := rc.WhatIf(set)
				if err != nil {
					t.Fatalf("%s-%s WhatIf(%s): %v", c.twin, side, b, err)
				}
				outs[i][b], wants[i][b] = o, truths[b].MemoryStatsEnd["reserved_bytes.all.peak"]
			}
		}
		apart := 0
		for _, b := range whatIfSettings {
			oa, ob := outs[0][b], outs[1][b]
			wa, wb := wants[0][b], wants[1][b]
			t.Logf("%s %-11s point %11d [%11d, %11d]  torch a %11d  b %11d", c.twin, b, oa.PeakReserved, oa.PeakReservedLow, oa.PeakReservedHigh, wa, wb)
			if oa.PeakReserved != ob.PeakReserved || oa.PeakReservedLow != ob.PeakReservedLow || oa.PeakReservedHigh != ob.PeakReservedHigh || (oa.OOM == nil) != (ob.OOM == nil) {
				t.Errorf("%s %s: the twins' files gave different what-ifs: %d [%d, %d] and %d [%d, %d]", c.twin, b,
					oa.PeakReserved, oa.PeakReservedLow, oa.PeakReservedHigh, ob.PeakReserved, ob.PeakReservedLow, ob.PeakReservedHigh)
			}
			for i, o := range []*Outcome{oa, ob} {
				want := wants[i][b]
				if o.OOM != nil {
					t.Errorf("%s-%c %s: OOM %+v; torch ran without one", c.twin, 'a'+i, b, o.OOM)
				}
				if b == c.recorded {
					if o.PeakReserved != want {
						t.Errorf("%s-%c %s: the recorded run replays at %d, torch %d", c.twin, 'a'+i, b, o.PeakReserved, want)
					}
				} else if !inBound(want, o) {
					t.Errorf("%s-%c %s: torch's %d outside the bound [%d, %d]", c.twin, 'a'+i, b, want, o.PeakReservedLow, o.PeakReservedHigh)
				}
			}
			lo, hi := min(wa, wb), max(wa, wb)
			if float64(hi) > 1.105*float64(lo) {
				apart++
			}
		}
		if apart == 0 {
			t.Errorf("%s: under every setting the twins' torch peaks are within 10.5%% of each other: one point could serve both", c.twin)
		}
	}
}
