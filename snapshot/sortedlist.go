package snapshot

import "slices"

// sortedList is an ordered sequence of entries keyed by address, kept as a
// list of sorted chunks of at most chunkMax entries (the layout Python's
// sortedcontainers uses). A lookup is a binary search over the chunks' last
// keys and one inside a chunk; an insertion or deletion moves at most
// chunkMax entries (as a rule the shorter half of a chunk, and none at its
// ends). While the list is small it is one sorted slice, as
// fast as the slice the replay used before; when it grows to 10⁵ entries
// (blocks at falling addresses, many segments) no operation costs more
// than a few thousand bytes moved, where a single slice cost O(n).
//
// A chunk's entries sit in a buffer with room at both ends, and a change
// moves the side of the chunk that is shorter: entries that arrive in
// falling order, as blocks handed out from the top of a segment down do,
// go in front of a chunk's first entry without moving the rest.
//
// Equal keys are allowed; a position says which one. Callers that keep
// keys unique use insert; layout inserts at positions to keep the order
// the reserved ranges had.
type sortedList[V any] struct {
	chunks []listChunk[V]
	last   []uint64 // last[c] is the key of chunks[c]'s last entry
	n      int
	// spare is the buffer of the last chunk emptied, reused when the list
	// fills again (a segment's blocks come and go every step).
	spare []entry[V]
}

// entry is a key and its value, the value first: an entry of a zero-size
// value is 8 bytes (a zero-size field at the end of a struct is padded).
type entry[V any] struct {
	val V
	key uint64
}

// listChunk is a run of entries, e, inside its buffer buf: the room before e
// is cap(buf) - cap(e), the room after it cap(e) - len(e).
type listChunk[V any] struct {
	e, buf []entry[V]
}

// room returns the free slots before and after the entries.
func (c *listChunk[V]) room() (front, back int) {
	return cap(c.buf) - cap(c.e), cap(c.e) - len(c.e)
}

// place copies entries into buf with the free slots split evenly around
// them and returns the chunk. The entries may lie in buf already.
func place[V any](buf, entries []entry[V]) listChunk[V] {
	n := len(entries)
	lo := (cap(buf) - n) / 2
	buf = buf[:cap(buf)]
	copy(buf[lo:], entries) // copy moves overlapping ranges correctly
	clear(buf[:lo])         // values may hold references
	clear(buf[lo+n:])
	return listChunk[V]{e: buf[lo : lo+n], buf: buf}
}

// insert puts en at j, moving the entries before j down when they are
// fewer than those after it and there is room, the others up otherwise.
// The chunk must have room (len(e) < cap(buf)).
func (c *listChunk[V]) insert(j int, en entry[V]) {
	n := len(c.e)
	if front, back := c.room(); front > 0 && (2*j < n || back == 0) {
		lo := cap(c.buf) - cap(c.e)
		c.e = c.buf[lo-1 : lo+n]
		copy(c.e[:j], c.e[1:j+1])
	} else {
		c.e = c.e[:n+1]
		copy(c.e[j+1:], c.e[j:n])
	}
	c.e[j] = en
}

