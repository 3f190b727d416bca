package allocator

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// A trace the model keeps diverging from (gensnap -realistic adds segments
// held from before recording, with free room the real allocator never
// had, so the model places blocks there): each resync loads the whole
// recorded state, thousands of blocks, so after a sixteenth of the trace's
// length in loaded blocks (and the slack) checking stops, and says why.
// Unbounded, this file's check took 80 µs per entry.
// divergent is a 4 MB generated snapshot of that shape (llama-bf16 with
// 256 segments held from before recording).
func divergent(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	src, err := snapshot.Open(filepath.Join("..", "fixtures", "llama-bf16", "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := snapgen.WriteOptions(&buf, src, 4<<20, snapgen.Options{Stacks: 64, Frames: 12, Segments: 256, Blocks: 16}); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Decode(&buf, "realistic.pickle")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestResyncsBounded(t *testing.T) {
	s := divergent(t)
	r, err := runReplay(s, 0, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep := r.rep
	if rep.LostWhy != LostTooOften || rep.LostAt < 0 {
		t.Fatalf("checking did not stop for resyncs: %v (lost %v)", rep, rep.LostWhy)
	}
	if rep.Resyncs == 0 || rep.Divergences < rep.Resyncs {
		t.Errorf("%d resyncs, %d divergences", rep.Resyncs, rep.Divergences)
	}
	if rep.Unchecked != rep.Events-rep.LostAt-1 {
		t.Errorf("%d unchecked after event %d of %d", rep.Unchecked, rep.LostAt, rep.Events)
	}
	// The budget, plus the one resync that crossed it.
	if most := rep.Events/16 + resyncSlack + rep.StartBlocks + rep.StartSegments + 4096; r.loaded > most {
		t.Errorf("resyncs loaded %d blocks and segments, more than %d", r.loaded, most)
	}
	t.Logf("%v", rep)
}

// TestWhatIfEmptyCacheAfterCheckStopped: a release the trace alone shows
// to be an empty_cache() call (segment frees before a free, or at the end
// of the trace) is made by the what-if also where the check has stopped,
// and the what-ifs run beside the check find it so too.
func TestWhatIfEmptyCacheAfterCheckStopped(t *testing.T) {
	s := divergent(t)
	base, err := WhatIf(s, 0, Settings{}, WhatIfOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if base.Replay.LostAt < 0 || base.EmptyCaches != 0 {
		t.Fatalf("the generated trace: check lost at %d, %d empty_cache calls; want it lost, none", base.Replay.LostAt, base.EmptyCaches)
	}
	// A segment_free at the end: release_cached_blocks outside any request.
	evs := s.Traces[0]
	seg := s.Segments[0]
	c := *s
	c.Traces = [][]snapshot.Event{append(slices.Clip(evs), snapshot.Event{Action: snapshot.ActionSegmentFree, Addr: seg.Address, Size: seg.TotalSize, Stream: seg.Stream})}
	o, err := WhatIf(&c, 0, Settings{}, WhatIfOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o.EmptyCaches != 1 || o.EndReserved >= base.EndReserved || o.PeakReserved != base.PeakReserved {
		t.Errorf("with an empty_cache() at the end: %d calls, end reserved %d, peak %d; want 1, below %d, %d",
			o.EmptyCaches, o.EndReserved, o.PeakReserved, base.EndReserved, base.PeakReserved)
	}
	// Where the check has stopped, one that begins a request's segment
	// entries is left to the request: only the check could tell.
	k := slices.IndexFunc(evs[base.Replay.LostAt+1:], func(e snapshot.Event) bool { return e.Action == snapshot.ActionSegmentAlloc })
	if k < 0 {
		t.Fatal("no segment_alloc after the check stopped")
	}
	k += base.Replay.LostAt + 1
	c.Traces = [][]snapshot.Event{slices.Insert(slices.Clone(evs), k, snapshot.Event{Action: snapshot.ActionSegmentFree, Addr: seg.Address, Size: seg.TotalSize, Stream: seg.Stream})}
	if o, err = WhatIf(&c, 0, Settings{}, WhatIfOptions{}); err != nil || o.EmptyCaches != 0 {
		t.Errorf("with a segment_free before a request's segment_alloc: %d empty_cache calls (%v), want none", o.EmptyCaches, err)
	}
}
