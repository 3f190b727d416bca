package allocator

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/snapshot"
)

// fixtureFiles returns every snapshot the repository holds: the fixtures
// (run folders, sweep points and capture ranks included) and the decoder's
// testdata.
func fixtureFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"../fixtures/*/snapshot*.pickle", "../fixtures/*/*/snapshot*.pickle",
		"../fixtures/*/*/*/snapshot*.pickle", "../fixtures/*/*/*/*/snapshot*.pickle",
		"../snapshot/testdata/*.pickle", "../snapshot/testdata/*.pickle.gz", "../snapshot/testdata/*.json"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	return files
}

// expectation is what Replay of one file must give where it does not match
// exactly, with the cause written down.
type expectation struct {
	refused string // Replay refuses every device, with this in the error
	notSnap bool   // the file is not a snapshot (decoder test input)
	// first is the first divergence's event index, cause why it happens.
	first int
	cause string
	// devices, when set, holds the expectation of each device instead.
	devices map[int]expectation
	// exact: this device matches every decision and its end state.
	exact bool
}

// expected lists every file that does not replay to a full match. Every
// other file must match every decision and its end state.
var expected = map[string]expectation{
	"snapshot/testdata/bare_segments.pickle":   {refused: "no recorded trace"},
	"snapshot/testdata/legacy.pickle":          {refused: "torch ≤ 2.0"},
	"snapshot/testdata/expected.json":          {notSnap: true},
	"snapshot/testdata/ordered_dict_p2.pickle": {notSnap: true},
	"snapshot/testdata/ordered_dict_p4.pickle": {notSnap: true},
	// make_testdata.py's full_snapshot is hand-written, not an allocator's
	// output: device 0's first entry is a 3 GiB segment_alloc no request
	// asked for; device 1 starts with an expandable segment already mapped.
	"snapshot/testdata/future.pickle":     handWritten,
	"snapshot/testdata/snap.json":         handWritten,
	"snapshot/testdata/snap_p2.pickle":    handWritten,
	"snapshot/testdata/snap_p3.pickle":    handWritten,
	"snapshot/testdata/snap_p4.pickle":    handWritten,
	"snapshot/testdata/snap_p4.pickle.gz": handWritten,
	"snapshot/testdata/snap_p5.pickle":    handWritten,
	// make_testdata.py's synthetic_snapshot is not an allocator's output:
	// one 1 GiB segment_alloc serves every request (torch would cudaMalloc
	// 20 MiB for the first one), and its blocks are packed by a script.
	"snapshot/testdata/synthetic.pickle": {first: 0, cause: "synthetic trace: a 1 GiB segment for a 2 MiB-pool request"},
}

// handWritten is full_snapshot's expectation, per device.
var handWritten = expectation{devices: map[int]expectation{
	0: {first: 0, cause: "hand-written trace: a 3 GiB segment_alloc before any request"},
	1: {exact: true}, // an expandable segment mapped before the first entry: modelled from its range
}}

func rel(f string) string { return strings.TrimPrefix(filepath.ToSlash(f), "../") }

