package allocator

import (
	"math"
	"math/bits"
	"slices"
	"sort"
)

// runs is an ordered sequence kept as sorted runs, in order, none empty: a
// lookup is a binary search over the runs' last items and one inside a
// run, an insert or delete moves the items after it in its run (and, when
// a run is split or emptied, the runs after it). The allocator's sets hold
// tens to thousands of items, where one sorted slice would do; a
// fragmented heap holds hundreds of thousands, where a memmove per change
// made a what-if quadratic. A run is split at runLimit items, which grows
// with the set as the cube root of its size: the moves inside a run grow
// with its length, those of the list of runs with its length over how
// often a run splits, and the sum of the two is least there.
type runs[T any] struct {
	chunks [][]T
	n      int
	spare  [][]T // emptied runs, for the next new one
}

// runMin and runMax bound runLimit.
const (
	runMin = 32
	runMax = 512
)

// runLimit is the length at which a run is split in two: (6.4 n)^⅓ for n
// items (runMin up to 5,000 items, 172 at 800,000).
func (r *runs[T]) runLimit() int {
	if r.n < 5000 {
		return runMin
	}
	return min(runMax, int(math.Cbrt(6.4*float64(r.n))))
}

// rpos is an item's place in runs: run c, index i.
type rpos struct{ c, i int }

func (r *runs[T]) len() int { return r.n }

// at returns the item at p, which must be valid.
func (r *runs[T]) at(p rpos) T { return r.chunks[p.c][p.i] }

// valid reports whether p is an item's place (not past either end).
func (r *runs[T]) valid(p rpos) bool {
	return p.c >= 0 && p.c < len(r.chunks) && p.i >= 0 && p.i < len(r.chunks[p.c])
}

// next and prev step p through the order; past an end p is not valid.
func (r *runs[T]) next(p rpos) rpos {
	if p.i+1 < len(r.chunks[p.c]) {
		return rpos{p.c, p.i + 1}
	}
	return rpos{p.c + 1, 0}
}

func (r *runs[T]) prev(p rpos) rpos {
	if p.i > 0 {
		return rpos{p.c, p.i - 1}
	}
	if p.c == 0 {
		return rpos{-1, 0}
	}
	return rpos{p.c - 1, len(r.chunks[p.c-1]) - 1}
}

// end is the place past the last item.
func (r *runs[T]) end() rpos { return rpos{len(r.chunks), 0} }

// find returns the place of the first item for which !before(item), the
// items ordered so that before holds up to some place and not after it.
func (r *runs[T]) find(before func(T) bool) rpos {
	c := sort.Search(len(r.chunks), func(c int) bool {
		ch := r.chunks[c]
		return !before(ch[len(ch)-1])
	})
	if c == len(r.chunks) {
		return r.end()
	}
	ch := r.chunks[c]
	return rpos{c, sort.Search(len(ch), func(i int) bool { return !before(ch[i]) })}
}

// chunk returns an empty run with room for runMin+1 items (a full run
// takes one more before it is split; a longer one grows).
func (r *runs[T]) chunk() []T {
	if k := len(r.spare); k > 0 {
		ch := r.spare[k-1]
		r.spare = r.spare[:k-1]
		return ch
	}
	return make([]T, 0, runMin+1)
}

// insertAt puts x at p, a place find gave (or the end).
func (r *runs[T]) insertAt(p rpos, x T) {
	if p.c == len(r.chunks) {
		if p.c == 0 || len(r.chunks[p.c-1]) >= r.runLimit() {
			r.chunks = append(r.chunks, r.chunk())
			p = rpos{len(r.chunks) - 1, 0}
		} else {
			p = rpos{p.c - 1, len(r.chunks[p.c-1])}
		}
	}
	ch := slices.Insert(r.chunks[p.c], p.i, x)
	if len(ch) > r.runLimit() {
		half := len(ch) / 2
		tail := append(r.chunk(), ch[half:]...)
		clear(ch[half:])
		r.chunks[p.c] = ch[:half]
		r.chunks = slices.Insert(r.chunks, p.c+1, tail)
	} else {
		r.chunks[p.c] = ch
	}
	r.n++
}

