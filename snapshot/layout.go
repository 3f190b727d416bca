package snapshot

import (
	"math/bits"
	"slices"
	"sort"
)

// This file recovers exact block sizes from the allocator's layout
// (FORMATS.md §2.3). Trace entries carry requested bytes; allocated bytes
// count whole blocks, which can be up to 1 MiB larger than the rounded
// request when the caching allocator hands out a free block without
// splitting it.

const (
	minBlockSize = 512     // kMinBlockSize: every block is a multiple of this
	smallSize    = 1 << 20 // kSmallSize: requests up to this go to the small pool
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

func (r *rounding) cudaRound(size int64) int64 {
	if size < minBlockSize {
		return minBlockSize
	}
	if d := r.divisionsFor(size); d > 1 && size > minBlockSize*d {
		return roundPow2Division(size, d)
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
	for si := range s.Segments {
		seg := &s.Segments[si]
		if seg.Device != device || !seg.Small {
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

func (r *rounding) divisionsFor(size int64) int64 {
	const start = 20 // log2(1 MiB)
	const end = 36   // log2(64 GiB)
	logSize := 63 - bits.LeadingZeros64(uint64(size))
	i := 0
	if logSize > start {
		i = logSize - start
	}
	i = min(i, end-start)
	if i >= len(r.divisions) {
		return 0
	}
	return r.divisions[i]
}

func roundPow2Division(size, divisions int64) int64 {
	u := uint64(size)
	if u&(u-1) == 0 {
		return size
	}
	floor := uint64(1) << (63 - bits.LeadingZeros64(u))
	step := floor >> (63 - bits.LeadingZeros64(uint64(divisions)))
	if step == 0 {
		return int64(floor << 1)
	}
	low := u &^ (step - 1)
	if low == u {
		return size
	}
	return int64(low + step)
}

// segRange is one reserved range during replay: a cudaMalloc'd segment, or a
// mapped range of an expandable segment.
type segRange struct {
	addr, end  uint64
	expandable bool
	active     []uint64 // start addresses of active blocks inside, sorted
}

// layout tracks the reserved ranges and where active blocks sit in them.
type layout struct {
	segs []*segRange // sorted by addr, non-overlapping
	last int         // index of the range find returned last: a hint
}

// find returns the index of the range holding addr, or -1. Consecutive
// lookups often land in one segment, so the last hit is tried first.
func (l *layout) find(addr uint64) int {
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
func (l *layout) add(addr, end uint64, expandable bool) bool {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].addr >= addr })
	if (i > 0 && l.segs[i-1].end > addr) || (i < len(l.segs) && l.segs[i].addr < end) {
		return false
	}
	l.segs = slices.Insert(l.segs, i, &segRange{addr: addr, end: end, expandable: expandable})
	return true
}

// remove deletes [addr, end) from the reserved ranges, splitting mapped
// ranges as needed (segment_unmap may cover part of a range or several).
// It returns the bytes actually removed.
func (l *layout) remove(addr, end uint64) uint64 {
	var removed uint64
	var out []*segRange
	for _, s := range l.segs {
		if s.end <= addr || s.addr >= end {
			out = append(out, s)
			continue
		}
		lo, hi := max(s.addr, addr), min(s.end, end)
		removed += hi - lo
		if s.addr < lo {
			out = append(out, &segRange{addr: s.addr, end: lo, expandable: s.expandable, active: blocksIn(s.active, s.addr, lo)})
		}
		if hi < s.end {
			out = append(out, &segRange{addr: hi, end: s.end, expandable: s.expandable, active: blocksIn(s.active, hi, s.end)})
		}
	}
	l.segs = out
	return removed
}

func blocksIn(active []uint64, lo, hi uint64) []uint64 {
	var out []uint64
	for _, a := range active {
		if a >= lo && a < hi {
			out = append(out, a)
		}
	}
	return out
}

func (l *layout) insertBlock(addr uint64) {
	if i := l.find(addr); i >= 0 {
		s := l.segs[i]
		j, found := slices.BinarySearch(s.active, addr)
		if !found {
			s.active = slices.Insert(s.active, j, addr)
		}
	}
}

func (l *layout) removeBlock(addr uint64) {
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
func (l *layout) blockSize(r *rounding, addr uint64, req int64) (size int64, exact bool) {
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
	return run, true
}

// reserved returns the bytes of all ranges.
func (l *layout) reserved() int64 {
	var n int64
	for _, s := range l.segs {
		n += int64(s.end - s.addr)
	}
	return n
}
