package snapshot

import "sync/atomic"

// This file holds the decoder's bulk storage, each grown by chunks so that
// tens of millions of entries are never copied on growth: the memo, the
// items of tuples and the trace entries of each device.

// eventChunk is the number of events per chunk of an eventStore.
const eventChunk = 1 << 15

// eventStore collects a device's trace entries in chunks, so that millions
// of them are copied once, by flat, instead of at every growth. cur is the
// chunk being filled; chunks holds the full ones.
type eventStore struct {
	chunks [][]Event
	cur    []Event
	n      int

	// The first list of entries of a pickle of known size is sized from
	// the bytes its entries take and the bytes left, re-made as it fills
	// (see decoder.reserveEvents): sizable from its start offset; reserved
	// once sized; check is the count at which the estimate is re-made.
	sizable, reserved bool
	start             int64
	check             int
}

func (s *eventStore) add(e Event) int {
	*s.next() = e
	return s.n - 1
}

// next appends a zero event and returns it, to be filled in place; drop
// takes it back.
func (s *eventStore) next() *Event {
	if len(s.cur) == cap(s.cur) {
		s.newChunk()
	}
	s.cur = s.cur[:len(s.cur)+1] // zero: chunks are made zero and drop re-zeroes
	s.n++
	return &s.cur[len(s.cur)-1]
}

func (s *eventStore) newChunk() {
	switch {
	case s.cur == nil:
		s.cur = make([]Event, 0, 4) // short traces stay small (a hundred thousand lists of two entries: 19 MB, not 300)
	case cap(s.cur) < eventChunk: // the first chunk grows up to full size
		s.cur = append(make([]Event, 0, min(2*cap(s.cur), eventChunk)), s.cur...)
	default:
		s.chunks = append(s.chunks, s.cur)
		s.cur = make([]Event, 0, eventChunk)
	}
}

// reserve makes room for extra more entries in the current chunk, when
// there is only one.
func (s *eventStore) reserve(extra int) {
	if len(s.chunks) != 0 || cap(s.cur)-len(s.cur) >= extra {
		return
	}
	nc := make([]Event, len(s.cur), len(s.cur)+extra)
	hugePages(nc)
	copy(nc, s.cur)
	s.cur = nc
}

// truncate drops the entries from n on.
func (s *eventStore) truncate(n int) {
	for s.n > n {
		s.drop()
	}
}

func (s *eventStore) drop() {
	if len(s.cur) == 0 { // back to the previous chunk
		last := len(s.chunks) - 1
		s.cur, s.chunks = s.chunks[last], s.chunks[:last]
	}
	s.cur[len(s.cur)-1] = Event{}
	s.cur = s.cur[:len(s.cur)-1]
	s.n--
}

func (s *eventStore) at(i int) Event {
	if c := i / eventChunk; c < len(s.chunks) {
		return s.chunks[c][i%eventChunk]
	}
	return s.cur[i-len(s.chunks)*eventChunk]
}

// flat returns the events as one slice. The store keeps that slice as its
// current chunk. Events that fit the first chunk are not copied, unless
// more than a quarter of it is unused and it was not reserved, or more
// than half of it is unused though it was (the first of several devices'
// lists, sized from the bytes of all: a copy of this one's entries gives
// back the rest, which the runtime counts as heap).
func (s *eventStore) flat() []Event {
	unused := cap(s.cur) - len(s.cur)
	if len(s.chunks) == 0 && (s.reserved && unused <= len(s.cur)+eventChunk || unused <= cap(s.cur)/4) {
		// A reserved chunk's unused tail was never touched: it costs
		// address space, not memory, and copying would double the peak.
		s.cur = s.cur[:len(s.cur):len(s.cur)]
		return s.cur
	}
	flatCopies.Add(1)
	out := make([]Event, 0, s.n)
	for i, c := range s.chunks {
		out = append(out, c...)
		s.chunks[i] = nil // let the collector have it
	}
	out = append(out, s.cur...)
	s.chunks, s.cur = nil, out
	return out
}

// flatCopies counts the lists of entries flat copied, for tests: a
// sized list is filled in place.
var flatCopies atomic.Int64

// tupleArena holds the items of every tuple, back to back in chunks: tuples
// are immutable and often one per entry (segment_pool_id, and pool_id in
// trace entries after torch 2.11), so they get no arena object.
type tupleArena struct {
	chunks [][]value
}

const tupleChunk = 1 << 16

// add copies items and returns the tuple value.
func (a *tupleArena) add(items []value) value {
	c := len(a.chunks) - 1
	if c < 0 || len(a.chunks[c])+len(items) > cap(a.chunks[c]) {
		a.chunks = append(a.chunks, make([]value, 0, max(tupleChunk, len(items))))
		c++
	}
	off := len(a.chunks[c])
	a.chunks[c] = append(a.chunks[c], items...)
	return value{tag: tTuple, aux: uint32(len(items)), n: int64(c)<<32 | int64(off)}
}

// items returns the items of tuple t.
func (a *tupleArena) items(t value) []value {
	if t.aux == 0 {
		return nil
	}
	c, off := t.n>>32, t.n&(1<<32-1)
	return a.chunks[c][off : off+int64(t.aux)]
}

// memoChunk is the number of memo entries per chunk: the memo grows by
// chunks so that tens of millions of entries are never copied.
const memoChunkBits = 16
const memoChunk = 1 << memoChunkBits

// memo is the unpickler's memo: dense chunks for the indexes pickle
// assigns in order, a map for stray ones. count is Python's len(memo).
type memo struct {
	gen    uint64 // counts changes to entries already set (decode_fast.go's caches)
	chunks [][]memoWord
	// wide holds the dense entries whose value does not pack into a word
	// (negative or huge ints, floats, odd tuples), by index.
	wide   map[uint64]value
	n      uint64 // dense entries 0..n-1 are all set
	sparse map[uint64]value
	count  uint64
}

