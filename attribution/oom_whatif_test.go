package attribution

import (
	"math"
	"testing"

	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/snapshot"
)

// TestOOMSettingsMatchTorch: the OOM post-mortem's simulated settings say
// what torch did when the same workload ran under them: on the
// fragmentation fixture, expandable segments and max_split_size_mb serve
// the request and roundup_power2_divisions does not (each ran in its own
// process, fixtures/whatif-fragoom), expandable segments at torch's
// reserved peak within 2%; on the capacity OOM fixture no setting serves
// it.
func TestOOMSettingsMatchTorch(t *testing.T) {
	s, err := snapshot.Open("../fixtures/whatif-fragoom/default/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	d := Analyze(s, Options{Device: -1}).Devices[0]
	dirs := map[string]string{"expandable_segments:True": "expandable", "max_split_size_mb:128": "maxsplit128", "roundup_power2_divisions:4": "pow2div4"}
	if len(d.OOMSettings) != len(dirs) {
		t.Fatalf("%d simulated settings, want %d", len(d.OOMSettings), len(dirs))
	}
	for _, sim := range d.OOMSettings {
		tr, err := truth.Read("../fixtures/whatif-fragoom/" + dirs[sim.Conf] + "/truth.json")
		if err != nil {
			t.Fatal(err)
		}
		if sim.Err != nil {
			t.Fatalf("%s: %v", sim.Conf, sim.Err)
		}
		if torchOOM := tr.OOM != nil; sim.Served == torchOOM {
			t.Errorf("%s: served %v, but torch ran it with an OOM: %v", sim.Conf, sim.Served, torchOOM)
		}
		if sim.Conf == "expandable_segments:True" {
			want := tr.MemoryStatsEnd["reserved_bytes.all.peak"]
			if e := math.Abs(float64(sim.PeakReserved-want)) / float64(want); e > 0.02 {
				t.Errorf("%s: reserved peak %d, torch's %d: off by %.1f%%", sim.Conf, sim.PeakReserved, want, 100*e)
			}
		}
	}
	s, err = snapshot.Open("../fixtures/oom/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	for _, sim := range Analyze(s, Options{Device: -1}).Devices[0].OOMSettings {
		if sim.Err == nil && sim.Served {
			t.Errorf("capacity OOM: %s serves it", sim.Conf)
		}
	}
}
