package serve

import (
	"sort"

	"github.com/memscope/memscope/snapshot"
)

// reservedSteps is a device's reserved bytes over its events, kept where
// they change (segment events only, a small share of a trace): before the
// first event start; after event at[k], and until the next change,
// bytes[k].
type reservedSteps struct {
	start int64
	at    []int32
	bytes []int64
}

// observe records the state after event i (-1: before the first), as
// snapshot.Timeline.KeepStates reports it, in order.
func (r *reservedSteps) observe(i int, n snapshot.Numbers) {
	if i < 0 {
		r.start = n.Reserved
		return
	}
	last := r.start
	if k := len(r.bytes); k > 0 {
		last = r.bytes[k-1]
	}
	if n.Reserved != last {
		r.at = append(r.at, int32(i))
		r.bytes = append(r.bytes, n.Reserved)
	}
}

// after returns reserved bytes after event i (-1: before the first).
func (r *reservedSteps) after(i int) int64 {
	k := sort.Search(len(r.at), func(k int) bool { return int(r.at[k]) > i }) - 1
	if k < 0 {
		return r.start
	}
	return r.bytes[k]
}

// columns fills the timeline's reserved series: at each column's sample,
// the most after any event of the column (bound[c] to bound[c+1]), and how
// many of its events reserved more and released memory.
func (r *reservedSteps) columns(tl *Timeline, bound []int) {
	cols := tl.Columns
	tl.Reserved, tl.ReservedMax = make([]int64, cols), make([]int64, cols)
	tl.ReservedUp, tl.ReservedDown = make([]int, cols), make([]int, cols)
	for c := 0; c < cols; c++ {
		a, b := bound[c], bound[c+1]
		tl.Reserved[c] = r.after(tl.Sample[c])
		if a >= b { // no event: the state before it carries on
			tl.ReservedMax[c] = tl.Reserved[c]
			continue
		}
		hi, prev := r.after(a), r.after(a-1)
		for k := sort.Search(len(r.at), func(k int) bool { return int(r.at[k]) >= a }); k < len(r.at) && int(r.at[k]) < b; k++ {
			hi = max(hi, r.bytes[k])
			if r.bytes[k] > prev {
				tl.ReservedUp[c]++
			} else {
				tl.ReservedDown[c]++
			}
			prev = r.bytes[k]
		}
		tl.ReservedMax[c] = hi
	}
}
