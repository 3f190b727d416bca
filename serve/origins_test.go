package serve

import (
	"testing"
)

// TestSitesNamedOrigins: the Sites page's answer at the peak, on real
// snapshots made with the harness and without it, lists every site (all
// under maxSites here), their bytes add up to the peak's allocated, and
// at most a tenth of them are in sites marked not named (the buckets
// "(allocated before recording began)", "(no Python frame…)"), as
// attribution names them.
func TestSitesNamedOrigins(t *testing.T) {
	for _, path := range []string{"../fixtures/llama-wide/snapshot.pickle", "../fixtures/plain-trainer-late/snapshot.pickle",
		"../fixtures/plain-checkpointed/snapshot.pickle", "../fixtures/workloads/lora/snapshot.pickle"} {
		t.Run(path, func(t *testing.T) {
			srv := newServer(t, path)
			d := analyzed(t, path).Primary()
			var sites SitesAnswer
			get(t, srv, "/api/sites?at=peak", &sites)
			if len(sites.Sites) != sites.Total || sites.Total != len(d.Peak.Sites) {
				t.Fatalf("%d sites listed of %d, want all %d", len(sites.Sites), sites.Total, len(d.Peak.Sites))
			}
			var sum, unnamed int64
			for i, s := range sites.Sites {
				sum += s.Bytes
				if !s.Named {
					unnamed += s.Bytes
				}
				if want := d.Peak.Sites[i].Site.Named(); s.Named != want {
					t.Errorf("site %q named %v, want %v", s.Label, s.Named, want)
				}
			}
			if peak := d.Peak.Allocated; sum != peak || 10*unnamed > peak {
				t.Errorf("sites add up to %d B with %d B unnamed, want the peak's %d B with at most 10%% unnamed", sum, unnamed, peak)
			}
		})
	}
}
