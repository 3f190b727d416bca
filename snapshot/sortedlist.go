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
	// spare is the storage of the last chunk emptied, reused when the list
	// fills again (a segment's blocks come and go every step).
	spare []entry[V]
}

type entry[V any] struct {
	key uint64
	val V
}

// pos is a position in a sortedList: entry j of chunk c, or the end when c
// is len(chunks). A position is only valid until the next change, except
// as returned by insertAt and deleteAt.
type pos struct{ c, j int }

// chunkMax is the most entries a chunk holds (a variable so that tests can
// make chunks tiny and every path run).
var chunkMax = 512

func (l *sortedList[V]) len() int { return l.n }

func (l *sortedList[V]) end() pos { return pos{len(l.chunks), 0} }

func (l *sortedList[V]) valid(p pos) bool { return p.c < len(l.chunks) }

func (l *sortedList[V]) at(p pos) *entry[V] { return &l.chunks[p.c][p.j] }

// lowerBound returns the position of the first entry with key ≥ k.
func (l *sortedList[V]) lowerBound(k uint64) pos {
	c := 0
	if len(l.last) != 1 { // one chunk (the usual case) needs no search
		c = searchKeys(l.last, k, false)
	}
	if c == len(l.chunks) || l.last[c] < k {
		return l.end()
	}
	return pos{c, searchEntries(l.chunks[c], k, false)}
}

// upperBound returns the position of the first entry with key > k.
func (l *sortedList[V]) upperBound(k uint64) pos {
	c := 0
	if len(l.last) != 1 {
		c = searchKeys(l.last, k, true)
	}
	if c == len(l.chunks) || l.last[c] <= k {
		return l.end()
	}
	return pos{c, searchEntries(l.chunks[c], k, true)}
}

// searchKeys returns the first index whose key is ≥ k (> k when strict).
func searchKeys(keys []uint64, k uint64, strict bool) int {
	lo, hi := 0, len(keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if keys[m] < k || strict && keys[m] == k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func searchEntries[V any](ch []entry[V], k uint64, strict bool) int {
	lo, hi := 0, len(ch)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ch[m].key < k || strict && ch[m].key == k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
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
		l.chunks = append(l.chunks, append(l.spare[:0], entry[V]{k, v}))
		l.spare = nil
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
		l.spare = ch
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

// cut removes the entries with lo ≤ key < hi, calling fn (when not nil)
// with each in order. It costs the entries removed plus one move per chunk
// it touches.
func (l *sortedList[V]) cut(lo, hi uint64, fn func(*entry[V])) {
	if lo >= hi {
		return
	}
	p := l.lowerBound(lo)
	for c := p.c; c < len(l.chunks); {
		ch := l.chunks[c]
		j0 := 0
		if c == p.c {
			j0 = p.j
		}
		j1 := j0
		for j1 < len(ch) && ch[j1].key < hi {
			if fn != nil {
				fn(&ch[j1])
			}
			j1++
		}
		l.n -= j1 - j0
		done := j1 < len(ch)
		ch = slices.Delete(ch, j0, j1)
		if len(ch) == 0 {
			l.chunks = slices.Delete(l.chunks, c, c+1)
			l.last = slices.Delete(l.last, c, c+1)
		} else {
			l.chunks[c] = ch
			l.last[c] = ch[len(ch)-1].key
			c++
		}
		if done {
			return
		}
	}
}

// rank returns the number of entries with key < k.
func (l *sortedList[V]) rank(k uint64) int {
	p := l.lowerBound(k)
	n := p.j
	for c := range p.c {
		n += len(l.chunks[c])
	}
	return n
}

// push appends an entry whose key is not below the last one.
func (l *sortedList[V]) push(k uint64, v V) { l.insertAt(l.end(), k, v) }

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
	if len(l.chunks) == 0 {
		c.chunks, c.last = nil, nil
	}
	for i, ch := range l.chunks {
		c.chunks[i] = slices.Clone(ch)
	}
	return c
}
