package report

import (
	"github.com/memscope/memscope/attribution"

	"github.com/memscope/memscope/report/jsondoc"
)

// PrivatePoolJSON is jsondoc.PrivatePoolJSON.
type PrivatePoolJSON = jsondoc.PrivatePoolJSON

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
