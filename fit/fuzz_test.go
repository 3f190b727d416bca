package fit

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// mutateTrace applies the mutations data encodes, 8 bytes each, to a copy
// of s's device 0 trace: what makes two recordings disagree (requests
// inserted, dropped, resized, moved to another stack or action) and what
// breaks a recording (a truncated trace, a free of nothing).
func mutateTrace(s *snapshot.Snapshot, data []byte) *snapshot.Snapshot {
	c := *s
	tr := slices.Clone(s.Traces[0])
	for len(data) >= 8 {
		op, arg := data[0], binary.LittleEndian.Uint32(data[1:5])
		v := int64(binary.LittleEndian.Uint16(data[5:7])) << (data[7] % 36)
		data = data[8:]
		if len(tr) == 0 {
			break
		}
		i := int(arg) % len(tr)
		switch op % 8 {
		case 0:
			tr = slices.Delete(tr, i, i+1)
		case 1:
			tr = slices.Insert(tr, i, tr[int(v)%len(tr)])
		case 2:
			tr[i].Size = v
		case 3:
			tr[i].Stack = tr[int(v)%len(tr)].Stack
		case 4:
			tr[i].Action = snapshot.Action(int(v) % 12)
		case 5:
			tr[i].Addr += uint64(v)
		case 6:
			tr = tr[:i]
		case 7:
			tr[i].Stream = v % 3
		}
	}
	c.Traces = [][]snapshot.Event{tr}
	return &c
}

// FuzzFit fits mutated pairs of the Llama's recordings (fixtures/fit-lm at
// batches 1, 2 and 4) with mutated batches, and bisects the frontier under
// a cap: New refuses with ErrRefused or a what-if's error, never panics,
// and a frontier it finds is consistent (the largest fit fits, the batch
// above it does not, every size at least one byte).
func FuzzFit(f *testing.F) {
	var srcs []*snapshot.Snapshot
	for _, b := range []string{"b1", "b2", "b4"} {
		s, err := snapshot.Open(filepath.Join("../fixtures/fit-lm", b, "snapshot.pickle.gz"))
		if err != nil {
			f.Fatal(err)
		}
		srcs = append(srcs, s)
	}
	f.Add(uint8(1), uint8(2), uint8(2), uint8(4), []byte{}, []byte{})
	f.Add(uint8(0), uint8(2), uint8(1), uint8(4), []byte{2, 40, 0, 0, 0, 1, 0, 30}, []byte{0, 5, 0, 0, 0, 0, 0, 0})
	f.Add(uint8(1), uint8(1), uint8(3), uint8(3), []byte{}, []byte{1, 9, 0, 0, 0, 7, 0, 0, 3, 2, 0, 0, 0, 1, 0, 0})
	f.Add(uint8(2), uint8(0), uint8(9), uint8(1), []byte{6, 200, 0, 0, 0, 0, 0, 0}, []byte{4, 3, 0, 0, 0, 1, 0, 0})
	f.Fuzz(func(t *testing.T, a, b, na, nb uint8, da, db []byte) {
		ins := []Input{
			{Path: "a", Snap: mutateTrace(srcs[int(a)%len(srcs)], da), Batch: int(na % 16)},
			{Path: "b", Snap: mutateTrace(srcs[int(b)%len(srcs)], db), Batch: int(nb % 16)},
		}
		m, err := New(ins, 0, Options{MemoryLimit: 4 << 30})
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("New: %v is not a refusal", err)
			}
			return
		}
		for i := range m.Requests {
			if s := m.Requests[i].SizeAt(64); s < 1 {
				t.Fatalf("request %d: size %d at 64", i, s)
			}
		}
		fr, err := m.Frontier(m.RecordedSettings(), 16)
		if err != nil {
			return // a what-if the model cannot drive, with its reason
		}
		if fr.LargestFit < 0 || fr.LargestFit > 16 {
			t.Fatalf("largest fit %d outside [0, 16]", fr.LargestFit)
		}
		if fr.LargestFit > 0 && (fr.Fit == nil || !fr.Fit.Fits) {
			t.Fatalf("largest fit %d: %+v does not fit", fr.LargestFit, fr.Fit)
		}
		if fr.FirstFail != nil && (fr.FirstFail.Fits || fr.FirstFail.Batch != fr.LargestFit+1) {
			t.Fatalf("first fail %+v after largest fit %d", fr.FirstFail, fr.LargestFit)
		}
		if !slices.IsSortedFunc(fr.Points, func(x, y *Point) int { return x.Batch - y.Batch }) {
			t.Fatal("points not sorted by batch")
		}
	})
}
