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
