package snapshot

// addrMap maps block addresses to int32 values: an open-addressing hash
// table with linear probing and backward-shift deletion. Replay does a few
// lookups per event over a live set that stays small (hundreds to
// thousands of blocks), so a table that fits in cache beats Go's map by a
// wide margin. Address 0 marks an empty slot: no block lives at address 0.
type addrMap struct {
	keys []uint64
	vals []int32
	n    int
	mask uint64
}

func newAddrMap(hint int) *addrMap {
	size := 64
	for size < 2*hint {
		size *= 2
	}
	return &addrMap{keys: make([]uint64, size), vals: make([]int32, size), mask: uint64(size - 1)}
}

func (m *addrMap) slot(k uint64) uint64 {
	return ((k >> 9) * 0x9E3779B97F4A7C15) >> 20 & m.mask
}

// get returns the value of k.
func (m *addrMap) get(k uint64) (int32, bool) {
	for i := m.slot(k); ; i = (i + 1) & m.mask {
		switch m.keys[i] {
		case k:
			return m.vals[i], true
		case 0:
			return 0, false
		}
	}
}

// put sets k to v.
func (m *addrMap) put(k uint64, v int32) {
	if k == 0 {
		panic("invariant violation: addrMap key 0")
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

// del removes k, shifting later entries of its probe run back so lookups
// never need tombstones.
func (m *addrMap) del(k uint64) {
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

func (m *addrMap) grow() {
	old, oldv := m.keys, m.vals
	m.keys = make([]uint64, 2*len(old))
	m.vals = make([]int32, 2*len(old))
	m.mask = uint64(len(m.keys) - 1)
	m.n = 0
	for i, k := range old {
		if k != 0 {
			m.put(k, oldv[i])
		}
	}
}

// each calls fn for every entry, in no particular order.
func (m *addrMap) each(fn func(k uint64, v int32)) {
	for i, k := range m.keys {
		if k != 0 {
			fn(k, m.vals[i])
		}
	}
}

func (m *addrMap) len() int { return m.n }
