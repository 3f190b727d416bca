package snapshot

import (
	"cmp"
	"slices"

	"github.com/memscope/memscope/internal/addrmap"
)

// engine applies trace events to the allocator state of one device. Replay
// runs it once over the whole trace; LiveAt runs a fresh one up to an index.
type engine struct {
	t    *Timeline
	lay  layout
	n    Numbers
	live *addrmap.Map // block address → index into slab
	slab []LiveBlock
	free []int32 // reusable slab slots

	estimated, unknownFrees, doubleAllocs, insane int
	// allocSize is the block size of the last alloc applied.
	allocSize int64

	// With ReplayOptions.Lifetimes: the event that ended each block.
	death    []int32
	preDeath map[uint64]int32
}

// newEngine returns an engine in the state before the first event.
func (t *Timeline) newEngine() *engine {
	// An engine is sized for the most blocks the replay will hold, not
	// grown to it by doubling: from the walk back to the start state for
	// the replay's own, from the replay's slab after it (a cursor that
	// goes back rebuilds one).
	hint := max(len(t.Initial), t.liveMost)
	if t.final != nil {
		hint = max(hint, len(t.final.slab))
	}
	e := &engine{t: t, live: addrmap.New(hint), slab: make([]LiveBlock, 0, hint)}
	e.lay = t.init.clone()
	t.init.segs.each(func(s *entry[segVal]) { e.n.Reserved += int64(s.val.end - s.key) })
	for i := range t.Initial {
		b := t.Initial[i]
		e.put(b)
		e.n.Active += b.Size
		if !b.PendingFree {
			e.n.Allocated += b.Size
			e.n.Requested += b.Requested
		}
	}
	return e
}

// sane reports whether an entry could be real: a block or segment entry
// with a negative size, or whose range runs past the end of the address
// space, cannot (random synthetic snapshots have them).
func (ev *Event) sane() bool {
	switch ev.Action {
	case ActionAlloc, ActionFreeRequested, ActionFreeCompleted, ActionSegmentAlloc,
		ActionSegmentFree, ActionSegmentMap, ActionSegmentUnmap:
		return ev.Size >= 0 && ev.Addr+uint64(ev.Size) >= ev.Addr
	case ActionOOM:
		return ev.Size >= 0
	}
	return true
}

func (e *engine) put(b LiveBlock) {
	var j int32
	if n := len(e.free); n > 0 {
		j = e.free[n-1]
		e.free = e.free[:n-1]
		e.slab[j] = b
	} else {
		j = int32(len(e.slab))
		e.slab = append(e.slab, b)
	}
	e.live.Put(b.Addr, j)
}

// prefetch asks for the live map's slot of the entry a few after i, where
// the replay applies the entries in order.
func (e *engine) prefetch(i int) {
	if j := i + addrmap.PrefetchAhead; j < len(e.t.Events) {
		e.live.Prefetch(e.t.Events[j].Addr)
	}
}

func (e *engine) apply(i int, ev *Event) {
	e.allocSize = 0
	if !ev.sane() {
		e.insane++
		return
	}
	switch ev.Action {
	case ActionAlloc:
		if j, dup := e.live.Get(ev.Addr); dup {
			e.doubleAllocs++
			if b := &e.slab[j]; !b.PendingFree {
				e.died(b, i) // the alloc over it ended it
			}
			e.release(ev.Addr, j)
		}
		size, exact := e.lay.blockSize(&e.t.round, ev.Addr, ev.Size)
		if !exact {
			e.estimated++
		}
		e.allocSize = size
		e.put(LiveBlock{Addr: ev.Addr, Size: size, Requested: ev.Size, Stream: ev.Stream,
			Stack: ev.Stack, AllocIndex: i, AllocTimeUS: ev.TimeUS, Estimated: !exact})
		if tracked(size) {
			e.lay.insertBlock(ev.Addr)
		}
		e.n.Requested += ev.Size
		e.n.Allocated += size
		e.n.Active += size
	case ActionFreeRequested:
		j, ok := e.live.Get(ev.Addr)
		if !ok {
			e.unknownFrees++
			return
		}
		b := &e.slab[j]
		if !b.PendingFree {
			b.PendingFree = true
			e.n.Requested -= b.Requested
			e.n.Allocated -= b.Size
			e.died(b, i)
		}
	case ActionFreeCompleted:
		j, ok := e.live.Get(ev.Addr)
		if !ok {
			e.unknownFrees++
			return
		}
		if b := &e.slab[j]; !b.PendingFree {
			e.died(b, i)
		}
		e.release(ev.Addr, j)
	case ActionSegmentAlloc, ActionSegmentMap:
		if e.lay.add(ev.Addr, ev.Addr+uint64(ev.Size), ev.Action == ActionSegmentMap) {
			e.n.Reserved += ev.Size
		}
	case ActionSegmentFree, ActionSegmentUnmap:
		e.n.Reserved -= int64(e.lay.remove(ev.Addr, ev.Addr+uint64(ev.Size)))
	}
}

