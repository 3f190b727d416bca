package snapshot

import (
	"reflect"
	"testing"
)

// TestReplayPipelined replays every fixture with the numbers observed on a
// second goroutine (what traces of 2¹⁶ entries and more get) and requires
// what the one-goroutine replay gives: the timeline, and every call of
// Observe and ObserveAlloc, in order.
func TestReplayPipelined(t *testing.T) {
	type call struct {
		i     int
		n     Numbers
		alloc bool
	}
	replay := func(s *Snapshot, d int) (*Timeline, []call) {
		var calls []call
		t := Replay(s, d, ReplayOptions{Series: true, Lifetimes: true,
			Observe:      func(i int, n Numbers) { calls = append(calls, call{i: i, n: n}) },
			ObserveAlloc: func(i int, size int64) { calls = append(calls, call{i: i, n: Numbers{Allocated: size}, alloc: true}) },
		})
		return t, calls
	}
	defer func(n int) { pipelineMin = n }(pipelineMin)
	replayed := 0
	for _, path := range differentialFiles(t) {
		s, err := Open(path)
		if err != nil {
			continue // the decoder's tests have the files that do not decode
		}
		for _, d := range s.Devices() {
			pipelineMin = 1 << 62
			want, wantCalls := replay(s, d)
			pipelineMin = 1
			got, gotCalls := replay(s, d)
			if !reflect.DeepEqual(gotCalls, wantCalls) {
				t.Fatalf("%s device %d: the pipelined replay's Observe calls differ", path, d)
			}
			got.cur, want.cur, got.final, want.final, got.replayed, want.replayed = nil, nil, nil, nil, nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s device %d: the pipelined replay's timeline differs", path, d)
			}
			replayed += len(want.Events)
		}
	}
	t.Logf("%d events replayed both ways", replayed)
	if replayed < replayBatchLen*4 {
		t.Fatalf("only %d events replayed: the pipeline's batches went untested", replayed)
	}
}

// TestReplayStarted: ReplayOptions.Started hands out the timeline before
// the events are replayed, with the start state the finished replay gives;
// Wait returns once the rest is there (run with -race: the start state is
// read beside the replay).
func TestReplayStarted(t *testing.T) {
	defer func(n int) { pipelineMin = n }(pipelineMin)
	pipelineMin = 1
	for _, path := range differentialFiles(t) {
		s, err := Open(path)
		if err != nil {
			continue
		}
		for _, d := range s.Devices() {
			want := Replay(s, d, ReplayOptions{})
			type seen struct {
				n      Numbers
				live   []LiveBlock
				ranges []ReservedRange
				peak   Peak
			}
			got := make(chan seen, 1)
			calls := 0
			tl := Replay(s, d, ReplayOptions{Started: func(tl *Timeline) {
				calls++
				go func() {
					var v seen
					v.n, v.live, v.ranges = tl.StartState()
					tl.Wait()
					v.peak = tl.PeakReserved
					got <- v
				}()
			}})
			v := <-got
			wn, wl, wr := want.StartState()
			if calls != 1 || v.n != wn || !reflect.DeepEqual(v.live, wl) || !reflect.DeepEqual(v.ranges, wr) || v.peak != want.PeakReserved || tl.PeakReserved != want.PeakReserved {
				t.Fatalf("%s device %d: Started called %d times; start state %+v (%d blocks, %d ranges), peak after Wait %+v; want once, %+v (%d, %d), %+v",
					path, d, calls, v.n, len(v.live), len(v.ranges), v.peak, wn, len(wl), len(wr), want.PeakReserved)
			}
		}
	}
}
