package allocator

import (
	"cmp"
	"slices"
)

// This file files segments by address: the map for lookups by base, the
// sorted spans for overlap checks and lookups by any address inside.

// addSeg files a new segment; false when it would overlap one held (a
// device that hands out an address in use: only damaged recordings do).
// Address-space reservations do not overlap either, so an expandable
// segment whose assumed size runs into the next segment ends where that
// one begins, when the part cut off is unmapped.
func (a *Allocator) addSeg(seg *segment) bool {
	if seg.addr+uint64(seg.size) < seg.addr {
		return false
	}
	i, _ := slices.BinarySearchFunc(a.spans, seg.addr, func(s *segment, addr uint64) int {
		return cmp.Compare(s.addr, addr)
	})
	if i < len(a.spans) && a.spans[i].addr < seg.addr+uint64(seg.size) {
		if !seg.expandable || a.spans[i].addr <= seg.addr {
			return false
		}
		seg.size = int64(a.spans[i].addr-seg.addr) / seg.pageSize * seg.pageSize
		if seg.size <= 0 {
			return false
		}
	}
	if i > 0 {
		prev := a.spans[i-1]
		if over := int64(prev.addr + uint64(prev.size) - seg.addr); prev.addr+uint64(prev.size) > seg.addr {
			if !prev.expandable || !prev.trim(over) {
				return false
			}
		}
	}
	a.spans = slices.Insert(a.spans, i, seg)
	a.segs[seg.addr] = seg
	return true
}

// trim shortens an expandable segment's reservation by n bytes from its
// end, when they lie in its unmapped tail.
func (s *segment) trim(n int64) bool {
	last := s.head
	for last.next != nil {
		last = last.next
	}
	if !last.unmapped || last.size <= n {
		return false
	}
	last.size -= n
	s.size -= n
	return true
}

// dropSeg forgets a released segment.
func (a *Allocator) dropSeg(seg *segment) {
	delete(a.segs, seg.addr)
	i, ok := slices.BinarySearchFunc(a.spans, seg.addr, func(s *segment, addr uint64) int {
		return cmp.Compare(s.addr, addr)
	})
	if ok {
		a.spans = slices.Delete(a.spans, i, i+1)
	}
}

// segAt returns the segment holding addr, or nil.
func (a *Allocator) segAt(addr uint64) *segment {
	i, ok := slices.BinarySearchFunc(a.spans, addr, func(s *segment, addr uint64) int {
		return cmp.Compare(s.addr, addr)
	})
	if !ok {
		i--
	}
	if i >= 0 && i < len(a.spans) && addr-a.spans[i].addr < uint64(a.spans[i].size) {
		return a.spans[i]
	}
	return nil
}
