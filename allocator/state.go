package allocator

import (
	"errors"
	"fmt"
	"slices"

	"github.com/memscope/memscope/snapshot"
)

// SegmentState is one segment as a snapshot lists it: a cudaMalloc, or a
// contiguous mapped range of an expandable segment.
type SegmentState struct {
	Addr       uint64
	Size       int64
	Stream     int64
	Pool       snapshot.PoolID
	Small      bool
	Expandable bool
	Blocks     []BlockState // address order, end to end
}

// BlockState is one block of a SegmentState.
type BlockState struct {
	Addr      uint64
	Size      int64
	Requested int64 // for active blocks
	State     snapshot.BlockState
}

// Segments returns the allocator's segments sorted by address, as torch's
// snapshot() reports them. The result is the caller's.
func (a *Allocator) Segments() []SegmentState {
	var out []SegmentState
	for _, seg := range a.segs {
		var cur *SegmentState
		for b := seg.head; b != nil; b = b.next {
			if b.unmapped {
				cur = nil
				continue
			}
			if cur == nil {
				out = append(out, SegmentState{Addr: b.addr, Stream: seg.stream, Pool: seg.pool.id,
					Small: seg.pool.small, Expandable: seg.expandable})
				cur = &out[len(out)-1]
			}
			st := snapshot.BlockInactive
			var req int64
			switch {
			case b.allocated:
				st, req = snapshot.BlockActiveAllocated, b.requested
			case b.pending:
				st, req = snapshot.BlockActivePendingFree, b.requested
			}
			cur.Blocks = append(cur.Blocks, BlockState{b.addr, b.size, req, st})
			cur.Size += b.size
		}
	}
	slices.SortFunc(out, func(x, y SegmentState) int {
		switch {
		case x.Addr < y.Addr:
			return -1
		case x.Addr > y.Addr:
			return 1
		}
		return 0
	})
	return out
}

// segInfo is what the snapshot tells of a segment beside its range.
type segInfo struct {
	stream int64
	small  bool
	known  bool
	pool   snapshot.PoolID // the end state's; the zero value is the default pool
}

// errStart is a start state the model cannot be loaded with.
var errStart = errors.New("start state")

