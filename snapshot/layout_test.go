package snapshot

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLayoutMatchesSlices drives the layout and the slice-based one it
// replaced (layout_oracle_test.go) with the same random operations —
// overlapping, empty and partial ranges, blocks inside and outside them,
// duplicate and unknown blocks — and compares every answer, so the
// ordered lists change no number a replay computes.
func TestLayoutMatchesSlices(t *testing.T) {
	r := rounding{maxSplit: 1<<63 - 1}
	defer func(n int) { chunkMax = n }(chunkMax)
	for seed := range uint64(40) {
		chunkMax = 512
		if seed%2 == 1 {
			chunkMax = 3 // many chunks per list: splits, merges, cuts across chunks
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		var nl layout
		var ol oldLayout
		span := uint64(64 + rng.IntN(4000)) // address space in 512 B units
		big, steps := 2048, 3000
		if seed >= 30 { // segments of thousands of blocks: many chunks each
			span, big, steps = 20000, 20000, 20000
		}
		addr := func() uint64 { return 512 * uint64(rng.Uint64N(span)) }
		for step := range steps {
			a := addr()
			var sz uint64
			switch rng.IntN(4) {
			case 0:
				sz = 0
			case 1:
				sz = 512 * uint64(1+rng.IntN(4))
			default:
				sz = 512 * uint64(1+rng.IntN(big))
			}
			op := rng.IntN(10)
			if seed >= 30 { // mostly blocks, few range changes, small removes
				switch k := rng.IntN(100); {
				case k < 3:
					op = 0
				case k < 5:
					op, sz = 2, 512*uint64(1+rng.IntN(64))
				case k < 80:
					op = 3
				case k < 88:
					op = 6
				default:
					op = 8
				}
			}
			switch op {
			case 0, 1:
				exp := rng.IntN(3) == 0
				if g, w := nl.add(a, a+sz, exp), ol.add(a, a+sz, exp); g != w {
					t.Fatalf("seed %d step %d: add(%#x, %#x) = %v, want %v", seed, step, a, a+sz, g, w)
				}
			case 2:
				if g, w := nl.remove(a, a+sz), ol.remove(a, a+sz); g != w {
					t.Fatalf("seed %d step %d: remove(%#x, %#x) = %d, want %d", seed, step, a, a+sz, g, w)
				}
			case 3, 4, 5:
				nl.insertBlock(a)
				ol.insertBlock(a)
			case 6, 7:
				nl.removeBlock(a)
				ol.removeBlock(a)
			default:
				req := int64(sz) + int64(rng.IntN(600)) + 1<<20
				gs, ge := nl.blockSize(&r, a, req)
				ws, we := ol.blockSize(&r, a, req)
				if gs != ws || ge != we {
					t.Fatalf("seed %d step %d: blockSize(%#x, %d) = %d, %v, want %d, %v", seed, step, a, req, gs, ge, ws, we)
				}
			}
			gok := nl.find(a) != nil
			if wok := ol.find(a) >= 0; gok != wok {
				t.Fatalf("seed %d step %d: find(%#x) = %v, want %v", seed, step, a, gok, wok)
			}
			if step%97 == 0 || step == steps-1 {
				if g, w := nl.ranges(), ol.rangesOld(); !slices.Equal(g, w) {
					t.Fatalf("seed %d step %d: ranges = %v, want %v", seed, step, g, w)
				}
				var want []uint64
				for _, s := range ol.segs {
					want = append(want, s.active...)
				}
				var got []uint64
				nl.segs.each(func(s *entry[segVal]) {
					s.val.active.each(func(e *entry[struct{}]) { got = append(got, e.key) })
				})
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: active = %v, want %v", seed, step, got, want)
				}
				if testing.Verbose() && step == steps-1 {
					maxc := 0
					nl.segs.each(func(s *entry[segVal]) { maxc = max(maxc, len(s.val.active.chunks)) })
					t.Logf("seed %d: %d ranges, %d blocks, at most %d chunks in a range", seed, nl.segs.len(), len(got), maxc)
				}
				c := nl.clone()
				if !slices.Equal(c.ranges(), nl.ranges()) {
					t.Fatalf("seed %d step %d: clone differs", seed, step)
				}
			}
		}
	}
}

// TestSortedListChunks fills a list past many chunks at falling, rising
// and random keys, deletes half, and checks order and length.
func TestSortedListChunks(t *testing.T) {
	for _, n := range []int{512, 3} {
		chunkMax = n
		testSortedList(t)
	}
	chunkMax = 512
}

func testSortedList(t *testing.T) {
	var l sortedList[struct{}]
	var want []uint64
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		for _, k := range []uint64{uint64(100000 - i), uint64(200000 + i), 300000 + rng.Uint64N(1<<20)} {
			if p := l.lowerBound(k); l.valid(p) && l.at(p).key == k {
				continue
			}
			l.insert(k, struct{}{})
			want = append(want, k)
		}
	}
	slices.Sort(want)
	for i := 0; i < len(want); i += 2 {
		p := l.lowerBound(want[i])
		l.deleteAt(p)
	}
	var keep []uint64
	for i := 1; i < len(want); i += 2 {
		keep = append(keep, want[i])
	}
	var got []uint64
	l.each(func(e *entry[struct{}]) { got = append(got, e.key) })
	if !slices.Equal(got, keep) || l.len() != len(keep) {
		t.Fatalf("after deletes: %d entries (len %d), want %d", len(got), l.len(), len(keep))
	}
	lo, hi := keep[len(keep)/3], keep[2*len(keep)/3]
	if r := l.rank(lo); r != len(keep)/3 {
		t.Errorf("rank(%d) = %d, want %d", lo, r, len(keep)/3)
	}
	var cutOut []uint64
	l.cut(lo, hi, func(e *entry[struct{}]) { cutOut = append(cutOut, e.key) })
	if !slices.Equal(cutOut, keep[len(keep)/3:2*len(keep)/3]) {
		t.Errorf("cut(%d, %d) removed %d entries, want %d", lo, hi, len(cutOut), 2*len(keep)/3-len(keep)/3)
	}
	keep = append(keep[:len(keep)/3:len(keep)/3], keep[2*len(keep)/3:]...)
	got = got[:0]
	l.each(func(e *entry[struct{}]) { got = append(got, e.key) })
	if !slices.Equal(got, keep) || l.len() != len(keep) {
		t.Fatalf("after cut: %d entries (len %d), want %d", len(got), l.len(), len(keep))
	}
	for _, ch := range l.chunks {
		if len(ch.e) == 0 || len(ch.e) > chunkMax {
			t.Fatalf("a chunk of %d entries", len(ch.e))
		}
	}
}
