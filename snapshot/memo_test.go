package snapshot

import (
	"math"
	"testing"
)

// Every value comes back from the memo as it went in, packed into a word
// or kept in the wide map, also when an entry is overwritten either way.
func TestMemoPacking(t *testing.T) {
	vals := []value{
		{}, boolValue(true), intValue(0), intValue(7), intValue(-1), intValue(math.MaxInt64), intValue(1 << 60),
		{tag: tUint64, n: -2}, floatValue(1.5), floatValue(-2), {tag: tStr, n: 42}, {tag: tBytes, n: 3},
		{tag: tObj, n: 1<<32 + 5}, {tag: tFrame, n: 9}, {tag: tStack, n: 0},
		{tag: tTuple, aux: 2, n: 357<<32 | 65535}, {tag: tTuple, aux: 1 << 13, n: 1}, {tag: tTuple, aux: 3, n: 1 << 50},
		{tag: tEvent, aux: 12, n: 11_737_925}, {tag: tEvent, aux: 1 << 25, n: 1}, {tag: tBlock, aux: 1, n: 1 << 40},
		{tag: tSegment, aux: 3, n: 4}, {tag: tAnnot, aux: 0, n: 1},
	}
	var m memo
	for _, v := range vals {
		m.push(v)
		m.count++
	}
	for i, v := range vals {
		if got := m.at(uint64(i)); got != v {
			t.Errorf("entry %d: got %+v, want %+v", i, got, v)
		}
	}
	// Overwrite each with the value of its mirror: packed over wide and back.
	for i := range vals {
		m.set(uint64(i), vals[len(vals)-1-i])
	}
	for i := range vals {
		if got, want := m.at(uint64(i)), vals[len(vals)-1-i]; got != want {
			t.Errorf("entry %d after set: got %+v, want %+v", i, got, want)
		}
	}
	if m.gen != uint64(len(vals)) {
		t.Errorf("gen = %d, want %d (one per overwrite)", m.gen, len(vals))
	}
	var wide int
	for _, v := range vals {
		if _, ok := pack(v); !ok {
			wide++
		}
	}
	if len(m.wide) != wide || wide < 6 {
		t.Errorf("%d wide entries, want %d (at least 6)", len(m.wide), wide)
	}
}
