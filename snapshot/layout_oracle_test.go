package snapshot

import (
	"slices"
	"sort"
)

// The layout as it was before it kept ordered lists (commit b1b6f43):
// slices rebuilt or shifted per event. It is the oracle of
// TestLayoutMatchesSlices.
// oldSegRange is one reserved range during replay: a cudaMalloc'd segment, or a
// mapped range of an expandable segment.
type oldSegRange struct {
	addr, end  uint64
	expandable bool
	active     []uint64 // start addresses of active blocks inside, sorted
}

// layout tracks the reserved ranges and where active blocks sit in them.
type oldLayout struct {
	segs []*oldSegRange // sorted by addr, non-overlapping
	last int            // index of the range find returned last: a hint
}

// find returns the index of the range holding addr, or -1. Consecutive
// lookups often land in one segment, so the last hit is tried first.
func (l *oldLayout) find(addr uint64) int {
	if l.last < len(l.segs) {
		if s := l.segs[l.last]; s.addr <= addr && addr < s.end {
			return l.last
		}
	}
	lo, hi := 0, len(l.segs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.segs[m].end <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(l.segs) && l.segs[lo].addr <= addr {
		l.last = lo
		return lo
	}
	return -1
}

// add inserts the range [addr, end). Overlaps with existing ranges are
// trimmed away (they mean the input is inconsistent); it reports whether the
// range was inserted whole.
func (l *oldLayout) add(addr, end uint64, expandable bool) bool {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].addr >= addr })
	if (i > 0 && l.segs[i-1].end > addr) || (i < len(l.segs) && l.segs[i].addr < end) {
		return false
	}
	l.segs = slices.Insert(l.segs, i, &oldSegRange{addr: addr, end: end, expandable: expandable})
	return true
}

// remove deletes [addr, end) from the reserved ranges, splitting mapped
// ranges as needed (segment_unmap may cover part of a range or several).
// It returns the bytes actually removed.
func (l *oldLayout) remove(addr, end uint64) uint64 {
	var removed uint64
	var out []*oldSegRange
	for _, s := range l.segs {
		if s.end <= addr || s.addr >= end {
			out = append(out, s)
			continue
		}
		lo, hi := max(s.addr, addr), min(s.end, end)
		removed += hi - lo
		if s.addr < lo {
			out = append(out, &oldSegRange{addr: s.addr, end: lo, expandable: s.expandable, active: oldBlocksIn(s.active, s.addr, lo)})
		}
		if hi < s.end {
			out = append(out, &oldSegRange{addr: hi, end: s.end, expandable: s.expandable, active: oldBlocksIn(s.active, hi, s.end)})
		}
	}
	l.segs = out
	return removed
}

func oldBlocksIn(active []uint64, lo, hi uint64) []uint64 {
	var out []uint64
	for _, a := range active {
		if a >= lo && a < hi {
			out = append(out, a)
		}
	}
	return out
}

func (l *oldLayout) insertBlock(addr uint64) {
	if i := l.find(addr); i >= 0 {
		s := l.segs[i]
		j, found := slices.BinarySearch(s.active, addr)
		if !found {
			s.active = slices.Insert(s.active, j, addr)
		}
	}
}

func (l *oldLayout) removeBlock(addr uint64) {
	if i := l.find(addr); i >= 0 {
		s := l.segs[i]
		if j, found := slices.BinarySearch(s.active, addr); found {
			s.active = slices.Delete(s.active, j, j+1)
		}
	}
}

// blockSize returns the size of the block handed out at addr for a request
// of req bytes, given the active blocks now in place (the new block not yet
// among them). exact is false when the containing segment is unknown and
// the rounded request had to stand in.
func (l *oldLayout) blockSize(r *rounding, addr uint64, req int64) (size int64, exact bool) {
	rounded := r.round(req)
	if rounded <= smallSize {
		return rounded, true // small pool: always split to the rounded size
	}
	i := l.find(addr)
	if i < 0 {
		return rounded, false
	}
	s := l.segs[i]
	if s.expandable {
		return rounded, true // expandable segments split any remainder ≥ 512 B
	}
	next := s.end
	if j, _ := slices.BinarySearch(s.active, addr+1); j < len(s.active) {
		next = s.active[j]
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

// reserved returns the bytes of all ranges.
func (l *oldLayout) reserved() int64 {
	var n int64
	for _, s := range l.segs {
		n += int64(s.end - s.addr)
	}
	return n
}

func (l *oldLayout) rangesOld() []ReservedRange {
	out := make([]ReservedRange, 0, len(l.segs))
	for _, s := range l.segs {
		out = append(out, ReservedRange{s.addr, s.end, s.expandable})
	}
	return out
}