// memoWord is one dense memo entry packed into 8 bytes: the tag in the top
// 4 bits, then aux and n (see pack). A snapshot's memo holds several entries
// per trace entry (the dict, its new strings, its frames list), so this
// halves what the decoder holds beside the entries.
type memoWord uint64

const (
	wideTag   = 15 // the value is in memo.wide
	wordBits  = 60
	tupleBits = 48 // tTuple: aux (its length) above, n below
	refBits   = 36 // tEvent, tBlock, tSegment, tAnnot: aux (the list) above, n below
)

// pack returns v as a word, or false when it does not fit.
func pack(v value) (memoWord, bool) {
	t := uint64(v.tag)
	if t >= wideTag || v.n < 0 {
		return 0, false
	}
	n := uint64(v.n)
	switch v.tag {
	case tTuple:
		if v.aux >= 1<<(wordBits-tupleBits) || n >= 1<<tupleBits {
			return 0, false
		}
		return memoWord(t<<wordBits | uint64(v.aux)<<tupleBits | n), true
	case tEvent, tBlock, tSegment, tAnnot:
		if v.aux >= 1<<(wordBits-refBits) || n >= 1<<refBits {
			return 0, false
		}
		return memoWord(t<<wordBits | uint64(v.aux)<<refBits | n), true
	}
	if v.aux != 0 || n >= 1<<wordBits {
		return 0, false
	}
	return memoWord(t<<wordBits | n), true
}

// unpack is pack's inverse for a word that is not wide.
func (w memoWord) unpack() value {
	t := tag(w >> wordBits)
	p := uint64(w) & (1<<wordBits - 1)
	switch t {
	case tTuple:
		return value{tag: t, aux: uint32(p >> tupleBits), n: int64(p & (1<<tupleBits - 1))}
	case tEvent, tBlock, tSegment, tAnnot:
		return value{tag: t, aux: uint32(p >> refBits), n: int64(p & (1<<refBits - 1))}
	}
	return value{tag: t, n: int64(p)}
}

// at returns dense entry i (i < m.n).
func (m *memo) at(i uint64) value {
	w := m.chunks[i>>memoChunkBits][i&(memoChunk-1)]
	if w>>wordBits == wideTag {
		return m.wide[i]
	}
	return w.unpack()
}

// put sets dense entry i (i < m.n, or the slot being pushed).
func (m *memo) put(i uint64, v value) {
	w, ok := pack(v)
	if !ok {
		if m.wide == nil {
			m.wide = map[uint64]value{}
		}
		m.wide[i], w = v, wideTag<<wordBits
	} else if m.chunks[i>>memoChunkBits][i&(memoChunk-1)]>>wordBits == wideTag {
		delete(m.wide, i)
	}
	m.chunks[i>>memoChunkBits][i&(memoChunk-1)] = w
}

func (m *memo) get(i uint64) (value, bool) {
	if i < m.n {
		return m.at(i), true
	}
	v, ok := m.sparse[i]
	return v, ok
}

// set stores v at index i and reports whether i was new.
func (m *memo) set(i uint64, v value) bool {
	switch {
	case i < m.n:
		m.put(i, v)
		m.gen++
		return false
	case i == m.n && len(m.sparse) == 0:
		m.push(v)
		m.count++
		return true
	}
	_, had := m.sparse[i]
	if i == m.n {
		m.push(v)
		delete(m.sparse, i)
	} else {
		if m.sparse == nil {
			m.sparse = map[uint64]value{}
		}
		m.sparse[i] = v
	}
	// Absorb stray entries that now continue the dense run.
	for len(m.sparse) > 0 {
		w, ok := m.sparse[m.n]
		if !ok {
			break
		}
		delete(m.sparse, m.n)
		m.push(w)
	}
	if !had {
		m.count++
	}
	return !had
}

// pushAll pushes the values of ps in order.
func (m *memo) pushAll(ps []pendingMemo) {
	for i := 0; i < len(ps); {
		c, j := m.n>>memoChunkBits, m.n&(memoChunk-1)
		if c >= uint64(len(m.chunks)) || j >= uint64(len(m.chunks[c])) {
			m.grow()
			continue
		}
		chunk := m.chunks[c][j:]
		k := min(len(chunk), len(ps)-i)
		for x := range k {
			if w, ok := pack(ps[i+x].v); ok {
				chunk[x] = w
			} else {
				m.put(m.n+uint64(x), ps[i+x].v)
			}
		}
		i += k
		m.n += uint64(k)
		m.count += uint64(k)
	}
}

func (m *memo) push(v value) {
	c, j := m.n>>memoChunkBits, m.n&(memoChunk-1)
	if c >= uint64(len(m.chunks)) || j >= uint64(len(m.chunks[c])) {
		m.grow()
	}
	m.put(m.n, v) // a slot past m.n was never written: nothing wide to drop
	m.n++
}

// grow makes room for entry m.n: a new chunk, or a bigger first chunk (it
// starts small so that small pickles stay small).
func (m *memo) grow() {
	c := m.n >> memoChunkBits
	if c == uint64(len(m.chunks)) {
		size := memoChunk
		if c == 0 {
			size = 256
		}
		m.chunks = append(m.chunks, make([]memoWord, size))
		return
	}
	bigger := make([]memoWord, min(2*len(m.chunks[c]), memoChunk))
	copy(bigger, m.chunks[c])
	m.chunks[c] = bigger
}
