package attribution

import (
	"math"
	"slices"
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

// TestOOMVerdictBySimulation: an OOM's kind is the simulation's, where the
// model runs the whole recording. Every run of the fragmentation workload
// that ran out of memory (fixtures/whatif-fragoom: default and
// roundup_power2_divisions:4) is fragmentation, as torch's own run under
// expandable_segments:True completed; its settings to try are the ones
// whose torch run completed, and the fragmentation verdict at the OOM
// agrees. The capacity fixtures (oom, plain-oom, plain-record-oom) are
// capacity: expandable segments still fail there.
func TestOOMVerdictBySimulation(t *testing.T) {
	dirs := map[string]string{"expandable_segments:True": "expandable", "max_split_size_mb:128": "maxsplit128", "roundup_power2_divisions:4": "pow2div4"}
	completed := map[string]bool{}
	for conf, dir := range dirs {
		tr, err := truth.Read("../fixtures/whatif-fragoom/" + dir + "/truth.json")
		if err != nil {
			t.Fatal(err)
		}
		completed[conf] = tr.MemoryStatsEnd["num_ooms"] == 0
	}
	check := func(path string, want OOMKind) {
		t.Helper()
		s, err := snapshot.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		d := Analyze(s, Options{Device: -1}).Devices[0]
		if len(d.OOMs) == 0 {
			t.Fatalf("%s: no OOM", path)
		}
		for _, o := range d.OOMs {
			v := o.Verdict
			if !v.Simulated || v.Kind != want {
				t.Errorf("%s oom %d: kind %d simulated %v, want kind %d by simulation", path, o.N, v.Kind, v.Simulated, want)
			}
			if (o.Frag.Verdict.Kind == FragRequestFragmented) != (want == OOMFragmentation) || !o.Frag.Verdict.Simulated {
				t.Errorf("%s oom %d: fragmentation verdict %d (simulated %v) disagrees", path, o.N, o.Frag.Verdict.Kind, o.Frag.Verdict.Simulated)
			}
			if want != OOMFragmentation {
				continue
			}
			var served []string
			for _, f := range v.Served {
				served = append(served, suggestionText(f.Suggestion))
			}
			for conf, ok := range completed {
				if has := slices.Contains(served, conf); has != ok {
					t.Errorf("%s oom %d: %s among the settings that serve it: %v; torch's run under it completed: %v", path, o.N, conf, has, ok)
				}
			}
			if len(v.Try) == 0 || v.Try[0] != (Suggestion{ExpandableSegments, "True"}) {
				t.Errorf("%s oom %d: try %v first, want expandable_segments:True (the lowest reserved peak)", path, o.N, v.Try)
			}
		}
	}
	for _, run := range []string{"default", "pow2div4"} {
		check("../fixtures/whatif-fragoom/"+run+"/snapshot.pickle", OOMFragmentation)
	}
	for _, f := range []string{"oom", "plain-oom", "plain-record-oom"} {
		check("../fixtures/"+f+"/snapshot.pickle", OOMCapacity)
	}
}

func suggestionText(s Suggestion) string { return s.Setting.String() + ":" + s.Value }
