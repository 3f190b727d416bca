package addrmap

import (
	"math/rand"
	"testing"
)

// TestMap drives Map and Go's map with the same random operations
// on clustered, 512-aligned addresses (as the allocator hands out) and
// compares them after every step.
func TestMap(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	m := New(0)
	ref := map[uint64]int32{}
	base := uint64(0x7f0000000000)
	for step := 0; step < 200000; step++ {
		k := base + uint64(r.Intn(4096))*512
		if r.Intn(512) == 0 {
			k = 0 // a damaged trace's address
		}
		switch r.Intn(3) {
		case 0, 1:
			v := int32(r.Intn(1 << 20))
			m.Put(k, v)
			ref[k] = v
		case 2:
			m.Del(k)
			delete(ref, k)
		}
		if step%997 == 0 || step > 199000 {
			if m.Len() != len(ref) {
				t.Fatalf("step %d: len = %d, want %d", step, m.Len(), len(ref))
			}
			for k, v := range ref {
				if got, ok := m.Get(k); !ok || got != v {
					t.Fatalf("step %d: get(%#x) = %d, %v; want %d", step, k, got, ok, v)
				}
			}
			n := 0
			m.Each(func(k uint64, v int32) {
				n++
				if ref[k] != v {
					t.Fatalf("step %d: each gave %#x=%d, want %d", step, k, v, ref[k])
				}
			})
			if n != len(ref) {
				t.Fatalf("step %d: each visited %d, want %d", step, n, len(ref))
			}
		}
	}
}

// TestPrefetch prefetches the slot of every key, present or not, of a
// table past prefetchMin (where it reaches the instruction) and of a small
// one (where it returns at once): it reads no slot out of range and
// changes nothing.
func TestPrefetch(t *testing.T) {
	for _, n := range []int{10, prefetchMin} {
		m := New(n)
		for i := range n {
			m.Put(uint64(i)<<21, int32(i))
		}
		if n == prefetchMin && len(m.keys) < prefetchMin {
			t.Fatalf("a table of %d slots for %d keys: below prefetchMin", len(m.keys), n)
		}
		for i := range 2 * n {
			m.Prefetch(uint64(i) << 21)
			m.Prefetch(^uint64(i))
		}
		for i := range n {
			if v, ok := m.Get(uint64(i) << 21); !ok || v != int32(i) {
				t.Fatalf("after prefetching, key %d: %d, %v", i, v, ok)
			}
		}
		if m.Len() != n {
			t.Fatalf("after prefetching, %d keys, want %d", m.Len(), n)
		}
	}
}
