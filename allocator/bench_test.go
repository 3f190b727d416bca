package allocator

import (
	"fmt"
	"os"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// genOptions shape a generated trace.
type genOptions struct {
	conf     string // PYTORCH_CUDA_ALLOC_CONF of the model that writes it
	capacity int64  // the device's memory, 0 unlimited: OOM retries and ooms
	defer_   int    // every defer_-th free completes only 50 entries later (record_stream)
}

// generate returns a snapshot whose trace the model itself wrote: the
// requests of the plain-trainer-late fixture (a real training step),
// repeated reps times on a bump device, each repetition freeing what it
// left live. Unlike a repeated recording it is consistent with the
// allocator whatever its length, so a replay of it must match exactly.
func generate(tb testing.TB, reps int) *snapshot.Snapshot {
	return generateWith(tb, reps, genOptions{})
}

func generateWith(tb testing.TB, reps int, opt genOptions) *snapshot.Snapshot {
	tb.Helper()
	src, err := snapshot.Open("../fixtures/plain-trainer-late/snapshot.pickle")
	if err != nil {
		tb.Fatal(err)
	}
	set, err := ParseConf(opt.conf)
	if err != nil {
		tb.Fatal(err)
	}
	dev := newBump()
	dev.capacity = opt.capacity
	a := New(set, dev)
	var evs []snapshot.Event
	drain := func() {
		for _, r := range a.Drain() {
			evs = append(evs, snapshot.Event{Action: r.Action, Addr: r.Addr, Size: r.Size, Stream: r.Stream})
		}
	}
	type later struct {
		at   int
		addr uint64
	}
	var pending []later
	frees := 0
	for range reps {
		addrs := map[uint64]uint64{}
		for _, ev := range src.Traces[0] {
			for len(pending) > 0 && pending[0].at <= len(evs) {
				a.FreeCompleted(pending[0].addr)
				pending = pending[1:]
			}
			switch ev.Action {
			case snapshot.ActionAlloc:
				if addr, ok := a.Malloc(ev.Size, ev.Stream, snapshot.PoolID{}); ok {
					addrs[ev.Addr] = addr
				}
			case snapshot.ActionFreeRequested:
				if addr, ok := addrs[ev.Addr]; ok {
					frees++
					deferred := opt.defer_ > 0 && frees%opt.defer_ == 0
					a.Free(addr, deferred)
					if deferred {
						pending = append(pending, later{len(evs) + 50, addr})
					}
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
	if opt.conf != "" {
		s.Settings = map[string]any{"PYTORCH_CUDA_ALLOC_CONF": opt.conf}
	}
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
	// With the timeline given, as an analysis that already made one would.
	s := generate(b, 16)
	tl := snapshot.Replay(s, 0, snapshot.ReplayOptions{})
	b.Run("repeats=16/timeline-given", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rep, err := ReplayWith(s, 0, ReplayOptions{Timeline: tl})
			if err != nil || !rep.Exact() {
				b.Fatalf("replay: %v %v", rep, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(s.Traces[0])), "ns/event")
	})
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

// TestReplayGenerated: traces the model wrote replay to a full match,
// under paths the fixtures do not take: record_stream frees completed
// later, OOM retries and ooms under a capacity, max_split_size's
// release_available_cached_blocks, expandable segments unmapped on OOM.
// It checks the replay's machinery (the device answers, their alignment
// with the releases, the empty_cache detection), not torch.
func TestReplayGenerated(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  genOptions
		want func(*ReplayReport) bool
	}{
		{"plain", genOptions{}, func(r *ReplayReport) bool { return r.Total().Checked > 7000 }},
		{"deferred", genOptions{defer_: 7}, func(r *ReplayReport) bool { return r.Total().Checked > 7000 }},
		{"capacity", genOptions{capacity: 160 << 20}, func(r *ReplayReport) bool {
			return r.Retries > 0 && r.Checks[KindSegmentFree].Checked > 0
		}},
		{"tight", genOptions{capacity: 124 << 20, defer_: 5}, func(r *ReplayReport) bool { return r.OOMs > 0 }},
		{"max-split", genOptions{conf: "max_split_size_mb:20", capacity: 150 << 20}, func(r *ReplayReport) bool {
			return r.Checks[KindSegmentFree].Checked > 0
		}},
		{"expandable", genOptions{conf: "expandable_segments:True", capacity: 140 << 20, defer_: 9}, func(r *ReplayReport) bool {
			return r.Checks[KindSegmentMap].Checked > 0 && r.Checks[KindSegmentUnmap].Checked > 0
		}},
	} {
		s := generateWith(t, 2, c.opt)
		rep, err := Replay(s, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Exact() || !c.want(rep) {
			t.Errorf("%s: Replay(generated) = %s (retries %d, ooms %d), want an exact match on the path", c.name, rep, rep.Retries, rep.OOMs)
		}
	}
}

// BenchmarkWhatIf drives generated snapshots of 4, 16 and 64 repetitions of a
// training step under expandable segments (the replay under the recorded
// settings included, as WhatIf makes it): ns/event must stay flat across
// the sizes (linear).
func BenchmarkWhatIf(b *testing.B) {
	set, err := ParseConf("expandable_segments:True")
	if err != nil {
		b.Fatal(err)
	}
	for _, reps := range []int{4, 16, 64} {
		s := generate(b, reps)
		tl := snapshot.Replay(s, 0, snapshot.ReplayOptions{})
		b.Run(fmt.Sprintf("repeats=%d", reps), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				o, err := WhatIf(s, 0, set, WhatIfOptions{Timeline: tl})
				if err != nil || o.OOM != nil {
					b.Fatalf("what-if: %v %v", o, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(s.Traces[0])), "ns/event")
			b.ReportMetric(float64(len(s.Traces[0])), "events")
		})
	}
	// Any file, as whatif runs it: the recording (the replay check), and
	// the recording with the recorded settings and four others, as many
	// at a time as there are CPUs (GOMAXPROCS=1 for the work of one core):
	//
	//	MEMSCOPE_BENCH_SNAPSHOT=/tmp/d70.pickle go test ./allocator -run '^$' -bench WhatIf/file
	if path := os.Getenv("MEMSCOPE_BENCH_SNAPSHOT"); path != "" {
		s, err := snapshot.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		d := s.Devices()[0]
		tl := snapshot.Replay(s, d, snapshot.ReplayOptions{})
		base, err := SettingsFromSnapshot(s.Settings)
		if err != nil {
			b.Fatal(err)
		}
		sets := []Settings{base}
		for _, conf := range []string{"expandable_segments:True", "max_split_size_mb:128", "roundup_power2_divisions:4", "garbage_collection_threshold:0.6"} {
			set := base
			if err := set.ApplyConf(conf); err != nil {
				b.Fatal(err)
			}
			sets = append(sets, set)
		}
		b.Run("file/recording", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rc, err := NewRecording(s, d, WhatIfOptions{Timeline: tl})
				if err != nil {
					b.Fatal(err)
				}
				rc.WhatIfs(nil) // no what-if: the slots' pairing ahead stops
			}
		})
		b.Run("file/five-settings", func(b *testing.B) { // the recording included
			b.ReportAllocs()
			for b.Loop() {
				rc, err := NewRecording(s, d, WhatIfOptions{Timeline: tl})
				if err != nil {
					b.Fatal(err)
				}
				if _, errs := rc.WhatIfs(sets); errs[0] != nil {
					b.Fatal(errs[0])
				}
			}
		})
	}
}
