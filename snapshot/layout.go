package snapshot

import (
	"math"
	"math/bits"
)

// This file recovers exact block sizes from the allocator's layout
// (FORMATS.md §2.3). Trace entries carry requested bytes; allocated bytes
// count whole blocks, which can be up to 1 MiB larger than the rounded
// request when the caching allocator hands out a free block without
// splitting it (up to 20 MiB for a block past max_split_size).

const (
	minBlockSize = 512      // kMinBlockSize: every block is a multiple of this
	smallSize    = 1 << 20  // kSmallSize: requests up to this go to the small pool
	largeBuffer  = 20 << 20 // kLargeBuffer: an oversize block is at most this much past its request
)

// rounding holds the allocator settings that decide block sizes.
type rounding struct {
	maxSplit  int64     // blocks at or above this are never split; max int64 when unlimited
	divisions [16]int64 // roundup_power2_divisions per power-of-two MiB interval
	npu       bool      // torch_npu's round_size: round512(size + 32)
}

func newRounding(settings map[string]any) rounding {
	r := rounding{maxSplit: 1<<63 - 1}
	if v, ok := settings["max_split_size"].(int64); ok && v > 0 {
		r.maxSplit = v
	}
	if m, ok := settings["roundup_power2_divisions"].(map[string]any); ok {
		for k, v := range m {
			n, isInt := v.(int64)
			mb, ok := parseUint(k)
			if !isInt || !ok || mb == 0 || mb&(mb-1) != 0 {
				continue
			}
			if i := bits.TrailingZeros64(mb); i < len(r.divisions) {
				r.divisions[i] = n
			}
		}
	}
	return r
}

