package allocator

import (
	"fmt"
	"os"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// generate returns a snapshot whose trace the model itself wrote: the
// requests of the plain-trainer-late fixture (a real training step),
// repeated reps times on a bump device, each repetition freeing what it
// left live. Unlike a repeated recording it is consistent with the
// allocator whatever its length, so a replay of it must match exactly.
func generate(tb testing.TB, reps int) *snapshot.Snapshot {
	tb.Helper()
	src, err := snapshot.Open("../fixtures/plain-trainer-late/snapshot.pickle")
	if err != nil {
		tb.Fatal(err)
	}
	a := New(DefaultSettings(), newBump())
	var evs []snapshot.Event
	drain := func() {
		for _, r := range a.Drain() {
			evs = append(evs, snapshot.Event{Action: r.Action, Addr: r.Addr, Size: r.Size, Stream: r.Stream})
		}
	}
	for range reps {
		addrs := map[uint64]uint64{}
		for _, ev := range src.Traces[0] {
			switch ev.Action {
			case snapshot.ActionAlloc:
				if addr, ok := a.Malloc(ev.Size, ev.Stream, snapshot.PoolID{}); ok {
					addrs[ev.Addr] = addr
				}
			case snapshot.ActionFreeRequested:
				if addr, ok := addrs[ev.Addr]; ok {
					a.Free(addr, false)
					delete(addrs, ev.Addr)
				}
			}
			drain()
		}
		for _, addr := range addrs {
			a.Free(addr, false)
		}
		drain()
	}
	s := &snapshot.Snapshot{Traces: [][]snapshot.Event{evs}, HasTraces: true,
		Stacks: snapshot.NewStacks(), Strings: snapshot.NewStrings()}
	for _, seg := range a.Segments() {
		out := snapshot.Segment{Address: seg.Addr, TotalSize: seg.Size, Stream: seg.Stream,
			Small: seg.Small, Expandable: seg.Expandable}
		for _, b := range seg.Blocks {
			out.Blocks = append(out.Blocks, snapshot.Block{Address: b.Addr, Size: b.Size,
				RequestedSize: b.Requested, State: b.State})
		}
		s.Segments = append(s.Segments, out)
	}
	return s
}

// BenchmarkReplay replays generated snapshots of 4 and 16 repetitions of a
// training step (some 40,000 and 170,000 entries): ns/event must stay flat
// across the sizes (linear replay). Any file:
//
//	MEMSCOPE_BENCH_SNAPSHOT=$PWD/bench-data/big.pickle go test ./allocator -run '^$' -bench Replay/file
//
// (gensnap's files repeat recorded segment_alloc entries, which no
// allocator would: the replay then diverges and resyncs, at a cost
// measured too.)
func BenchmarkReplay(b *testing.B) {
	for _, reps := range []int{4, 16} {
		s := generate(b, reps)
		b.Run(fmt.Sprintf("repeats=%d", reps), func(b *testing.B) { benchReplay(b, s, true) })
	}
	if path := os.Getenv("MEMSCOPE_BENCH_SNAPSHOT"); path != "" {
		s, err := snapshot.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("file", func(b *testing.B) { benchReplay(b, s, false) })
	}
}

func benchReplay(b *testing.B, s *snapshot.Snapshot, exact bool) {
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		events = 0
		for _, d := range s.Devices() {
			rep, err := Replay(s, d)
			if err != nil {
				b.Fatal(err)
			}
			if exact && !rep.Exact() {
				b.Fatalf("replay diverged: %s", rep)
			}
			events += rep.Events
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
	b.ReportMetric(float64(events), "events")
}

// TestReplayGenerated: a trace the model wrote replays to a full match.
func TestReplayGenerated(t *testing.T) {
	s := generate(t, 2)
	rep, err := Replay(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Exact() || rep.Total().Checked < 7000 {
		t.Errorf("Replay(generated) = %s, want an exact match of some 7,000 decisions", rep)
	}
}
