package snapshot

import (
	"reflect"
	"slices"
	"testing"
)

// TestWindow: Window gives the blocks live before first and the sizes of
// the allocs in [first, last] that LiveAt and AllocSizes give, at the
// start, the middle and the end of a trace, its cursor behind or past the
// window.
func TestWindow(t *testing.T) {
	s, err := Open("../fixtures/llama-bf16/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	for _, past := range []bool{false, true} {
		tl := Replay(s, 0, ReplayOptions{})
		all := tl.AllocSizes()
		if past {
			tl.StateAt(len(tl.Events) - 1) // the cursor past every window
		}
		n := len(tl.Events)
		for _, w := range [][2]int{{0, 10}, {n / 3, n / 2}, {n / 2, n / 3}, {n - 5, n + 3}, {n / 4, n / 4}} {
			live, sizes := tl.Window(w[0], w[1])
			first, last := max(w[0], 0), min(w[1], n-1)
			if !reflect.DeepEqual(live, tl.LiveAt(first-1)) {
				t.Errorf("cursor past %v, window %v: live blocks differ from LiveAt(%d)", past, w, first-1)
			}
			want := []int64{}
			if last >= first {
				want = all[first : last+1]
			}
			if !slices.Equal(sizes, want) {
				t.Errorf("cursor past %v, window %v: sizes differ from AllocSizes", past, w)
			}
		}
	}
}

// TestStartState: StartState is At(-1) on every fixture (late recordings,
// whose Initial holds blocks and segments, included), and leaves the
// cursor where it was.
func TestStartState(t *testing.T) {
	withState := 0
	for _, dir := range fixtures(t) {
		s, err := Open(dir + "/snapshot.pickle")
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range s.Devices() {
			tl := Replay(s, d, ReplayOptions{})
			mid := len(tl.Events) / 2
			tl.StateAt(mid)
			n, live, ranges := tl.StartState()
			if len(live) > 0 && len(ranges) > 0 {
				withState++
			}
			if c := tl.cur; c != nil && c.at != min(mid, len(tl.Events)-1) {
				t.Errorf("%s device %d: StartState moved the cursor to %d", dir, d, c.at)
			}
			wn, wlive, wranges := tl.At(-1)
			if n != wn || !reflect.DeepEqual(live, wlive) && (len(live) > 0 || len(wlive) > 0) || !reflect.DeepEqual(ranges, wranges) && (len(ranges) > 0 || len(wranges) > 0) {
				t.Errorf("%s device %d: StartState = %+v, %d blocks, %d ranges; At(-1) = %+v, %d, %d", dir, d, n, len(live), len(ranges), wn, len(wlive), len(wranges))
			}
		}
	}
	if withState == 0 {
		t.Error("no fixture began recording with blocks live: the comparison saw only empty states")
	}
}
