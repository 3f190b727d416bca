package snapshot

import (
	"slices"
	"sort"
)

// engine applies trace events to the allocator state of one device. Replay
// runs it once over the whole trace; LiveAt runs a fresh one up to an index.
type engine struct {
	t    *Timeline
	lay  layout
	n    Numbers
	live map[uint64]int32 // block address → index into slab
	slab []LiveBlock
	free []int32 // reusable slab slots

	estimated, unknownFrees, doubleAllocs int
}

// newEngine returns an engine in the state before the first event.
func (t *Timeline) newEngine() *engine {
	e := &engine{t: t, live: make(map[uint64]int32, len(t.Initial))}
	for _, s := range t.init.segs {
		c := *s
		c.active = slices.Clone(s.active)
		e.lay.segs = append(e.lay.segs, &c)
		e.n.Reserved += int64(s.end - s.addr)
	}
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
	e.live[b.Addr] = j
}

func (e *engine) apply(i int, ev *Event) {
	switch ev.Action {
	case ActionAlloc:
		if _, dup := e.live[ev.Addr]; dup {
			e.doubleAllocs++
			e.release(ev.Addr)
		}
		size, exact := e.lay.blockSize(&e.t.round, ev.Addr, ev.Size)
		if !exact {
			e.estimated++
		}
		e.put(LiveBlock{Addr: ev.Addr, Size: size, Requested: ev.Size, Stream: ev.Stream,
			Stack: ev.Stack, AllocIndex: i, AllocTimeUS: ev.TimeUS, Estimated: !exact})
		e.lay.insertBlock(ev.Addr)
		e.n.Requested += ev.Size
		e.n.Allocated += size
		e.n.Active += size
	case ActionFreeRequested:
		j, ok := e.live[ev.Addr]
		if !ok {
			e.unknownFrees++
			return
		}
		b := &e.slab[j]
		if !b.PendingFree {
			b.PendingFree = true
			e.n.Requested -= b.Requested
			e.n.Allocated -= b.Size
		}
	case ActionFreeCompleted:
		if _, ok := e.live[ev.Addr]; !ok {
			e.unknownFrees++
			return
		}
		e.release(ev.Addr)
	case ActionSegmentAlloc, ActionSegmentMap:
		if e.lay.add(ev.Addr, ev.Addr+uint64(ev.Size), ev.Action == ActionSegmentMap) {
			e.n.Reserved += ev.Size
		}
	case ActionSegmentFree, ActionSegmentUnmap:
		e.n.Reserved -= int64(e.lay.remove(ev.Addr, ev.Addr+uint64(ev.Size)))
	}
}

// release drops the block at addr from the live set and the totals.
func (e *engine) release(addr uint64) {
	j := e.live[addr]
	b := &e.slab[j]
	if !b.PendingFree {
		e.n.Requested -= b.Requested
		e.n.Allocated -= b.Size
	}
	e.n.Active -= b.Size
	delete(e.live, addr)
	e.lay.removeBlock(addr)
	e.free = append(e.free, j)
}

func (e *engine) liveBlocks() []LiveBlock {
	out := make([]LiveBlock, 0, len(e.live))
	for _, j := range e.live {
		out = append(out, e.slab[j])
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Addr < out[b].Addr })
	return out
}

// initialState rebuilds what was live and reserved before the first event by
// undoing the trace backwards from the end-state segments.
func (t *Timeline) initialState() {
	live := map[uint64]*LiveBlock{}
	for si := range t.snap.Segments {
		seg := &t.snap.Segments[si]
		if seg.Device != t.Device {
			continue
		}
		t.init.add(seg.Address, seg.End(), seg.Expandable)
		for bi := range seg.Blocks {
			b := &seg.Blocks[bi]
			if !b.State.Active() {
				continue
			}
			live[b.Address] = &LiveBlock{Addr: b.Address, Size: b.Size, Requested: b.RequestedSize,
				Stream: seg.Stream, Stack: b.Stack, AllocIndex: -1,
				PendingFree: b.State == BlockActivePendingFree}
		}
	}
	unsized := map[uint64]bool{}
	for i := len(t.Events) - 1; i >= 0; i-- {
		ev := &t.Events[i]
		switch ev.Action {
		case ActionAlloc:
			if _, ok := live[ev.Addr]; ok {
				delete(live, ev.Addr)
				delete(unsized, ev.Addr)
			} else {
				t.initInconsistent++
			}
		case ActionFreeCompleted:
			if _, ok := live[ev.Addr]; ok {
				t.initInconsistent++
			}
			live[ev.Addr] = &LiveBlock{Addr: ev.Addr, Requested: ev.Size, Stream: ev.Stream,
				Stack: ev.Stack, AllocIndex: -1, PendingFree: true, FreeStack: true}
			unsized[ev.Addr] = true
		case ActionFreeRequested:
			if b, ok := live[ev.Addr]; ok && b.PendingFree {
				b.PendingFree = false
				if b.FreeStack && ev.Stack != 0 {
					b.Stack = ev.Stack
				}
			} else {
				t.initInconsistent++
			}
		case ActionSegmentAlloc, ActionSegmentMap:
			t.init.remove(ev.Addr, ev.Addr+uint64(ev.Size))
		case ActionSegmentFree, ActionSegmentUnmap:
			t.init.add(ev.Addr, ev.Addr+uint64(ev.Size), ev.Action == ActionSegmentUnmap)
		}
	}
	for _, b := range live {
		t.init.insertBlock(b.Addr)
	}
	// Blocks freed in the trace but allocated before it: recover their size
	// from the layout at the start, like an allocation at that moment.
	for addr := range unsized {
		b := live[addr]
		t.init.removeBlock(addr)
		size, exact := t.init.blockSize(&t.round, addr, b.Requested)
		t.init.insertBlock(addr)
		b.Size, b.Estimated = size, !exact
	}
	t.Initial = make([]LiveBlock, 0, len(live))
	for _, b := range live {
		t.Initial = append(t.Initial, *b)
	}
	sort.Slice(t.Initial, func(a, b int) bool { return t.Initial[a].Addr < t.Initial[b].Addr })
}