// died records, when the replay keeps lifetimes, that b stopped being
// allocated at event i.
func (e *engine) died(b *LiveBlock, i int) {
	if e.death == nil {
		return
	}
	if b.AllocIndex >= 0 {
		e.death[b.AllocIndex] = int32(i)
	} else {
		e.preDeath[b.Addr] = int32(i)
	}
}

// release drops the block at addr, in slab slot j, from the live set and
// the totals.
func (e *engine) release(addr uint64, j int32) {
	b := &e.slab[j]
	if !b.PendingFree {
		e.n.Requested -= b.Requested
		e.n.Allocated -= b.Size
	}
	e.n.Active -= b.Size
	e.live.Del(addr)
	if tracked(b.Size) {
		e.lay.removeBlock(addr)
	}
	e.free = append(e.free, j)
}

// byAddr orders live blocks by address (one block per address).
func byAddr(a, b LiveBlock) int { return cmp.Compare(a.Addr, b.Addr) }

func (e *engine) liveBlocks() []LiveBlock {
	// The addresses are sorted with their slab slots, 16 bytes an item,
	// and the blocks, four times that, are copied once, in order.
	type slot struct {
		addr uint64
		j    int32
	}
	// The slab is read, not the address map: an engine is sized for the
	// most blocks the replay held, and one a cursor made for an early
	// moment holds few of them in a table sized for them all. A slot is
	// live unless it is on the free list (a freed slot keeps its last
	// block): marking those costs a pass over the free list, where asking
	// the map for every slot's address cost a cache miss a block.
	dead := make([]bool, len(e.slab))
	for _, j := range e.free {
		dead[j] = true
	}
	order := make([]slot, 0, e.live.Len())
	for j := range e.slab {
		if !dead[j] {
			order = append(order, slot{e.slab[j].Addr, int32(j)})
		}
	}
	slices.SortFunc(order, func(a, b slot) int { return cmp.Compare(a.addr, b.addr) })
	out := make([]LiveBlock, len(order))
	for k, o := range order {
		out[k] = e.slab[o.j]
	}
	return out
}

