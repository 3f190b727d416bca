// Package addrmap maps block addresses to int32 values, for the loops that
// look a block up by address at every trace entry (snapshot's replay, the
// allocator's pairing of frees with their allocs).
package addrmap

import "unsafe"

// Map maps block addresses to int32 values: an open-addressing hash table
// with linear probing and backward-shift deletion. A replay does a few
// lookups per entry over a live set that stays small (hundreds to
// thousands of blocks), so a table that fits in cache beats Go's map by a
// wide margin. Address 0 marks an empty slot; key 0 (no block lives
// there, but a damaged trace may name it) is kept beside the table.
type Map struct {
	keys  []uint64
	vals  []int32
	n     int
	mask  uint64
	zero  bool  // key 0 is set
	zeroV int32 // its value
}

// New returns an empty map with room for hint keys.
func New(hint int) *Map {
	size := 64
	for size < 2*hint {
		size *= 2
	}
	return &Map{keys: make([]uint64, size), vals: make([]int32, size), mask: uint64(size - 1)}
}

func (m *Map) slot(k uint64) uint64 {
	return ((k >> 9) * 0x9E3779B97F4A7C15) >> 20 & m.mask
}

// Get returns the value of k.
func (m *Map) Get(k uint64) (int32, bool) {
	if k == 0 {
		return m.zeroV, m.zero
	}
	for i := m.slot(k); ; i = (i + 1) & m.mask {
		switch m.keys[i] {
		case k:
			return m.vals[i], true
		case 0:
			return 0, false
		}
	}
}

// Put sets k to v.
func (m *Map) Put(k uint64, v int32) {
	if k == 0 {
		if !m.zero {
			m.n++
		}
		m.zero, m.zeroV = true, v
		return
	}
	if 2*(m.n+1) > len(m.keys) {
		m.grow()
	}
	for i := m.slot(k); ; i = (i + 1) & m.mask {
		switch m.keys[i] {
		case k:
			m.vals[i] = v
			return
		case 0:
			m.keys[i], m.vals[i] = k, v
			m.n++
			return
		}
	}
}

// Del removes k, shifting later entries of its probe run back so lookups
// never need tombstones.
func (m *Map) Del(k uint64) {
	if k == 0 {
		if m.zero {
			m.n--
		}
		m.zero, m.zeroV = false, 0
		return
	}
	i := m.slot(k)
	for ; m.keys[i] != k; i = (i + 1) & m.mask {
		if m.keys[i] == 0 {
			return
		}
	}
	m.n--
	for j := (i + 1) & m.mask; m.keys[j] != 0; j = (j + 1) & m.mask {
		h := m.slot(m.keys[j])
		// Move j back into the hole at i unless its home h lies cyclically in (i, j].
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			m.keys[i], m.vals[i] = m.keys[j], m.vals[j]
			i = j
		}
	}
	m.keys[i], m.vals[i] = 0, 0
}

func (m *Map) grow() {
	old, oldv := m.keys, m.vals
	m.keys = make([]uint64, 2*len(old))
	m.vals = make([]int32, 2*len(old))
	m.mask = uint64(len(m.keys) - 1)
	if m.zero {
		m.n = 1
	} else {
		m.n = 0
	}
	for i, k := range old {
		if k != 0 {
			m.Put(k, oldv[i])
		}
	}
}

// Each calls fn for every entry, in no particular order.
func (m *Map) Each(fn func(k uint64, v int32)) {
	if m.zero {
		fn(0, m.zeroV)
	}
	for i, k := range m.keys {
		if k != 0 {
			fn(k, m.vals[i])
		}
	}
}

// Len returns the number of keys.
func (m *Map) Len() int { return m.n }

// Prefetch asks the processor to bring the slot where k's probe starts
// into cache, for a loop that knows which keys it will look up next (a
// replay reads its trace in order): the lookups of a table larger than the
// processor's caches then overlap their misses. A table that fits in cache
// needs none, and skips the call.
func (m *Map) Prefetch(k uint64) {
	if len(m.keys) < prefetchMin {
		return
	}
	s := m.slot(k)
	prefetch2(uintptr(unsafe.Pointer(&m.keys[s])), uintptr(unsafe.Pointer(&m.vals[s])))
}

// PrefetchAhead is how many entries ahead of its lookup a loop over a
// trace asks for a key's slot: far enough for the line to arrive, near
// enough that it is still in cache when the lookup comes.
const PrefetchAhead = 16

// prefetchMin is the table size (slots) from which Prefetch prefetches:
// 768 KiB of keys and values, about a core's second-level cache.
const prefetchMin = 1 << 16
