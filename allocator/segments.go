package allocator

// This file files segments by address: the map for lookups by base, the
// spans, by address, for overlap checks and lookups by any address inside.

// addSeg files a new segment; false when it would overlap one held (a
// device that hands out an address in use: only damaged recordings do).
// Address-space reservations do not overlap either, so an expandable
// segment whose assumed size runs into the next segment ends where that
// one begins, when the part cut off is unmapped.
func (a *Allocator) addSeg(seg *segment) bool {
	if seg.addr+uint64(seg.size) < seg.addr {
		return false
	}
	sp := &a.spans
	i := sp.find(func(s *segment) bool { return s.addr < seg.addr })
	if sp.valid(i) && sp.at(i).addr < seg.addr+uint64(seg.size) {
		next := sp.at(i)
		if !seg.expandable || next.addr <= seg.addr {
			return false
		}
		seg.size = int64(next.addr-seg.addr) / seg.pageSize * seg.pageSize
		if seg.size <= 0 {
			return false
		}
	}
	if j := sp.prev(i); sp.valid(j) {
		prev := sp.at(j)
		if over := int64(prev.addr + uint64(prev.size) - seg.addr); prev.addr+uint64(prev.size) > seg.addr {
			if !prev.expandable || !prev.trim(over) {
				return false
			}
		}
	}
	sp.insertAt(i, seg)
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
	sp := &a.spans
	if i := sp.find(func(s *segment) bool { return s.addr < seg.addr }); sp.valid(i) && sp.at(i).addr == seg.addr {
		sp.deleteAt(i)
	}
}

// segAt returns the segment holding addr, or nil.
func (a *Allocator) segAt(addr uint64) *segment {
	sp := &a.spans
	i := sp.find(func(s *segment) bool { return s.addr <= addr }) // the first segment past addr
	if i = sp.prev(i); sp.valid(i) && addr-sp.at(i).addr < uint64(sp.at(i).size) {
		return sp.at(i)
	}
	return nil
}