// load sets the allocator, which must be empty, to the state the timeline
// gives: live blocks inside reserved ranges, the gaps free blocks.
// Segments take creation counters in address order (their true order is
// older than the trace).
//
// An expandable range is the mapped part of an expandable segment whose
// address space was reserved before the trace: the ranges of one stream
// and pool, in address order, are taken as one reservation that begins at
// the first of them, with the space between them unmapped and the rest of
// an expandable segment's address space (vaSize) unmapped after the last
// (trimmed at the next segment), so pages map there as torch would map
// them. Where the trace never maps or unmaps in it, its size is the end
// state's.
func (a *Allocator) load(live []snapshot.LiveBlock, ranges []snapshot.ReservedRange, info map[uint64]segInfo) error {
	if len(a.live) == 0 && len(a.segs) == 0 {
		// Sized once: a resync loads thousands of blocks into a new model.
		a.live = make(map[uint64]*block, len(live))
		a.segs = make(map[uint64]*segment, len(ranges))
	}
	type vaKey struct {
		pool   snapshot.PoolID
		small  bool
		stream int64
	}
	open := map[vaKey]*segment{} // the expandable reservation ranges of a key are carved from
	j := 0
	for _, r := range ranges {
		size := int64(r.End - r.Addr)
		if r.End < r.Addr || size <= 0 {
			return fmt.Errorf("%w: reserved range at %#x is empty or inverted", errStart, r.Addr)
		}
		in, ok := info[r.Addr]
		if !ok {
			in = segInfo{small: size == SmallBuffer && !r.Expandable}
		}
		for ; j < len(live) && live[j].Addr < r.Addr; j++ {
			return fmt.Errorf("%w: block at %#x lies outside every segment", errStart, live[j].Addr)
		}
		k := j
		for k < len(live) && live[k].Addr < r.End {
			k++
		}
		if !in.known && k > j {
			in.stream = live[j].Stream
		}
		p := a.pool(in.pool, in.small)
		var seg *segment
		var last, after *block // the blocks the range's go between
		if r.Expandable {
			key := vaKey{in.pool, in.small, in.stream}
			seg = open[key]
			var tail *block // the unmapped block the range is carved from
			if seg != nil {
				for tail = seg.head; tail.next != nil; tail = tail.next {
				}
				if !tail.unmapped || r.Addr < tail.addr || r.End > tail.addr+uint64(tail.size) {
					seg = nil
				}
			}
			if seg == nil {
				page := a.set.LargeSegmentSize
				if in.small {
					page = SmallBuffer
				}
				a.nextSeg++
				seg = &segment{addr: r.Addr, size: max(a.vaSize(page), size), stream: in.stream, pool: p, counter: a.nextSeg,
					expandable: true, pageSize: page}
				if !a.addSeg(seg) || seg.size < size {
					return fmt.Errorf("%w: expandable range at %#x overlaps another segment", errStart, r.Addr)
				}
				open[key] = seg
				tail = a.newBlock(seg.addr, seg.size, in.stream, p, seg)
				tail.unmapped = true
				seg.head = tail
			} else {
				p.unmapped.remove(tail)
			}
			// [tail.addr, r.Addr) stays unmapped; the range's blocks
			// follow; what is past r.End stays unmapped.
			end := tail.addr + uint64(tail.size)
			last = tail.prev
			if r.Addr > tail.addr {
				tail.size = int64(r.Addr - tail.addr)
				p.unmapped.insert(tail)
				last = tail
			} else if last != nil {
				last.next = nil
			} else {
				seg.head = nil
			}
			if end > r.End {
				after = a.newBlock(r.End, int64(end-r.End), in.stream, p, seg)
				after.unmapped = true
			}
		} else {
			a.nextSeg++
			seg = &segment{addr: r.Addr, size: size, stream: in.stream, pool: p, counter: a.nextSeg}
			if !a.addSeg(seg) {
				return fmt.Errorf("%w: reserved range at %#x overlaps another", errStart, r.Addr)
			}
		}
		a.Reserved += size
		first := last
		add := func(b *block) {
			b.seg = seg
			if last == nil {
				seg.head = b
			} else {
				last.next, b.prev = b, last
			}
			last = b
		}
		cursor := r.Addr
		for ; j < k; j++ {
			lb := &live[j]
			if lb.Addr < cursor || lb.Size <= 0 || lb.Addr+uint64(lb.Size) > r.End || lb.Addr+uint64(lb.Size) < lb.Addr {
				return fmt.Errorf("%w: block at %#x of %d bytes overlaps another or its segment's end", errStart, lb.Addr, lb.Size)
			}
			if lb.Addr > cursor {
				add(a.newBlock(cursor, int64(lb.Addr-cursor), in.stream, p, seg))
			}
			b := a.newBlock(lb.Addr, lb.Size, in.stream, p, seg)
			b.requested = lb.Requested
			b.allocated = !lb.PendingFree
			if lb.PendingFree {
				a.setPending(b)
			}
			add(b)
			a.index(b)
			cursor = lb.Addr + uint64(lb.Size)
		}
		if cursor < r.End {
			add(a.newBlock(cursor, int64(r.End-cursor), in.stream, p, seg))
		}
		if after != nil {
			add(after)
			p.unmapped.insert(after)
		}
		b := seg.head
		if first != nil {
			b = first.next
		}
		for ; b != nil; b = b.next {
			if !b.allocated && !b.pending && !b.unmapped {
				a.insertFree(b)
			}
		}
	}
	if j < len(live) {
		return fmt.Errorf("%w: block at %#x lies outside every segment", errStart, live[j].Addr)
	}
	return nil
}
