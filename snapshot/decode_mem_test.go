package snapshot

import (
	"bytes"
	"testing"

	"github.com/memscope/memscope/internal/pickle"
)

// TestPerEntryContainersAreNotKept checks that per-entry tuples (pool_id
// in trace entries after torch 2.11) and per-entry empty lists do not each
// keep an arena object for the whole decode.
func TestPerEntryContainersAreNotKept(t *testing.T) {
	const n = 20000
	data := pickleOf(t, func(w *pickle.Writer) {
		w.Raw(pickle.EmptyDict)
		w.Memoize()
		w.Dict(2, func(i int) {
			if i == 0 {
				w.String("segments")
				w.Memoize()
				w.Raw(pickle.EmptyList)
				w.Memoize()
				return
			}
			w.String("device_traces")
			w.Memoize()
			w.Raw(pickle.EmptyList)
			w.Memoize()
			w.List(1, func(int) {
				w.Raw(pickle.EmptyList)
				w.Memoize()
				w.List(n, func(i int) {
					w.Raw(pickle.EmptyDict)
					w.Memoize()
					w.Dict(4, func(j int) {
						switch j {
						case 0:
							w.String("action")
							w.String("alloc")
						case 1:
							w.String("addr")
							w.Int(int64(i) << 9)
						case 2:
							w.String("pool_id")
							w.Int(0)
							w.Int(0)
							w.Tuple2()
							w.Memoize()
						case 3:
							w.String("frames")
							w.Raw(pickle.EmptyList)
							w.Memoize()
						}
					})
				})
			})
		})
	})
	d := newDecoder("entries.pickle")
	s, err := d.decodeAny(bytes.NewReader(data), int64(len(data)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Traces[0]); got != n {
		t.Fatalf("decoded %d entries, want %d", got, n)
	}
	if s.Traces[0][n-1].Addr != uint64(n-1)<<9 {
		t.Errorf("last entry Addr = %d, want %d", s.Traces[0][n-1].Addr, (n-1)<<9)
	}
	if len(d.objs) > 2*pickle.BatchSize+16 {
		t.Errorf("decoder kept %d arena objects for %d entries, want about one batch", len(d.objs), n)
	}
}
