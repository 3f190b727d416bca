package report

import "github.com/memscope/memscope/attribution"

// PrivatePoolJSON is one private pool (a CUDA graph's, a
// torch.cuda.MemPool's) at a moment (attribution.PrivatePool). Its free
// bytes serve only its own graph's replays or the pool's allocations, and
// empty_cache() does not release them.
type PrivatePoolJSON struct {
	Pool      [2]int64 `json:"pool"` // segment_pool_id, as torch names it: (0, 1)…
	Reserved  int64    `json:"reserved"`
	Allocated int64    `json:"allocated"`
	Free      int64    `json:"free"` // reserved − allocated
	Segments  int      `json:"segments"`
}

// privatePoolsJSON converts a moment's private pools, by pool id; [] for
// none.
func privatePoolsJSON(pools []attribution.PrivatePool) []PrivatePoolJSON {
	out := []PrivatePoolJSON{}
	for _, p := range pools {
		out = append(out, PrivatePoolJSON{Pool: [2]int64{p.Pool.A, p.Pool.B}, Reserved: p.Reserved,
			Allocated: p.Allocated, Free: p.Free, Segments: p.Segments})
	}
	return out
}