// TestReplayFixtures replays every device of every snapshot in the
// repository under its recorded settings.
func TestReplayFixtures(t *testing.T) {
	files := fixtureFiles(t)
	if len(files) < 29 {
		t.Fatalf("found %d snapshot files, want the 29 fixtures and the testdata", len(files))
	}
	for _, f := range files {
		name := rel(f)
		t.Run(name, func(t *testing.T) {
			want, listed := expected[name]
			s, err := snapshot.Open(f)
			if want.notSnap {
				if err == nil {
					t.Fatalf("Open(%s) decoded; the table says it is not a snapshot", name)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range s.Devices() {
				want := want
				if want.devices != nil {
					want = want.devices[d]
				}
				rep, a, err := replay(s, d, ReplayOptions{})
				if err == nil {
					if err := a.CheckValid(); err != nil {
						t.Errorf("Replay(%s, %d): the model ends invalid: %v", name, d, err)
					}
				}
				switch {
				case want.refused != "":
					if err == nil || !errors.Is(err, ErrNotReplayable) || !strings.Contains(err.Error(), want.refused) {
						t.Errorf("Replay(%s, %d) error = %v, want a refusal naming %q", name, d, err, want.refused)
					}
					continue
				case err != nil:
					t.Fatalf("Replay(%s, %d): %v", name, d, err)
				}
				if !listed || want.exact {
					if !rep.Exact() {
						t.Errorf("Replay(%s, %d) = %s, want every decision and the end state matched", name, d, rep)
					}
					continue
				}
				if rep.First == nil || rep.First.Index != want.first {
					t.Errorf("Replay(%s, %d) = %s, want the first divergence at event %d (%s)", name, d, rep, want.first, want.cause)
				}
			}
		})
	}
}

// TestReplayTruth compares the model's counters over a replay with what
// torch's memory_stats() said at the end of the same capture, for the
// fixtures whose trace covers the whole process.
func TestReplayTruth(t *testing.T) {
	n := 0
	for _, f := range fixtureFiles(t) {
		tf := filepath.Join(filepath.Dir(f), "truth.json")
		if _, err := os.Stat(tf); err != nil || !strings.HasPrefix(rel(f), "fixtures/") {
			continue
		}
		tr, err := truth.Read(tf)
		if err != nil {
			t.Fatal(err)
		}
		st := tr.MemoryStatsEnd
		if st == nil {
			continue
		}
		s, err := snapshot.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		devs := s.Devices()
		if len(devs) != 1 {
			continue
		}
		if _, listed := expected[rel(f)]; listed {
			continue // refused or diverging: the fixture table says why
		}
		// The cap is not in the snapshot; garbage collection needs it.
		rep, err := ReplayWith(s, devs[0], ReplayOptions{DeviceTotal: tr.DeviceTotal, MemoryFraction: tr.CapFraction})
		if err != nil {
			t.Fatal(err)
		}
		if rep.StartFromState {
			continue // counters count from the process's start, the trace does not
		}
		n++
		name := rel(f)
		// garbage_collection_threshold acts only under the per-process
		// cap, which a snapshot does not record: without it in truth.json
		// its releases replay as the retry path's.
		if set, _ := SettingsFromSnapshot(s.Settings); set.GCThreshold > 0 && tr.CapFraction == 0 {
			continue
		}
		if got, want := int64(rep.Retries), st["num_alloc_retries"]; got != want && !(name == "fixtures/advise/infer-static/snapshot.pickle" && got == want+1) {
			// (infer-static: seven segment_free entries right before an
			// 8-byte request that needs a new segment, an empty_cache() of
			// generate()'s CUDA graph set-up, read as the OOM retry's
			// release: with no cap known and the new segment past the
			// recorded peak of reserved, a snapshot cannot tell the two
			// apart. Every decision still matches. cuda-graph's capture
			// did the same under the recorded peak: an empty_cache(),
			// replayer.underPeak.)
			t.Errorf("%s: retries = %d, want num_alloc_retries %d", name, got, want)
		}
		if got, want := int64(rep.OOMs), st["num_ooms"]; got != want {
			t.Errorf("%s: OOMs = %d, want num_ooms %d", name, got, want)
		}
		if got, want := rep.Reserved, st["reserved_bytes.all.current"]; got != want {
			t.Errorf("%s: reserved at the end = %d, want reserved_bytes.all.current %d", name, got, want)
		}
		segAllocs := rep.Checks[KindSegmentAlloc].Checked + rep.Checks[KindSegmentMap].Checked
		if got, want := int64(segAllocs), st["num_device_alloc"]; got != want {
			t.Errorf("%s: device allocations = %d, want num_device_alloc %d", name, got, want)
		}
	}
	if n < 10 {
		t.Fatalf("compared %d fixtures with their truth, want the 10 with memory_stats_end that start at an empty allocator", n)
	}
}

// TestTieBreak records which comparator torch 2.11 uses: the address one
// matches every fixture (TestReplayFixtures); the two counter comparators
// of 2026 main diverge on fixtures where equal-size free blocks of
// different segments compete.
func TestTieBreak(t *testing.T) {
	s, err := snapshot.Open("../fixtures/capture-train/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	for _, tie := range []TieBreak{TieSegmentCounter, TieBlockCounter} {
		rep, err := ReplayWith(s, 0, ReplayOptions{TieBreak: tie})
		if err != nil {
			t.Fatal(err)
		}
		if rep.First == nil || rep.First.Kind != KindBlock {
			t.Errorf("ReplayWith(capture-train, %s) = %s, want a block divergence", tie, rep)
		}
	}
}

// cut returns s with device 0's first n entries dropped, as a ring buffer
// that wrapped drops them.
func cut(s *snapshot.Snapshot, n int) *snapshot.Snapshot {
	c := *s
	c.Traces = [][]snapshot.Event{s.Traces[0][n:]}
	return &c
}

// TestReplayTruncated drops the oldest entries of fixtures, as a wrapped
// ring buffer or a late start would, at request boundaries: the replay
// starts from the rebuilt state and must still match every decision after.
func TestReplayTruncated(t *testing.T) {
	for _, name := range []string{"mlp-adamw", "oom", "llama-bf16", "leak"} {
		s, err := snapshot.Open("../fixtures/" + name + "/snapshot.pickle")
		if err != nil {
			t.Fatal(err)
		}
		evs := s.Traces[0]
		for _, frac := range []int{1, 2, 3} {
			n := len(evs) * frac / 4
			// Move to an alloc whose request has no segment entries, so the
			// cut splits no request.
			for n < len(evs) && (evs[n].Action != snapshot.ActionAlloc || isSegmentEntry(evs[n-1].Action)) {
				n++
			}
			rep, err := Replay(cut(s, n), 0)
			if err != nil {
				t.Fatalf("%s cut at %d: %v", name, n, err)
			}
			if !rep.Exact() || (!rep.StartFromState && n > 0) {
				t.Errorf("Replay(%s without its first %d entries) = %s, want an exact match from the rebuilt state", name, n, rep)
			}
		}
	}
}

// TestReplayEmptyCache: releases between requests are checked as an
// empty_cache() call, and one that frees a segment empty_cache would keep
// is a divergence.
func TestReplayEmptyCache(t *testing.T) {
	s := generate(t, 1)
	evs := s.Traces[0]
	rep, err := Replay(s, 0)
	if err != nil || !rep.Exact() {
		t.Fatalf("Replay(generated) = %v, %v", rep, err)
	}
	// Append an empty_cache: every segment of one free block released.
	var frees []snapshot.Event
	var kept []snapshot.Segment
	for _, seg := range s.Segments {
		if len(seg.Blocks) == 1 && seg.Blocks[0].State == snapshot.BlockInactive {
			frees = append(frees, snapshot.Event{Action: snapshot.ActionSegmentFree, Addr: seg.Address, Size: seg.TotalSize, Stream: seg.Stream})
		} else {
			kept = append(kept, seg)
		}
	}
	if len(frees) == 0 {
		t.Fatal("the generated snapshot has no free segment to release")
	}
	// empty_cache releases large-pool blocks first, in best-fit order.
	sortFrees(frees)
	c := *s
	c.Traces = [][]snapshot.Event{append(append([]snapshot.Event(nil), evs...), frees...)}
	c.Segments = kept
	rep, err = Replay(&c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Exact() || rep.EmptyCaches != 1 || rep.Checks[KindSegmentFree].Matched != len(frees) {
		t.Errorf("Replay(with an empty_cache) = %s, %d empty_cache calls; want %d segment_free matched in one", rep, rep.EmptyCaches, len(frees))
	}
	// Only part of them: not what empty_cache does.
	c.Traces = [][]snapshot.Event{append(append([]snapshot.Event(nil), evs...), frees[0])}
	rep, err = Replay(&c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(frees) > 1 && (rep.First == nil || rep.First.Kind != KindSegmentFree) {
		t.Errorf("Replay(with a partial release) = %s, want a segment_free divergence", rep)
	}
}

// sortFrees orders segment_free entries as release_cached_blocks makes
// them: the large pool (by stream, size, address), then the small pool.
func sortFrees(evs []snapshot.Event) {
	sort.Slice(evs, func(i, j int) bool {
		a, b := evs[i], evs[j]
		as, bs := a.Size == SmallBuffer, b.Size == SmallBuffer
		if as != bs {
			return !as
		}
		if a.Size != b.Size {
			return a.Size < b.Size
		}
		return a.Addr < b.Addr
	})
}

// TestReplayRefuses: the states the model cannot start from are refused
// with their reason; a late expandable recording is not one of them.
func TestReplayRefuses(t *testing.T) {
	s, err := snapshot.Open("../fixtures/expandable/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	n := len(s.Traces[0]) / 2
	for n < len(s.Traces[0]) && s.Traces[0][n].Action != snapshot.ActionAlloc {
		n++
	}
	// An expandable segment mapped before the first entry is modelled
	// from its mapped ranges (state.go's load): the late half of the
	// expandable fixture replays decision for decision.
	if rep, err := Replay(cut(s, n), 0); err != nil || !rep.Exact() {
		t.Errorf("Replay(expandable, late) = %v, %v; want every decision matched", rep, err)
	}
	c := *s
	c.Settings = map[string]any{"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}
	if _, err := Replay(&c, 0); !errors.Is(err, ErrNotReplayable) || !strings.Contains(err.Error(), "cudaMallocAsync") {
		t.Errorf("Replay(cudaMallocAsync) error = %v, want a refusal", err)
	}
	c.Settings = map[string]any{"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:1"}
	if _, err := Replay(&c, 0); err == nil || errors.Is(err, ErrNotReplayable) || !strings.Contains(err.Error(), "max_split_size_mb") {
		t.Errorf("Replay(bad settings) error = %v, want one naming max_split_size_mb", err)
	}
	if _, err := Replay(s, 3); !errors.Is(err, ErrNotReplayable) {
		t.Errorf("Replay(device 3) error = %v, want a refusal", err)
	}
}

// TestReplayDeviceTotal: with the device's memory known (truth.json's
// device_total), expandable segments reserve 1.125 × it, as torch does; the
// fixture's two reservations then lie apart as recorded, and the replay
// still matches.
func TestReplayDeviceTotal(t *testing.T) {
	tr, err := truth.Read("../fixtures/expandable/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open("../fixtures/expandable/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	rep, a, err := replay(s, 0, ReplayOptions{DeviceTotal: tr.DeviceTotal})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Exact() {
		t.Errorf("ReplayWith(expandable, device_total %d) = %s, want an exact match", tr.DeviceTotal, rep)
	}
	want := (tr.DeviceTotal + tr.DeviceTotal/8 + LargeBuffer - 1) / LargeBuffer * LargeBuffer
	for _, seg := range a.segs {
		if !seg.pool.small && seg.size != want {
			t.Errorf("large-pool reservation of %d bytes, want 1.125 × device_total in 20 MiB pages: %d", seg.size, want)
		}
	}
}

// TestReplayHandBuilt replays small traces written by hand, as torch 2.11
// would record them, end state included.
func TestReplayHandBuilt(t *testing.T) {
	const V = 0x7e0000000000 // an expandable segment's reservation
	const M = 1 << 20
	seg := func(addr int64, expandable bool, blocks ...map[string]any) map[string]any {
		s := snapgen.Seg(addr, blocks...)
		s["is_expandable"] = expandable
		return s
	}
	ev := func(action string, addr, size int64) map[string]any { return snapgen.Ev(action, addr, size, 1) }
	for _, c := range []struct {
		name     string
		conf     string
		trace    []map[string]any
		segments []map[string]any
		check    func(*ReplayReport) bool
	}{{
		// Two pages mapped for a request that outgrows the first, then an
		// empty_cache unmapping the whole free page.
		name: "expandable map and unmap",
		conf: "expandable_segments:True",
		trace: []map[string]any{
			ev("segment_map", V, 20*M), ev("alloc", V, 3*M),
			ev("segment_map", V+20*M, 20*M), ev("alloc", V+3*M, 30*M),
			ev("free_requested", V+3*M, 30*M), ev("free_completed", V+3*M, 30*M),
			ev("segment_unmap", V+20*M, 20*M),
		},
		segments: []map[string]any{seg(V, true, snapgen.Blk(3*M, 3*M, "active_allocated"), snapgen.Blk(17*M, 0, "inactive"))},
		check: func(r *ReplayReport) bool {
			return r.Checks[KindSegmentMap] == Count{2, 2} && r.Checks[KindSegmentUnmap] == Count{1, 1} && r.EmptyCaches == 1
		},
	}, {
		// A cudaMalloc that failed: the unsplit free segment released and
		// the retry granted, inside one request; a record_stream free
		// completed later.
		name: "retry",
		trace: []map[string]any{
			ev("segment_alloc", 0x7f0000000000, 20*M), ev("alloc", 0x7f0000000000, 20*M),
			ev("segment_alloc", 0x7f0002000000, 2*M), ev("alloc", 0x7f0002000000, 4096),
			ev("free_requested", 0x7f0000000000, 20*M),
			ev("alloc", 0x7f0002001000, 4096),
			ev("free_completed", 0x7f0000000000, 20*M),
			ev("segment_free", 0x7f0000000000, 20*M),
			ev("segment_alloc", 0x7f0004000000, 40*M), ev("alloc", 0x7f0004000000, 40*M),
		},
		segments: []map[string]any{
			seg(0x7f0002000000, false, snapgen.Blk(4096, 4096, "active_allocated"), snapgen.Blk(4096, 4096, "active_allocated"), snapgen.Blk(2*M-8192, 0, "inactive")),
			seg(0x7f0004000000, false, snapgen.Blk(40*M, 40*M, "active_allocated")),
		},
		check: func(r *ReplayReport) bool {
			return r.Retries == 1 && r.FailedMallocs == 1 && r.Checks[KindSegmentFree] == Count{1, 1} && r.EmptyCaches == 0
		},
	}} {
		syn := &snapgen.Synth{Segments: c.segments, Traces: [][]map[string]any{c.trace},
			Settings: map[string]any{"PYTORCH_CUDA_ALLOC_CONF": c.conf}}
		s, err := syn.Decode(c.name)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Replay(s, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !rep.Exact() || !c.check(rep) {
			t.Errorf("%s: Replay = %s (retries %d, failed mallocs %d, empty caches %d)", c.name, rep, rep.Retries, rep.FailedMallocs, rep.EmptyCaches)
		}
	}
}

// TestReplayGCUnderFraction: the what-if fixture run with
// garbage_collection_threshold:0.6 under a 1200 MiB cap. Without the cap
// (a snapshot does not record it) every decision matches, the garbage
// collector's releases taken as the retry path's; given the cap from
// truth.json, the model collects them itself, in torch's order, and counts
// no retry, as torch did. (Its last free_completed, an immediate free,
// was once held for the release: the collector then missed that block.)
func TestReplayGCUnderFraction(t *testing.T) {
	const dir = "../fixtures/whatif-fragoom/gc06/"
	s, err := snapshot.Open(dir + "snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := truth.Read(dir + "truth.json")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Replay(s, 0)
	if err != nil || rep.First != nil {
		t.Fatalf("without the cap: %v, %v; want every decision matched", rep, err)
	}
	rep, err = ReplayWith(s, 0, ReplayOptions{DeviceTotal: tr.DeviceTotal, MemoryFraction: tr.CapFraction})
	if err != nil {
		t.Fatal(err)
	}
	if rep.First != nil || int64(rep.Retries) != tr.MemoryStatsEnd["num_alloc_retries"] {
		t.Errorf("with the cap: %v, %d retries; want every decision matched and torch's %d retries", rep, rep.Retries, tr.MemoryStatsEnd["num_alloc_retries"])
	}
}
