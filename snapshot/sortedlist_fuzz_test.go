package snapshot

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/memscope/memscope/internal/testenv"
)

// FuzzSortedList drives a sortedList with values and a sorted slice with
// the same operations, read from the input two bytes at a time (inserts
// at falling, rising and chosen keys, equal keys included; deletes; cuts;
// clones), with chunks of 3 to 512 entries, and compares contents, values,
// positions and ranks after every operation: the chunks' room at both
// ends moves values with their keys.
func FuzzSortedList(f *testing.F) {
	testenv.FuzzMinimize(f, 2*time.Second)
	f.Add([]byte{0, 1, 0, 2, 0, 3, 1, 0, 2, 5})
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 4, 2})
	f.Add(slices.Repeat([]byte{1, 9, 0, 200}, 300))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 1 || len(data) > 1<<14 {
			return
		}
		defer func(n int) { chunkMax = n }(chunkMax)
		chunkMax = []int{3, 4, 8, 512}[data[0]%4]
		data = data[1:]
		var l sortedList[int]
		var want []entry[int]
		fall, rise := uint64(1<<40), uint64(1<<40)
		check := func(op int) {
			t.Helper()
			var got []entry[int]
			l.each(func(e *entry[int]) { got = append(got, *e) })
			if !slices.Equal(got, want) || l.len() != len(want) {
				t.Fatalf("op %d: list %v (len %d), want %v", op, got, l.len(), want)
			}
			for c := range l.chunks {
				ch := l.chunks[c].e
				if len(ch) == 0 || len(ch) > chunkMax || l.last[c] != ch[len(ch)-1].key {
					t.Fatalf("op %d: chunk %d of %d entries, last %d", op, c, len(ch), l.last[c])
				}
			}
		}
		for op := 0; op+1 < len(data); op += 2 {
			k := uint64(data[op+1])
			switch data[op] % 6 {
			case 0: // insert a new key before its equals
				fall--
				keys := []uint64{fall, rise + 1, k}
				key := keys[int(k)%3]
				if key == rise+1 {
					rise++
				}
				l.insert(key, op)
				i, _ := slices.BinarySearchFunc(want, key, func(e entry[int], k uint64) int {
					return cmp.Compare(e.key, k)
				})
				want = slices.Insert(want, i, entry[int]{val: op, key: key})
			case 1: // insert after the equals of k, through insertAt's position
				p := l.upperBound(k)
				got := l.insertAt(p, k, op)
				if e := l.at(got); e.key != k || e.val != op {
					t.Fatalf("op %d: insertAt returned a position holding %v", op, *e)
				}
				i := len(want)
				for j, e := range want {
					if e.key > k {
						i = j
						break
					}
				}
				want = slices.Insert(want, i, entry[int]{val: op, key: k})
			case 2, 3: // delete the first entry ≥ k, and check what follows
				if data[op]%6 == 3 && len(want) > 0 {
					k = want[int(k)%len(want)].key
				}
				p := l.lowerBound(k)
				if !l.valid(p) {
					continue
				}
				i := 0
				for i < len(want) && want[i].key < k {
					i++
				}
				next := l.deleteAt(p)
				want = slices.Delete(want, i, i+1)
				if i < len(want) != l.valid(next) || l.valid(next) && *l.at(next) != want[i] {
					t.Fatalf("op %d: deleteAt's next position is wrong", op)
				}
			case 4: // cut [k, k+span)
				hi := k + uint64(data[op]/6)
				var cut []entry[int]
				l.cut(k, hi, func(e *entry[int]) { cut = append(cut, *e) })
				var kept, gone []entry[int]
				for _, e := range want {
					if e.key >= k && e.key < hi {
						gone = append(gone, e)
					} else {
						kept = append(kept, e)
					}
				}
				if !slices.Equal(cut, gone) {
					t.Fatalf("op %d: cut [%d, %d) gave %v, want %v", op, k, hi, cut, gone)
				}
				want = kept
			case 5: // clone, rank, and walk back from the end
				c := l.clone()
				l = c
				r := 0
				for r < len(want) && want[r].key < k {
					r++
				}
				if got := l.rank(k); got != r {
					t.Fatalf("op %d: rank(%d) = %d, want %d", op, k, got, r)
				}
				p, n := l.end(), len(want)
				for {
					q, ok := l.prev(p)
					if !ok {
						break
					}
					n--
					if n < 0 || *l.at(q) != want[n] {
						t.Fatalf("op %d: walking back, entry %d wrong", op, n)
					}
					p = q
				}
				if n != 0 {
					t.Fatalf("op %d: walking back stopped %d entries short", op, n)
				}
			}
			check(op)
		}
	})
}
