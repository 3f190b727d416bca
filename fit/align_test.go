package fit

import (
	"math/rand/v2"
	"testing"
)

// lcsLen is the longest common subsequence's length by dynamic
// programming: align's matches must be as many, in order, each equal.
func lcsLen(a, b []int) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func TestAlignIsLCS(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		n, m := r.IntN(40), r.IntN(40)
		alpha := 1 + r.IntN(4)
		a, b := make([]int, n), make([]int, m)
		for i := range a {
			a[i] = r.IntN(alpha)
		}
		for i := range b {
			b[i] = r.IntN(alpha)
		}
		if trial%3 == 0 && n > 0 { // mostly equal, as two batches of one program
			b = append([]int(nil), a...)
			for k := 0; k < 3 && len(b) > 0; k++ {
				i := r.IntN(len(b))
				if r.IntN(2) == 0 {
					b = append(b[:i], b[i+1:]...)
				} else {
					b = append(b[:i], append([]int{r.IntN(alpha)}, b[i:]...)...)
				}
			}
			m = len(b)
		}
		match, _, ok := align(n, m, func(i, j int) bool { return a[i] == b[j] })
		if !ok {
			t.Fatalf("align refused %v %v", a, b)
		}
		got, last := 0, -1
		for i, j := range match {
			if j < 0 {
				continue
			}
			if int(j) <= last || a[i] != b[j] {
				t.Fatalf("trial %d: a[%d] paired with b[%d] after b[%d] (%v / %v)", trial, i, j, last, a, b)
			}
			last = int(j)
			got++
		}
		if want := lcsLen(a, b); got != want {
			t.Fatalf("trial %d: %d pairs, the LCS has %d (%v / %v)", trial, got, want, a, b)
		}
	}
}
