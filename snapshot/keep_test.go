package snapshot

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestKeepStates: after KeepStates, At at any event, asked in any order,
// gives what a replay from the first event gives: the numbers, every live
// block and the reserved ranges (fixtures with segments freed and
// remapped, an OOM, a late start and expandable segments).
func TestKeepStates(t *testing.T) {
	for _, name := range []string{"llama-bf16", "plain-trainer-late", "oom", "expandable", "plain-oom"} {
		t.Run(name, func(t *testing.T) {
			s, err := Open("../fixtures/" + name + "/snapshot.pickle")
			if err != nil {
				t.Skip(err)
			}
			for _, d := range s.Devices() {
				want := Replay(s, d, ReplayOptions{})
				got := Replay(s, d, ReplayOptions{})
				n := len(got.Events)
				var observed []Numbers
				got.KeepStates(16, func(i int, n Numbers) {
					if i != len(observed)-1 {
						t.Fatalf("observe(%d) after %d calls", i, len(observed))
					}
					observed = append(observed, n)
				})
				if len(observed) != n+1 || observed[0] != want.Start || observed[n] != want.End {
					t.Fatalf("device %d: observe saw %d states, want %d from the start state to the end state", d, len(observed), n+1)
				}
				kept := got.cur.kept.Load()
				if n >= 32 && (kept == nil || len(*kept) != 16) {
					t.Fatalf("device %d: %d events, KeepStates(16) kept no 16 states", d, n)
				}
				// Each kept state's event, the ones around it, and random
				// ones, in random order.
				var at []int
				if kept != nil {
					for _, k := range *kept {
						at = append(at, k.at-1, k.at, k.at+1)
					}
				}
				rng := rand.New(rand.NewPCG(7, uint64(d)))
				for range 40 {
					at = append(at, rng.IntN(n+1)-1)
				}
				rng.Shuffle(len(at), func(i, j int) { at[i], at[j] = at[j], at[i] })
				for _, i := range at {
					i = min(max(i, -1), n-2) // n-1 and past are the final state's
					gn, glive, granges := got.At(i)
					// A fresh cursor each time: a replay from the first event.
					want.cur = &cursor{}
					wn, wlive, wranges := want.At(i)
					if gn != wn || !reflect.DeepEqual(glive, wlive) || !reflect.DeepEqual(granges, wranges) {
						t.Fatalf("device %d: At(%d) from a kept state = %+v, %d blocks, %d ranges; from the first event %+v, %d blocks, %d ranges",
							d, i, gn, len(glive), len(granges), wn, len(wlive), len(wranges))
					}
					if observed[i+1] != wn {
						t.Fatalf("device %d: observe(%d) saw %+v, want %+v", d, i, observed[i+1], wn)
					}
					if got.StateAt(i) != wn {
						t.Fatalf("device %d: StateAt(%d) = %+v, want %+v", d, i, got.StateAt(i), wn)
					}
				}
			}
		})
	}
}