// deleteAt removes the item at p. The places before p stay valid.
func (r *runs[T]) deleteAt(p rpos) {
	ch := slices.Delete(r.chunks[p.c], p.i, p.i+1)
	if len(ch) == 0 {
		if len(r.spare) < 4 && cap(ch) == runMin+1 {
			r.spare = append(r.spare, ch)
		}
		r.chunks = slices.Delete(r.chunks, p.c, p.c+1)
	} else {
		r.chunks[p.c] = ch
	}
	r.n--
}

// all returns the items in order, in a new slice.
func (r *runs[T]) all() []T {
	out := make([]T, 0, r.n)
	for _, ch := range r.chunks {
		out = append(out, ch...)
	}
	return out
}

// set replaces the items with xs, in order.
func (r *runs[T]) set(xs []T) {
	r.chunks, r.n = r.chunks[:0], len(xs)
	for len(xs) > 0 {
		k := min(len(xs), r.runLimit()/2)
		r.chunks = append(r.chunks, append(make([]T, 0, k+1), xs[:k]...))
		xs = xs[k:]
	}
}

// freeSet is a pool's set of free mapped blocks in the comparator's order
// (BlockPool::blocks). Each entry holds its block's key, so a search reads
// the runs alone, not the blocks they point to. A block's key changes
// while it is in the set only through rekeyDown and rekeyUp, which move
// its entry; resort reads the tie-breaks anew.
type freeSet struct {
	tie TieBreak
	runs[freeEntry]
	// splitN and splitBytes count the set's blocks that share their
	// segment with another block, outside expandable segments:
	// inactive_split and inactive_split_bytes. A block holds what it
	// adds (block.split); recount keeps the sums at each change of the
	// set, where a block's neighbours and size change too.
	splitN     int
	splitBytes int64
}

// recount counts b anew in the split sums, in the set or out of it.
func (f *freeSet) recount(b *block) {
	if b.split > 0 {
		f.splitN--
		f.splitBytes -= b.split
		b.split = 0
	}
	if b.inSet && !b.seg.expandable && b.isSplit() {
		f.splitN++
		f.splitBytes += b.size
		b.split = b.size
	}
}

// freeKey is a free block's place in the comparator's order: stream (as
// an unsigned pointer), size, the tie-break's counter (0 under
// TieAddress), address.
type freeKey struct {
	stream uint64
	size   int64
	tie    int64
	addr   uint64
}

type freeEntry struct {
	freeKey
	b *block
}

// before reports whether x comes before y in the order. It subtracts
// the keys as one 256-bit number (the signed fields with their sign bit
// flipped, which orders them as unsigned): x comes first when the
// subtraction borrows. No branch: a binary search's comparisons go
// either way at random.
func (x *freeKey) before(y *freeKey) bool {
	const sign = 1 << 63
	_, b := bits.Sub64(x.addr, y.addr, 0)
	_, b = bits.Sub64(uint64(x.tie)^sign, uint64(y.tie)^sign, b)
	_, b = bits.Sub64(uint64(x.size)^sign, uint64(y.size)^sign, b)
	_, b = bits.Sub64(x.stream, y.stream, b)
	return b != 0
}

// key is b's place in the order.
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

// less is the free-block comparator: stream (as an unsigned pointer), size,
// then the tie-break.
func (f *freeSet) less(a, b *block) bool {
	ka, kb := f.key(a), f.key(b)
	return ka.before(&kb)
}

// compare is before as a three-way comparison.
func (x *freeKey) compare(y *freeKey) int {
	switch {
	case x.before(y):
		return -1
	case y.before(x):
		return 1
	}
	return 0
}

// compare is less as a three-way comparison.
func (f *freeSet) compare(x, y *block) int {
	kx, ky := f.key(x), f.key(y)
	return kx.compare(&ky)
}

// at returns the block at p, which must be valid.
func (f *freeSet) at(p rpos) *block { return f.chunks[p.c][p.i].b }

// all returns the blocks in order, in a new slice.
func (f *freeSet) all() []*block {
	out := make([]*block, 0, f.n)
	for _, ch := range f.chunks {
		for i := range ch {
			out = append(out, ch[i].b)
		}
	}
	return out
}

// wholeOrExpandable returns, in order, the blocks of the set that are
// not counted in splitN: those of expandable segments and those that are
// a whole segment (what release_blocks and the garbage collector may
// free), in a new slice.
func (f *freeSet) wholeOrExpandable() []*block {
	out := make([]*block, 0, f.n-f.splitN)
	for _, ch := range f.chunks {
		for i := range ch {
			if b := ch[i].b; b.split == 0 {
				out = append(out, b)
			}
		}
	}
	return out
}

