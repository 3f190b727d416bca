package allocator

import (
	"slices"
	"sort"
)

// freeSet is a pool's set of free mapped blocks in the comparator's order
// (BlockPool::blocks): sorted runs of at most freeChunk blocks, in order,
// none empty. A pool holds tens to thousands of free blocks at a time,
// where one sorted slice and a memmove would do; a fragmented heap holds
// hundreds of thousands, where a memmove per free made a what-if
// quadratic.
type freeSet struct {
	tie    TieBreak
	chunks [][]*block
	n      int
}

// freeChunk bounds a run; a full one is split in two.
const freeChunk = 512

// fpos is a block's place in a freeSet: run c, index i.
type fpos struct{ c, i int }

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

func (f *freeSet) len() int { return f.n }

// at returns the block at p, which must be valid.
func (f *freeSet) at(p fpos) *block { return f.chunks[p.c][p.i] }

// valid reports whether p is a block's place (not past either end).
func (f *freeSet) valid(p fpos) bool {
	return p.c >= 0 && p.c < len(f.chunks) && p.i >= 0 && p.i < len(f.chunks[p.c])
}

// next and prev step p through the order; past an end p is not valid.
func (f *freeSet) next(p fpos) fpos {
	if p.i+1 < len(f.chunks[p.c]) {
		return fpos{p.c, p.i + 1}
	}
	return fpos{p.c + 1, 0}
}

func (f *freeSet) prev(p fpos) fpos {
	if p.i > 0 {
		return fpos{p.c, p.i - 1}
	}
	if p.c == 0 {
		return fpos{-1, 0}
	}
	return fpos{p.c - 1, len(f.chunks[p.c-1]) - 1}
}

// end is the place past the last block.
func (f *freeSet) end() fpos { return fpos{len(f.chunks), 0} }

// find returns the place of the first block for which !before(block), f
// ordered so that before holds up to some place and not after it.
func (f *freeSet) find(before func(*block) bool) fpos {
	c := sort.Search(len(f.chunks), func(c int) bool {
		ch := f.chunks[c]
		return !before(ch[len(ch)-1])
	})
	if c == len(f.chunks) {
		return f.end()
	}
	ch := f.chunks[c]
	return fpos{c, sort.Search(len(ch), func(i int) bool { return !before(ch[i]) })}
}

// lowerBound returns the place of the first block not less than the search
// key (stream, size): the smallest block of at least size on stream, if any.
func (f *freeSet) lowerBound(stream, size int64) fpos {
	return f.find(func(b *block) bool {
		if b.stream != stream {
			return uint64(b.stream) < uint64(stream)
		}
		return b.size < size
	})
}

func (f *freeSet) search(b *block) fpos {
	return f.find(func(x *block) bool { return f.less(x, b) })
}

func (f *freeSet) insert(b *block) {
	p := f.search(b)
	if p.c == len(f.chunks) {
		if p.c == 0 || len(f.chunks[p.c-1]) >= freeChunk {
			f.chunks = append(f.chunks, make([]*block, 0, 8))
			p = fpos{len(f.chunks) - 1, 0}
		} else {
			p = fpos{p.c - 1, len(f.chunks[p.c-1])}
		}
	}
	ch := slices.Insert(f.chunks[p.c], p.i, b)
	if len(ch) > freeChunk {
		half := len(ch) / 2
		tail := append(make([]*block, 0, freeChunk), ch[half:]...)
		clear(ch[half:])
		f.chunks[p.c] = ch[:half]
		f.chunks = slices.Insert(f.chunks, p.c+1, tail)
	} else {
		f.chunks[p.c] = ch
	}
	f.n++
	b.inSet = true
}

func (f *freeSet) remove(b *block) {
	if !b.inSet {
		return
	}
	for p := f.search(b); f.valid(p); p = f.next(p) {
		x := f.at(p)
		if x == b {
			ch := slices.Delete(f.chunks[p.c], p.i, p.i+1)
			if len(ch) == 0 {
				f.chunks = slices.Delete(f.chunks, p.c, p.c+1)
			} else {
				f.chunks[p.c] = ch
			}
			f.n--
			b.inSet = false
			return
		}
		if f.less(b, x) {
			break
		}
	}
	panic("invariant violation: a free block is missing from its pool's set")
}

// all returns the blocks in order, in a new slice.
func (f *freeSet) all() []*block {
	out := make([]*block, 0, f.n)
	for _, ch := range f.chunks {
		out = append(out, ch...)
	}
	return out
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
	bs := f.all()
	slices.SortFunc(bs, func(x, y *block) int {
		switch {
		case f.less(x, y):
			return -1
		case f.less(y, x):
			return 1
		}
		return 0
	})
	f.chunks = f.chunks[:0]
	for len(bs) > 0 {
		k := min(len(bs), freeChunk/2)
		f.chunks = append(f.chunks, append(make([]*block, 0, freeChunk), bs[:k]...))
		bs = bs[k:]
	}
}
