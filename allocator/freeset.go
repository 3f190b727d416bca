package allocator

import (
	"slices"
	"sort"
)

// freeSet is a pool's set of free mapped blocks in the comparator's order
// (BlockPool::blocks). A sorted slice: a pool holds few free blocks at a
// time (tens to thousands), where a memmove beats a tree. Each block's
// sort key is kept beside it (keys[i] is blocks[i]'s), so that a search
// reads one array instead of a block per step.
type freeSet struct {
	tie    TieBreak
	blocks []*block
	keys   []freeKey
}

// freeKey is what the comparator orders by: stream (as an unsigned
// pointer), size, the tie-break's counter (0 when it has none), address.
type freeKey struct {
	stream uint64
	size   int64
	tie    int64
	addr   uint64
}

func (f *freeSet) key(b *block) freeKey {
	k := freeKey{stream: uint64(b.stream), size: b.size, addr: b.addr}
	switch f.tie {
	case TieSegmentCounter:
		k.tie = b.seg.counter
	case TieBlockCounter:
		k.tie = b.counter
	}
	return k
}

func keyLess(a, b *freeKey) bool {
	if a.stream != b.stream {
		return a.stream < b.stream
	}
	if a.size != b.size {
		return a.size < b.size
	}
	if a.tie != b.tie {
		return a.tie < b.tie
	}
	return a.addr < b.addr
}

// less is the free-block comparator: stream (as an unsigned pointer), size,
// then the tie-break.
func (f *freeSet) less(a, b *block) bool {
	ka, kb := f.key(a), f.key(b)
	return keyLess(&ka, &kb)
}

// lowerBound returns the index of the first block not less than the search
// key (stream, size): the smallest block of at least size on stream, if any.
func (f *freeSet) lowerBound(stream, size int64) int {
	s := uint64(stream)
	lo, hi := 0, len(f.keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if k := &f.keys[m]; k.stream < s || k.stream == s && k.size < size {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// search returns the index of the first key not less than k.
func (f *freeSet) search(k *freeKey) int {
	lo, hi := 0, len(f.keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if keyLess(&f.keys[m], k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (f *freeSet) insert(b *block) {
	k := f.key(b)
	i := f.search(&k)
	f.blocks = slices.Insert(f.blocks, i, b)
	f.keys = slices.Insert(f.keys, i, k)
	b.inSet = true
}

func (f *freeSet) remove(b *block) {
	if !b.inSet {
		return
	}
	k := f.key(b)
	for i := f.search(&k); i < len(f.blocks); i++ {
		if f.blocks[i] == b {
			f.blocks = slices.Delete(f.blocks, i, i+1)
			f.keys = slices.Delete(f.keys, i, i+1)
			b.inSet = false
			return
		}
		if keyLess(&k, &f.keys[i]) {
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
	for i, b := range f.blocks {
		f.keys[i] = f.key(b)
	}
}
