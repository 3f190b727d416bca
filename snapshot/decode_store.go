package snapshot

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

	// The first list of entries of a pickle of known size is sized once
	// from its first entries: sizable from its start offset, reserved
	// when done (see decoder.reserveEvents).
	sizable, reserved bool
	start             int64
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
		s.cur = make([]Event, 0, 64) // short traces stay small
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
// more than a quarter of it is unused and it was not reserved.
func (s *eventStore) flat() []Event {
	if len(s.chunks) == 0 && (s.reserved || cap(s.cur)-len(s.cur) <= cap(s.cur)/4) {
		// A reserved chunk's unused tail was never touched: it costs
		// address space, not memory, and copying would double the peak.
		s.cur = s.cur[:len(s.cur):len(s.cur)]
		return s.cur
	}
	out := make([]Event, 0, s.n)
	for i, c := range s.chunks {
		out = append(out, c...)
		s.chunks[i] = nil // let the collector have it
	}
	out = append(out, s.cur...)
	s.chunks, s.cur = nil, out
	return out
}

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
	chunks [][]value
	n      uint64 // dense entries 0..n-1 are all set
	sparse map[uint64]value
	count  uint64
}

func (m *memo) get(i uint64) (value, bool) {
	if i < m.n {
		return m.chunks[i>>memoChunkBits][i&(memoChunk-1)], true
	}
	v, ok := m.sparse[i]
	return v, ok
}

// set stores v at index i and reports whether i was new.
func (m *memo) set(i uint64, v value) bool {
	switch {
	case i < m.n:
		m.chunks[i>>memoChunkBits][i&(memoChunk-1)] = v
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
			chunk[x] = ps[i+x].v
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
	m.chunks[c][j] = v
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
		m.chunks = append(m.chunks, make([]value, size))
		return
	}
	bigger := make([]value, min(2*len(m.chunks[c]), memoChunk))
	copy(bigger, m.chunks[c])
	m.chunks[c] = bigger
}
