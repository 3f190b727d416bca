package snapshot

import "slices"

// sortedList is an ordered sequence of entries keyed by address, kept as a
// list of sorted chunks of at most chunkMax entries (the layout Python's
// sortedcontainers uses). A lookup is a binary search over the chunks' last
// keys and one inside a chunk; an insertion or deletion moves at most
// chunkMax entries. While the list is small it is one sorted slice, as
// fast as the slice the replay used before; when it grows to 10⁵ entries
// (blocks at falling addresses, many segments) no operation costs more
// than a few thousand bytes moved, where a single slice cost O(n).
//
// Equal keys are allowed; a position says which one. Callers that keep
// keys unique use insert; layout inserts at positions to keep the order
// the reserved ranges had.
type sortedList[V any] struct {
	chunks [][]entry[V]
	last   []uint64 // last[c] is the key of chunks[c]'s last entry
	n      int
}

type entry[V any] struct {
	key uint64
	val V
}

// pos is a position in a sortedList: entry j of chunk c, or the end when c
// is len(chunks). A position is only valid until the next change, except
// as returned by insertAt and deleteAt.
type pos struct{ c, j int }

const chunkMax = 512

func (l *sortedList[V]) len() int { return l.n }

func (l *sortedList[V]) end() pos { return pos{len(l.chunks), 0} }

func (l *sortedList[V]) valid(p pos) bool { return p.c < len(l.chunks) }

func (l *sortedList[V]) at(p pos) *entry[V] { return &l.chunks[p.c][p.j] }

// lowerBound returns the position of the first entry with key ≥ k.
func (l *sortedList[V]) lowerBound(k uint64) pos {
	c, _ := slices.BinarySearch(l.last, k)
	if c == len(l.chunks) {
		return l.end()
	}
	ch := l.chunks[c]
	lo, hi := 0, len(ch)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ch[m].key < k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return pos{c, lo}
}

// upperBound returns the position of the first entry with key > k.
func (l *sortedList[V]) upperBound(k uint64) pos {
	lo, hi := 0, len(l.last)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.last[m] <= k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(l.chunks) {
		return l.end()
	}
	ch := l.chunks[lo]
	a, b := 0, len(ch)
	for a < b {
		m := int(uint(a+b) >> 1)
		if ch[m].key <= k {
			a = m + 1
		} else {
			b = m
		}
	}
	return pos{lo, a}
}

func (l *sortedList[V]) next(p pos) pos {
	if p.j+1 < len(l.chunks[p.c]) {
		return pos{p.c, p.j + 1}
	}
	return pos{p.c + 1, 0}
}

// prev returns the position before p and whether there is one.
func (l *sortedList[V]) prev(p pos) (pos, bool) {
	if p.c < len(l.chunks) && p.j > 0 {
		return pos{p.c, p.j - 1}, true
	}
	if p.c == 0 {
		return pos{}, false
	}
	return pos{p.c - 1, len(l.chunks[p.c-1]) - 1}, true
}

// insert adds an entry before any entry of the same key.
func (l *sortedList[V]) insert(k uint64, v V) {
	l.insertAt(l.lowerBound(k), k, v)
}

// insertAt puts an entry at p (the caller keeps keys in order) and returns
// its position.
func (l *sortedList[V]) insertAt(p pos, k uint64, v V) pos {
	l.n++
	if len(l.chunks) == 0 {
		l.chunks = append(l.chunks, []entry[V]{{k, v}})
		l.last = append(l.last, k)
		return pos{0, 0}
	}
	if p.c == len(l.chunks) {
		p = pos{p.c - 1, len(l.chunks[p.c-1])}
	}
	ch := slices.Insert(l.chunks[p.c], p.j, entry[V]{k, v})
	l.chunks[p.c] = ch
	l.last[p.c] = ch[len(ch)-1].key
	if len(ch) <= chunkMax {
		return p
	}
	half := len(ch) / 2
	tail := slices.Clone(ch[half:])
	l.chunks[p.c] = ch[:half]
	l.last[p.c] = ch[half-1].key
	l.chunks = slices.Insert(l.chunks, p.c+1, tail)
	l.last = slices.Insert(l.last, p.c+1, tail[len(tail)-1].key)
	if p.j >= half {
		return pos{p.c + 1, p.j - half}
	}
	return p
}

// deleteAt removes the entry at p and returns the position of the entry
// that followed it.
func (l *sortedList[V]) deleteAt(p pos) pos {
	l.n--
	ch := slices.Delete(l.chunks[p.c], p.j, p.j+1)
	if len(ch) == 0 {
		l.chunks = slices.Delete(l.chunks, p.c, p.c+1)
		l.last = slices.Delete(l.last, p.c, p.c+1)
		return pos{p.c, 0}
	}
	l.chunks[p.c] = ch
	l.last[p.c] = ch[len(ch)-1].key
	if p.j == len(ch) {
		return pos{p.c + 1, 0}
	}
	return p
}

// each calls fn with every entry in order.
func (l *sortedList[V]) each(fn func(*entry[V])) {
	for _, ch := range l.chunks {
		for i := range ch {
			fn(&ch[i])
		}
	}
}

func (l *sortedList[V]) clone() sortedList[V] {
	c := sortedList[V]{chunks: make([][]entry[V], len(l.chunks)), last: slices.Clone(l.last), n: l.n}
	for i, ch := range l.chunks {
		c.chunks[i] = slices.Clone(ch)
	}
	return c
}
