package allocator

import (
	"slices"
	"sort"
)

// freeSet is a pool's set of free mapped blocks in the comparator's order
// (BlockPool::blocks). A sorted slice: a pool holds few free blocks at a
// time (tens to thousands), where a memmove beats a tree.
type freeSet struct {
	tie    TieBreak
	blocks []*block
}

// less is the free-block comparator: stream (as an unsigned pointer), size,
// then the tie-break.
func (f *freeSet) less(a, b *block) bool {
	if a.stream != b.stream {
		return uint64(a.stream) < uint64(b.stream)
	}
	if a.size != b.size {
		return a.size < b.size
	}
	switch f.tie {
	case TieSegmentCounter:
		if a.seg.counter != b.seg.counter {
			return a.seg.counter < b.seg.counter
		}
	case TieBlockCounter:
		if a.counter != b.counter {
			return a.counter < b.counter
		}
	}
	return a.addr < b.addr
}

// lowerBound returns the index of the first block not less than the search
// key (stream, size): the smallest block of at least size on stream, if any.
func (f *freeSet) lowerBound(stream, size int64) int {
	return sort.Search(len(f.blocks), func(i int) bool {
		b := f.blocks[i]
		if b.stream != stream {
			return uint64(b.stream) > uint64(stream)
		}
		return b.size >= size
	})
}

func (f *freeSet) search(b *block) int {
	return sort.Search(len(f.blocks), func(i int) bool { return !f.less(f.blocks[i], b) })
}

func (f *freeSet) insert(b *block) {
	i := f.search(b)
	f.blocks = append(f.blocks, nil)
	copy(f.blocks[i+1:], f.blocks[i:])
	f.blocks[i] = b
	b.inSet = true
}

func (f *freeSet) remove(b *block) {
	if !b.inSet {
		return
	}
	for i := f.search(b); i < len(f.blocks); i++ {
		if f.blocks[i] == b {
			f.blocks = append(f.blocks[:i], f.blocks[i+1:]...)
			b.inSet = false
			return
		}
		if f.less(b, f.blocks[i]) {
			break
		}
	}
	panic("invariant violation: a free block is missing from its pool's set")
}

// unmappedSet is a pool's unmapped blocks of expandable segments, by
// (stream, address) (BlockPool::unmapped).
type unmappedSet struct {
	blocks []*block
}

func unmappedLess(a, b *block) bool {
	if a.stream != b.stream {
		return uint64(a.stream) < uint64(b.stream)
	}
	return a.addr < b.addr
}

func (u *unmappedSet) search(b *block) int {
	return sort.Search(len(u.blocks), func(i int) bool { return !unmappedLess(u.blocks[i], b) })
}

func (u *unmappedSet) insert(b *block) {
	i := u.search(b)
	u.blocks = append(u.blocks, nil)
	copy(u.blocks[i+1:], u.blocks[i:])
	u.blocks[i] = b
	b.inSet = true
}

func (u *unmappedSet) remove(b *block) {
	if !b.inSet {
		return
	}
	i := u.search(b)
	if i < len(u.blocks) && u.blocks[i] == b {
		u.blocks = append(u.blocks[:i], u.blocks[i+1:]...)
		b.inSet = false
		return
	}
	panic("invariant violation: an unmapped block is missing from its pool's set")
}

// first returns the index of stream's first unmapped block.
func (u *unmappedSet) first(stream int64) int {
	return sort.Search(len(u.blocks), func(i int) bool {
		return uint64(u.blocks[i].stream) >= uint64(stream)
	})
}

// resort restores the order after tie-break keys changed.
func (f *freeSet) resort() {
	slices.SortFunc(f.blocks, func(x, y *block) int {
		switch {
		case f.less(x, y):
			return -1
		case f.less(y, x):
			return 1
		}
		return 0
	})
}