// initialState rebuilds what was live and reserved before the first event by
// undoing the trace backwards from the end-state segments.
func (t *Timeline) initialState() {
	// The walk back keeps a record of 8 bytes per block, not the block:
	// where it came from (a block of the end state, or the free_completed
	// that the walk back met first) and the free_requested before it. The
	// blocks are made once, for those live at the start.
	type rec struct {
		// src ≥ 0 is the free_completed entry; src < 0 is block -src-1
		// of ends, the blocks active at the end.
		src int32
		// req is the free_requested entry met before src, or noReq
		// (pending free) or allocated (a block of the end state that
		// was not pending).
		req int32
	}
	const noReq, allocated = -1, -2
	blocks := 0
	for _, si := range t.snap.SegmentsOf(t.Device) {
		blocks += len(t.snap.Segments[si].Blocks)
	}
	ends := make([]LiveBlock, 0, blocks)
	recs := make([]rec, 0, blocks)
	var free []int32 // reusable record slots
	live := addrmap.New(blocks)
	add := func(addr uint64, r rec) {
		if j, ok := live.Get(addr); ok {
			recs[j] = r
			return
		}
		if n := len(free); n > 0 {
			j := free[n-1]
			free = free[:n-1]
			recs[j] = r
			live.Put(addr, j)
			return
		}
		live.Put(addr, int32(len(recs)))
		recs = append(recs, r)
	}
	for _, si := range t.snap.SegmentsOf(t.Device) {
		seg := &t.snap.Segments[si]
		if seg.TotalSize < 0 || seg.End() < seg.Address {
			t.initInconsistent++
			continue
		}
		t.init.add(seg.Address, seg.End(), seg.Expandable)
		for bi := range seg.Blocks {
			b := &seg.Blocks[bi]
			if !b.State.Active() {
				continue
			}
			if b.Size < 0 || b.RequestedSize < 0 {
				t.initInconsistent++
				continue
			}
			r := rec{src: int32(-len(ends) - 1), req: allocated}
			if b.State == BlockActivePendingFree {
				r.req = noReq
			}
			ends = append(ends, LiveBlock{Addr: b.Address, Size: b.Size, Requested: b.RequestedSize,
				Stream: seg.Stream, Stack: b.Stack, AllocIndex: -1})
			add(b.Address, r)
		}
	}
	c := &t.Churn
	for i := len(t.Events) - 1; i >= 0; i-- {
		ev := &t.Events[i]
		if i >= addrmap.PrefetchAhead {
			live.Prefetch(t.Events[i-addrmap.PrefetchAhead].Addr)
		}
		switch ev.Action { // counted here, not in a pass of their own
		case ActionSegmentAlloc:
			c.SegmentAllocs++
		case ActionSegmentFree:
			c.SegmentFrees++
		case ActionSegmentMap:
			c.Maps++
		case ActionSegmentUnmap:
			c.Unmaps++
		case ActionOOM:
			c.OOMs++
		}
		if !ev.sane() {
			continue // Replay counts it
		}
		switch ev.Action {
		case ActionAlloc:
			if j, ok := live.Get(ev.Addr); ok {
				live.Del(ev.Addr)
				free = append(free, j)
			} else {
				t.initInconsistent++
			}
		case ActionFreeCompleted:
			if _, ok := live.Get(ev.Addr); ok {
				t.initInconsistent++
			}
			add(ev.Addr, rec{src: int32(i), req: noReq})
		case ActionFreeRequested:
			if j, ok := live.Get(ev.Addr); ok && recs[j].req == noReq {
				recs[j].req = int32(i)
			} else {
				t.initInconsistent++
			}
		case ActionSegmentAlloc, ActionSegmentMap:
			t.init.remove(ev.Addr, ev.Addr+uint64(ev.Size))
		case ActionSegmentFree, ActionSegmentUnmap:
			t.init.add(ev.Addr, ev.Addr+uint64(ev.Size), ev.Action == ActionSegmentUnmap)
		}
	}
	t.liveMost = len(recs) // slots are reused: as many as the most blocks live at once
	t.Initial = make([]LiveBlock, 0, live.Len())
	live.Each(func(_ uint64, j int32) {
		r := recs[j]
		var b LiveBlock
		if r.src < 0 {
			b = ends[-r.src-1]
		} else {
			// FreeStack marks the blocks whose size is still to be found.
			ev := &t.Events[r.src]
			b = LiveBlock{Addr: ev.Addr, Requested: ev.Size, Stream: ev.Stream,
				Stack: ev.Stack, AllocIndex: -1, FreeStack: true}
			if r.req >= 0 && t.Events[r.req].Stack != 0 {
				b.Stack = t.Events[r.req].Stack
			}
		}
		b.PendingFree = r.req == noReq
		t.Initial = append(t.Initial, b)
	})
	slices.SortFunc(t.Initial, byAddr)
	for i := range t.Initial {
		t.init.insertBlock(t.Initial[i].Addr)
	}
	// Blocks freed in the trace but allocated before it: recover their size
	// from the layout at the start, like an allocation at that moment.
	for i := range t.Initial {
		b := &t.Initial[i]
		if !b.FreeStack {
			continue
		}
		t.init.removeBlock(b.Addr)
		size, exact := t.init.blockSize(&t.round, b.Addr, b.Requested)
		t.init.insertBlock(b.Addr)
		b.Size, b.Estimated = size, !exact
	}
	// The layout keeps large-pool blocks only: see tracked.
	for i := range t.Initial {
		if b := &t.Initial[i]; !tracked(b.Size) {
			t.init.removeBlock(b.Addr)
		}
	}
}

// tracked reports whether the layout keeps a block of size bytes among a
// range's active blocks. Only a block handed out from the large pool
// (over 1 MiB) can decide the size of another (layout.blockSize: a
// request that rounds to 1 MiB or less is split to its rounded size), and
// large-pool segments hold no other: so the small pool's blocks, most of
// a trace's, are not kept.
func tracked(size int64) bool { return size > smallSize }
