package fit

// maxEdits bounds the alignment of two recordings' request streams: past
// this many requests in one and not the other they are taken as two
// different programs (and the alignment's memory, O(edits²), stays
// bounded).
const maxEdits = 3000

// align pairs a's requests with b's by the longest common subsequence
// under eq (Myers' O((N+M)·D) diff): match[i] is the index in b paired
// with a's i-th request, -1 for none. ok is false when the two differ in
// more than maxEdits requests.
func align(n, m int, eq func(i, j int) bool) (match []int32, edits int, ok bool) {
	match = make([]int32, n)
	for i := range match {
		match[i] = -1
	}
	// The common prefix and suffix first: recordings of one program at
	// two batches mostly agree, and this keeps the diff to the middle.
	pre := 0
	for pre < n && pre < m && eq(pre, pre) {
		match[pre] = int32(pre)
		pre++
	}
	suf := 0
	for suf < n-pre && suf < m-pre && eq(n-1-suf, m-1-suf) {
		match[n-1-suf] = int32(m - 1 - suf)
		suf++
	}
	an, bm := n-pre-suf, m-pre-suf
	if an == 0 || bm == 0 {
		return match, an + bm, an+bm <= maxEdits
	}
	limit := min(maxEdits, an+bm)
	off := limit + 1 // diagonal k = x - y, |k| ≤ d ≤ limit
	v := make([]int32, 2*limit+3)
	var trace [][]int32
	x0, y0 := pre, pre
	found := -1
	for d := 0; d <= limit && found < 0; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = int(v[off+k+1]) // down: a request of b only
			} else {
				x = int(v[off+k-1]) + 1 // right: a request of a only
			}
			y := x - k
			for x < an && y < bm && eq(x0+x, y0+y) {
				x++
				y++
			}
			v[off+k] = int32(x)
			if x >= an && y >= bm && found < 0 {
				found = d
			}
		}
		// This round's diagonals, for the way back.
		snap := make([]int32, d+1)
		for k := -d; k <= d; k += 2 {
			snap[(k+d)/2] = v[off+k]
		}
		trace = append(trace, snap)
	}
	if found < 0 {
		return match, maxEdits + 1, false
	}
	// Walk back from (an, bm), marking the diagonal runs as matches.
	at := func(d, k int) int {
		if k < -d || k > d {
			return -1
		}
		return int(trace[d][(k+d)/2])
	}
	x, y := an, bm
	for d := found; d > 0; d-- {
		k := x - y
		var pk int
		if k == -d || k != d && at(d-1, k-1) < at(d-1, k+1) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(d-1, pk)
		py := px - pk
		// the snake from the move's end to (x, y)
		sx := px
		if pk == k-1 { // right
			sx = px + 1
		}
		sy := sx - k
		for x > sx && y > sy {
			x--
			y--
			match[x0+x] = int32(y0 + y)
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		x--
		y--
		match[x0+x] = int32(y0 + y)
	}
	return match, found, true
}