func parseUint(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	var n uint64
	for _, c := range s {
		if c < '0' || c > '9' || n > 1<<40 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// round mirrors the caching allocator's round_size.
func (r *rounding) round(size int64) int64 {
	if r.npu {
		return npuRound(size)
	}
	return r.cudaRound(size)
}

func (r *rounding) cudaRound(size int64) int64 { return RoundSize(size, &r.divisions) }

// RoundSize is the CUDA caching allocator's round_size: the block a request
// of size bytes takes, under roundup_power2_divisions per power-of-two
// interval (divisions, as DivisionsFor reads them; zeros: none).
func RoundSize(size int64, divisions *[16]int64) int64 {
	if size < minBlockSize {
		return minBlockSize
	}
	if d := DivisionsFor(size, divisions); d > 1 && size > minBlockSize*d {
		return RoundupPower2NextDivision(size, d)
	}
	if size > math.MaxInt64-minBlockSize {
		return size // beyond any device; callers refuse it
	}
	return (size + minBlockSize - 1) / minBlockSize * minBlockSize
}

// npuRound is torch_npu's round_size (NPUCachingAllocator.cpp): 32 bytes
// of padding, then up to a multiple of 512.
func npuRound(size int64) int64 {
	return (size + 32 + minBlockSize - 1) / minBlockSize * minBlockSize
}

// detectNPU reports whether device's end-state blocks are rounded the way
// torch_npu rounds them. Only small-pool blocks count: they are always
// split to the rounded request, so their size is round_size(requested)
// exactly. It takes one block that only the NPU rule explains and none
// that only CUDA's does.
func (r *rounding) detectNPU(s *Snapshot, device int) bool {
	var npu, cuda int
	for _, si := range s.SegmentsOf(device) {
		seg := &s.Segments[si]
		if !seg.Small {
			continue
		}
		for bi := range seg.Blocks {
			b := &seg.Blocks[bi]
			if !b.State.Active() || b.RequestedSize <= 0 || b.Size <= 0 {
				continue
			}
			n, c := npuRound(b.RequestedSize), r.cudaRound(b.RequestedSize)
			switch {
			case n == c:
			case b.Size == n:
				npu++
			case b.Size == c:
				cuda++
			}
		}
	}
	r.npu = npu > 0 && cuda == 0
	return r.npu
}

// DivisionsFor is roundup_power2_divisions(size): the divisions of the
// power-of-two interval size falls in, [1, 2) MiB (and below) first,
// [32, 64) GiB (and above) last.
func DivisionsFor(size int64, divisions *[16]int64) int64 {
	if size <= 0 {
		return divisions[0]
	}
	logSize := 63 - bits.LeadingZeros64(uint64(size))
	return divisions[min(max(logSize-20, 0), len(divisions)-1)]
}

// RoundupPower2NextDivision is roundup_power2_next_division: size rounded
// up to the next of divisions equal steps between the powers of two around
// it (1200 with 4 divisions: 1280); a power of two stays.
func RoundupPower2NextDivision(size, divisions int64) int64 {
	u := uint64(size)
	if size <= 0 || u&(u-1) == 0 {
		return size
	}
	floor := uint64(1) << (63 - bits.LeadingZeros64(u))
	step := floor >> (63 - bits.LeadingZeros64(uint64(max(divisions, 1))))
	if step == 0 {
		return int64(floor << 1)
	}
	low := u &^ (step - 1)
	if low == u {
		return size
	}
	return int64(low + step)
}

// segVal is what the layout keeps of a reserved range (a cudaMalloc'd
// segment, or a mapped range of an expandable segment) beside its address.
type segVal struct {
	end        uint64
	expandable bool
	active     blockSet // start addresses of active blocks inside
}

// segRange is a range found by layout.find: valid until the ranges change.
type segRange = *entry[segVal]

type blockSet = sortedList[struct{}]

// layout tracks the reserved ranges and where active blocks sit in them.
// The ranges, and the active blocks of each, are ordered lists
// (sortedList): a replay over 10⁵ segments, or 10⁵ blocks in one segment,
// costs near-linear time, and a segment of a few blocks costs what a
// sorted slice does.
type layout struct {
	segs sortedList[segVal] // by addr, non-overlapping; empty ranges allowed
	// hints remember the range find returned for an address's 2 MiB page
	// (the granule segments come in), so that a lookup is one compare
	// while the ranges stay as they are; gen changes whenever they do.
	hints [findHints]findHint
	gen   uint32
}

const (
	findHints    = 256
	findHintPage = 21
)

type findHint struct {
	page uint64
	gen  uint32
	seg  segRange
}

func (l *layout) clone() layout {
	c := layout{segs: l.segs.clone()}
	c.segs.each(func(e *entry[segVal]) { e.val.active = e.val.active.clone() })
	return c
}

// changed forgets every hint: the ranges changed.
func (l *layout) changed() {
	if l.gen++; l.gen == 0 { // wrapped: hints of gen 0 could be old
		clear(l.hints[:])
	}
}

// find returns the non-empty range holding addr, or nil.
func (l *layout) find(addr uint64) segRange {
	page := addr >> findHintPage
	h := &l.hints[page%findHints]
	if s := h.seg; s != nil && h.page == page && h.gen == l.gen && s.key <= addr && addr < s.val.end {
		return s
	}
	p, ok := l.segs.prev(l.segs.upperBound(addr))
	if !ok {
		return nil
	}
	e := l.segs.at(p)
	if addr >= e.val.end {
		return nil
	}
	*h = findHint{page, l.gen, e}
	return e
}

// add inserts the range [addr, end) unless it overlaps an existing range
// (which means the input is inconsistent); it reports whether it did. An
// empty range goes before any range at the same address.
func (l *layout) add(addr, end uint64, expandable bool) bool {
	p := l.segs.lowerBound(addr)
	if q, ok := l.segs.prev(p); ok && l.segs.at(q).val.end > addr {
		return false
	}
	if l.segs.valid(p) && l.segs.at(p).key < end {
		return false
	}
	l.changed()
	l.segs.insertAt(p, addr, segVal{end: end, expandable: expandable})
	return true
}

// remove deletes [addr, end) from the reserved ranges, splitting mapped
// ranges as needed (segment_unmap may cover part of a range or several),
// with the active blocks in what it removes. It returns the bytes actually
// removed.
func (l *layout) remove(addr, end uint64) uint64 {
	var removed uint64
	p := l.segs.lowerBound(addr)
	if q, ok := l.segs.prev(p); ok && l.segs.at(q).val.end > addr {
		p = q // the one range that starts below addr and reaches past it
	}
	for l.segs.valid(p) {
		e := *l.segs.at(p)
		if e.key >= end {
			break
		}
		if e.val.end <= addr {
			p = l.segs.next(p)
			continue
		}
		lo, hi := max(e.key, addr), min(e.val.end, end)
		removed += hi - lo
		l.changed()
		left, right := splitBlocks(e.val.active, lo, hi, e.key < lo, hi < e.val.end)
		p = l.segs.deleteAt(p)
		if e.key < lo {
			p = l.segs.next(l.segs.insertAt(p, e.key, segVal{lo, e.val.expandable, left}))
		}
		if hi < e.val.end {
			p = l.segs.next(l.segs.insertAt(p, hi, segVal{e.val.end, e.val.expandable, right}))
		}
	}
	return removed
}

// splitBlocks drops the blocks of b in [lo, hi) and returns those below
// lo and those from hi on, as two sets when both sides are wanted: the
// smaller side is copied out, so splitting a range again and again costs
// O(n log n) in all.
func splitBlocks(b blockSet, lo, hi uint64, wantLeft, wantRight bool) (left, right blockSet) {
	b.cut(lo, hi, nil)
	if !wantLeft || !wantRight {
		return b, b // the side not wanted holds no block
	}
	var moved blockSet
	move := func(e *entry[struct{}]) { moved.push(e.key, e.val) }
	if below := b.rank(lo); below <= b.len()-below {
		b.cut(0, lo, move)
		return moved, b
	}
	b.cut(hi, math.MaxUint64, move) // every key is below the range's end
	return b, moved
}

func (l *layout) insertBlock(addr uint64) {
	s := l.find(addr)
	if s == nil {
		return
	}
	a := &s.val.active
	p := a.lowerBound(addr)
	if !a.valid(p) || a.at(p).key != addr {
		a.insertAt(p, addr, struct{}{})
	}
}

func (l *layout) removeBlock(addr uint64) {
	s := l.find(addr)
	if s == nil {
		return
	}
	a := &s.val.active
	if p := a.lowerBound(addr); a.valid(p) && a.at(p).key == addr {
		a.deleteAt(p)
	}
}

// blockSize returns the size of the block handed out at addr for a request
// of req bytes, given the active blocks now in place (the new block not yet
// among them). exact is false when the containing segment is unknown, or
// its free run at addr is one torch would not hand out, and the rounded
// request had to stand in.
func (l *layout) blockSize(r *rounding, addr uint64, req int64) (size int64, exact bool) {
	rounded := r.round(req)
	if rounded <= smallSize {
		return rounded, true // small pool: always split to the rounded size
	}
	s := l.find(addr)
	if s == nil {
		return rounded, false
	}
	if s.val.expandable {
		return rounded, true // expandable segments split any remainder ≥ 512 B
	}
	next := s.val.end
	if a := &s.val.active; a.len() > 0 {
		if p := a.upperBound(addr); a.valid(p) {
			next = a.at(p).key
		}
	}
	run := int64(next - addr)
	if run < rounded {
		return rounded, false
	}
	if rounded < r.maxSplit && run-rounded > smallSize {
		return rounded, true
	}
	if rounded >= r.maxSplit && run-rounded >= largeBuffer {
		// torch hands out an oversize block only when it is less than
		// kLargeBuffer past the request: the block is not this run.
		return rounded, false
	}
	return run, true
}

// ranges returns the reserved ranges in address order.
func (l *layout) ranges() []ReservedRange {
	out := make([]ReservedRange, 0, l.segs.len())
	l.segs.each(func(e *entry[segVal]) {
		out = append(out, ReservedRange{e.key, e.val.end, e.val.expandable})
	})
	return out
}
