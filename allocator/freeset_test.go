package allocator

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The free set in runs must hold what one sorted slice would, through
// inserts and removes that split runs and empty them, and find and step
// the same way.
func TestFreeSetRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	seg := &segment{}
	var f freeSet
	var want []*block // sorted
	var all []*block
	for i := range 6000 {
		// Addresses far apart: a shrunk block's address meets no other's.
		all = append(all, &block{addr: uint64(i) << 32, size: int64(rng.IntN(40)) << 9, stream: int64(rng.IntN(3)), seg: seg})
	}
	check := func(step int) {
		t.Helper()
		if got := f.all(); !slices.Equal(got, want) || f.len() != len(want) {
			t.Fatalf("step %d: %d blocks, want %d in order", step, f.len(), len(want))
		}
		for _, ch := range f.chunks {
			if len(ch) == 0 || len(ch) > runMax {
				t.Fatalf("step %d: a run of %d", step, len(ch))
			}
		}
		// lowerBound and stepping, against a search of the slice.
		stream, size := int64(rng.IntN(3)), int64(rng.IntN(42))<<9
		k, _ := slices.BinarySearchFunc(want, [2]int64{stream, size}, func(b *block, key [2]int64) int {
			if b.stream != key[0] {
				if uint64(b.stream) < uint64(key[0]) {
					return -1
				}
				return 1
			}
			if b.size < key[1] {
				return -1
			}
			return 1
		})
		p := f.lowerBound(stream, size)
		for j := k; j < len(want) && j < k+3; j++ {
			if !f.valid(p) || f.at(p) != want[j] {
				t.Fatalf("step %d: place %d after lowerBound(%d, %d) differs", step, j, stream, size)
			}
			p = f.next(p)
		}
		if k > 0 {
			if q := f.prev(f.lowerBound(stream, size)); !f.valid(q) || f.at(q) != want[k-1] {
				t.Fatalf("step %d: the place before lowerBound differs", step)
			}
		} else if f.valid(f.prev(f.lowerBound(stream, size))) {
			t.Fatalf("step %d: a place before the first", step)
		}
	}
	for step := range 40000 {
		b := all[rng.IntN(len(all))]
		if b.inSet && rng.IntN(4) == 0 {
			// A merge: the block grows, from either end, and takes its
			// own entry up (rekeyUp), as freeBlock does.
			at := f.placeOf(b)
			i := slices.Index(want, b)
			want = slices.Delete(want, i, i+1)
			grow := int64(1+rng.IntN(8)) << 9
			b.size += grow
			if rng.IntN(2) == 0 {
				b.addr -= uint64(grow)
			}
			f.rekeyUp(at, b)
			i, _ = slices.BinarySearchFunc(want, b, f.compare)
			want = slices.Insert(want, i, b)
		} else if b.inSet && b.size > 512 && rng.IntN(3) == 0 {
			// A split's rest: the block shrinks from its low end and takes
			// its own entry down (rekeyDown), as allocFoundAt does.
			at := f.placeOf(b)
			i := slices.Index(want, b)
			want = slices.Delete(want, i, i+1)
			cut := int64(1+rng.IntN(int(b.size>>9)-1)) << 9
			b.size -= cut
			b.addr += uint64(cut)
			f.rekeyDown(at, b)
			i, _ = slices.BinarySearchFunc(want, b, f.compare)
			want = slices.Insert(want, i, b)
		} else if b.inSet {
			f.remove(b)
			i := slices.Index(want, b)
			want = slices.Delete(want, i, i+1)
		} else if step < 30000 || rng.IntN(4) == 0 {
			f.insert(b)
			i, _ := slices.BinarySearchFunc(want, b, f.compare)
			want = slices.Insert(want, i, b)
		}
		if step%97 == 0 {
			check(step)
		}
	}
	check(-1)
	f.resort()
	check(-2)
}

// freeKey.before is the comparator's order written as one subtraction: it
// must agree with the order field by field (stream unsigned, size and tie
// signed, address unsigned) on keys that tie in any prefix of the fields,
// at the ends of each field's range.
func TestFreeKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	u := []uint64{0, 1, 2, 1 << 62, 1<<63 - 1, 1 << 63, 1<<64 - 1}
	pick := func() freeKey {
		return freeKey{stream: u[rng.IntN(len(u))], size: int64(u[rng.IntN(len(u))]), tie: int64(u[rng.IntN(len(u))]), addr: u[rng.IntN(len(u))]}
	}
	want := func(x, y freeKey) bool {
		switch {
		case x.stream != y.stream:
			return x.stream < y.stream
		case x.size != y.size:
			return x.size < y.size
		case x.tie != y.tie:
			return x.tie < y.tie
		}
		return x.addr < y.addr
	}
	for range 200000 {
		x, y := pick(), pick()
		if rng.IntN(2) == 0 {
			y.stream = x.stream
			if rng.IntN(2) == 0 {
				y.size = x.size
				if rng.IntN(2) == 0 {
					y.tie = x.tie
				}
			}
		}
		if got := x.before(&y); got != want(x, y) {
			t.Fatalf("%+v before %+v = %v, want %v", x, y, got, want(x, y))
		}
	}
}