// remove drops the entries [j0, j1), moving the shorter side.
func (c *listChunk[V]) remove(j0, j1 int) {
	n, k := len(c.e), j1-j0
	if j0 < n-j1 {
		copy(c.e[k:j1], c.e[:j0])
		clear(c.e[:k]) // values may hold references
		c.e = c.e[k:]
		return
	}
	copy(c.e[j0:], c.e[j1:])
	clear(c.e[n-k:])
	c.e = c.e[:n-k]
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

func (l *sortedList[V]) at(p pos) *entry[V] { return &l.chunks[p.c].e[p.j] }

// lowerBound returns the position of the first entry with key ≥ k.
func (l *sortedList[V]) lowerBound(k uint64) pos {
	c := 0
	if len(l.last) != 1 { // one chunk (the usual case) needs no search
		c = searchKeys(l.last, k, false)
	}
	if c == len(l.chunks) || l.last[c] < k {
		return l.end()
	}
	return pos{c, searchEntries(l.chunks[c].e, k, false)}
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
	return pos{c, searchEntries(l.chunks[c].e, k, true)}
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
	if p.j+1 < len(l.chunks[p.c].e) {
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
	return pos{p.c - 1, len(l.chunks[p.c-1].e) - 1}, true
}

// insert adds an entry before any entry of the same key.
func (l *sortedList[V]) insert(k uint64, v V) {
	l.insertAt(l.lowerBound(k), k, v)
}

// insertAt puts an entry at p (the caller keeps keys in order) and returns
// its position.
func (l *sortedList[V]) insertAt(p pos, k uint64, v V) pos {
	l.n++
	en := entry[V]{val: v, key: k}
	if len(l.chunks) == 0 {
		buf := l.spare
		if cap(buf) == 0 {
			buf = make([]entry[V], min(4, chunkMax))
		}
		l.spare = nil
		c := place(buf, nil)
		c.insert(0, en)
		l.chunks = append(l.chunks, c)
		l.last = append(l.last, k)
		return pos{0, 0}
	}
	if p.c == len(l.chunks) {
		p = pos{p.c - 1, len(l.chunks[p.c-1].e)}
	}
	c := &l.chunks[p.c]
	if n := len(c.e); n == cap(c.buf) { // full: grow the buffer, or split the chunk
		if n < chunkMax {
			*c = place(make([]entry[V], min(2*n, chunkMax)), c.e)
		} else {
			half := n / 2
			tail := place(make([]entry[V], max(chunkMax, n-half+1)), c.e[half:])
			clear(c.e[half:])
			*c = place(c.buf, c.e[:half])
			l.last[p.c] = c.e[half-1].key
			l.chunks = slices.Insert(l.chunks, p.c+1, tail)
			l.last = slices.Insert(l.last, p.c+1, tail.e[len(tail.e)-1].key)
			if p.j >= half {
				p = pos{p.c + 1, p.j - half}
			}
			c = &l.chunks[p.c]
		}
	} else if front, back := c.room(); 2*p.j < n && front == 0 || 2*p.j >= n && back == 0 {
		*c = place(c.buf, c.e) // the shorter side has no room: centre the entries
	}
	c.insert(p.j, en)
	l.last[p.c] = c.e[len(c.e)-1].key
	return p
}

// deleteAt removes the entry at p and returns the position of the entry
// that followed it.
func (l *sortedList[V]) deleteAt(p pos) pos {
	l.n--
	c := &l.chunks[p.c]
	c.remove(p.j, p.j+1)
	if len(c.e) == 0 {
		l.spare = c.buf
		l.chunks = slices.Delete(l.chunks, p.c, p.c+1)
		l.last = slices.Delete(l.last, p.c, p.c+1)
		return pos{p.c, 0}
	}
	l.last[p.c] = c.e[len(c.e)-1].key
	if p.j == len(c.e) {
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
		ch := &l.chunks[c]
		j0 := 0
		if c == p.c {
			j0 = p.j
		}
		j1 := j0
		for j1 < len(ch.e) && ch.e[j1].key < hi {
			if fn != nil {
				fn(&ch.e[j1])
			}
			j1++
		}
		l.n -= j1 - j0
		done := j1 < len(ch.e)
		ch.remove(j0, j1)
		if len(ch.e) == 0 {
			l.chunks = slices.Delete(l.chunks, c, c+1)
			l.last = slices.Delete(l.last, c, c+1)
		} else {
			l.last[c] = ch.e[len(ch.e)-1].key
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
		n += len(l.chunks[c].e)
	}
	return n
}

// push appends an entry whose key is not below the last one.
func (l *sortedList[V]) push(k uint64, v V) { l.insertAt(l.end(), k, v) }

// each calls fn with every entry in order.
func (l *sortedList[V]) each(fn func(*entry[V])) {
	for _, ch := range l.chunks {
		for i := range ch.e {
			fn(&ch.e[i])
		}
	}
}

func (l *sortedList[V]) clone() sortedList[V] {
	c := sortedList[V]{chunks: make([]listChunk[V], len(l.chunks)), last: slices.Clone(l.last), n: l.n}
	if len(l.chunks) == 0 {
		c.chunks, c.last = nil, nil
	}
	for i, ch := range l.chunks {
		e := slices.Clone(ch.e)
		c.chunks[i] = listChunk[V]{e: e, buf: e}
	}
	return c
}