// place returns the place of the first entry not before k.
func (f *freeSet) place(k *freeKey) rpos {
	cs := f.chunks
	lo, hi := 0, len(cs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ch := cs[m]; ch[len(ch)-1].before(k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(cs) {
		return f.end()
	}
	ch := cs[lo]
	return rpos{lo, searchRun(ch, 0, len(ch), k)}
}

// lowerBound returns the place of the first block not less than the search
// key (stream, size): the smallest block of at least size on stream, if any.
func (f *freeSet) lowerBound(stream, size int64) rpos {
	return f.place(&freeKey{stream: uint64(stream), size: size})
}

func (f *freeSet) insert(b *block) {
	k := f.key(b)
	f.insertAt(f.place(&k), freeEntry{k, b})
	b.inSet = true
	f.recount(b)
}

// take removes the block at p, whose place find or lowerBound gave.
func (f *freeSet) take(p rpos) *block {
	b := f.at(p)
	f.deleteAt(p)
	b.inSet = false
	f.recount(b)
	return b
}

// rekeyDown gives the entry at at, whose block is b, b's key, which must
// come before its old one: the entry moves down to its new place, inside
// its run when the place is there.
func (f *freeSet) rekeyDown(at rpos, b *block) {
	defer f.rekeyed(f.at(at), b)
	k := f.key(b)
	ch := f.chunks[at.c]
	q := rpos{at.c, 0}
	if ch[0].before(&k) {
		// The place is in the run, after its first entry (the entry at at
		// is not before k): no search of the runs.
		q.i = searchRun(ch, 1, at.i, &k)
	} else {
		q = f.place(&k)
	}
	if q.c == at.c {
		copy(ch[q.i+1:at.i+1], ch[q.i:at.i])
		ch[q.i] = freeEntry{k, b}
		return
	}
	f.deleteAt(at)
	f.insertAt(f.place(&k), freeEntry{k, b})
}

// searchRun returns the index of the first entry of ch[lo:hi] not before
// k, or hi.
func searchRun(ch []freeEntry, lo, hi int, k *freeKey) int {
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ch[m].before(k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// rekeyed recounts old, whose entry b took, and b.
func (f *freeSet) rekeyed(old, b *block) {
	if old != b {
		f.recount(old)
	}
	f.recount(b)
}

// rekeyUp gives the entry at at, whose block is now b, b's key, which
// must come after its old one: the entry moves up to its new place, inside
// its run when the place is there.
func (f *freeSet) rekeyUp(at rpos, b *block) {
	defer f.rekeyed(f.at(at), b)
	k := f.key(b)
	ch := f.chunks[at.c]
	end := -1
	switch last := len(ch) - 1; {
	case !ch[last].before(&k):
		// The place is in the run, after at (whose old key is before k):
		// no search of the runs.
		end = searchRun(ch, at.i+1, last, &k)
	case at.c+1 == len(f.chunks) || !f.chunks[at.c+1][0].before(&k):
		end = len(ch) // the first entry of the next run, or the end
	default:
		q := f.place(&k)
		if q.c == at.c+1 && q.i == 0 {
			end = len(ch)
		}
	}
	if end > at.i {
		copy(ch[at.i:end-1], ch[at.i+1:end])
		ch[end-1] = freeEntry{k, b}
		return
	}
	f.deleteAt(at)
	f.insertAt(f.place(&k), freeEntry{k, b})
}

// placeOf returns the place of b's entry, which must be in the set.
func (f *freeSet) placeOf(b *block) rpos {
	k := f.key(b)
	for p := f.place(&k); f.valid(p); p = f.next(p) {
		e := &f.chunks[p.c][p.i]
		if e.b == b {
			return p
		}
		if k.before(&e.freeKey) {
			break
		}
	}
	panic("invariant violation: a free block is missing from its pool's set")
}

func (f *freeSet) remove(b *block) {
	if !b.inSet {
		return
	}
	f.deleteAt(f.placeOf(b))
	b.inSet = false
	f.recount(b)
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
	es := make([]freeEntry, 0, f.n)
	for _, ch := range f.chunks {
		for _, e := range ch {
			es = append(es, freeEntry{f.key(e.b), e.b})
		}
	}
	slices.SortFunc(es, func(x, y freeEntry) int { return x.compare(&y.freeKey) })
	f.set(es)
}
