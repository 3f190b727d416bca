package allocator

import "github.com/memscope/memscope/snapshot"

// This file is a late recording's start state under a what-if's own
// settings. The state rebuilt at the first entry (snapshot.Timeline's
// StartState) is the recorded allocator's: its segments were cut by the
// recorded settings, by a history the trace does not hold. Under other
// settings the same program would have reached that moment with other
// segments, so the what-if does not load them as they are: it re-makes
// them under its settings. Each segment of the start state, oldest first
// (the rebuilt state gives address order, which is creation order for
// segments the driver placed downwards: the highest first), is asked for
// as one request of its size and freed, as the program's earlier work
// reached that reservation and let it go; then each block live at the
// start is asked for, in address order, into what that left. The live
// blocks' bytes are known; the rest of the start state's reservation,
// Outcome.StartUnknown, is cached memory whose history is not: under
// these settings the program might have kept more or less of it.

// sameDecisions reports whether a and b make the same decisions (the
// fields a what-if fills from its options aside).
func sameDecisions(a, b Settings) bool {
	a.MemoryFraction, a.MemoryLimit, a.DeviceTotal = 0, 0, 0
	b.MemoryFraction, b.MemoryLimit, b.DeviceTotal = 0, 0, 0
	return a == b
}

// placeStart re-makes the start state (live blocks inside reserved
// ranges) in w's allocator, which must be empty, under its settings, and
// ties each live block to its slot; without cached, the segments are not
// asked for first (none of the cached memory kept: the low bound). It
// reports false when a request of it cannot be served (the capacity is
// below the start state).
func (w *whatIf) placeStart(live []snapshot.LiveBlock, ranges []snapshot.ReservedRange, info map[uint64]segInfo, cached bool) bool {
	a := w.a
	a.live = map[uint64]*block{}
	// Each range's first live block and each live block's pool, by one
	// walk of both in address order (as load does).
	first := make([]int, len(ranges))
	pools := make([]snapshot.PoolID, len(live))
	var unknown int64
	j := 0
	for i, r := range ranges {
		for j < len(live) && live[j].Addr < r.Addr {
			j++
		}
		first[i] = j
		for ; j < len(live) && live[j].Addr < r.End; j++ {
			pools[j] = info[r.Addr].pool
		}
		unknown += int64(r.End - r.Addr)
	}
	var held []*block
	for i := len(ranges) - 1; i >= 0 && cached; i-- { // the highest address first: the oldest segment
		r := ranges[i]
		size := int64(r.End - r.Addr)
		in := info[r.Addr]
		stream := in.stream
		if k := first[i]; !in.known && k < len(live) && live[k].Addr < r.End {
			stream = live[k].Stream
		}
		// A small-pool segment is two requests of the small pool's
		// largest size; a large one a request of its size.
		part, n := size, int64(1)
		if in.small || !r.Expandable && size == SmallBuffer && !in.known {
			part, n = SmallSize, size/SmallSize
		}
		for ; n > 0; n-- {
			b := a.malloc(part, stream, in.pool)
			if b == nil {
				return false
			}
			held = append(held, b)
		}
	}
	for _, b := range held {
		a.free(b, false)
	}
	a.Drain()
	for i := range live {
		lb := &live[i]
		req := lb.Requested
		if req <= 0 {
			req = lb.Size
		}
		b := a.malloc(req, lb.Stream, pools[i])
		if b == nil {
			return false
		}
		unknown -= lb.Size
		if lb.PendingFree {
			a.free(b, true)
		}
		if k, ok := w.slots.pre[lb.Addr]; ok {
			w.setBlock(k, b)
		}
	}
	a.Drain()
	w.out.StartUnknown = max(unknown, 0)
	w.out.StartPlaced = true
	return true
}
