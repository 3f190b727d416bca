package attribution

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// TestFragVerdictAgreesWithSimulation: on every fixture and third-party
// file, the peak's fragmentation verdict is a problem exactly when the
// allocator model (the runs frag --simulate and advise show) lowers the
// reserved peak by a tenth or more; where the verdict did not run the
// model (its bound said nothing could), running it confirms the bound;
// where the model cannot run, the verdict says why.
func TestFragVerdictAgreesWithSimulation(t *testing.T) {
	var files []string
	for _, pat := range []string{"../fixtures/*/snapshot*.pickle", "../fixtures/*/*/snapshot*.pickle",
		"../fixtures/*/*/*/snapshot*.pickle", "../fixtures/*/*/*/*/snapshot*.pickle", "testdata/thirdparty/*.gz"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	simulated, bounded := 0, 0
	for _, f := range files {
		s, err := snapshot.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range Analyze(s, Options{Device: -1}).Devices {
			if len(d.Frag) == 0 {
				continue
			}
			v := d.Frag[0].Verdict
			if v.Kind == FragNothingReserved {
				continue
			}
			sets := d.SimulateSettings() // what frag --simulate prints
			rec := d.Timeline.PeakReserved.Bytes
			best := rec
			for _, st := range sets {
				if !st.OOM {
					best = min(best, st.PeakReserved)
				}
			}
			saves := float64(rec-best) >= healthyShare*float64(rec)
			switch {
			case v.Static != "":
				if v.Simulated {
					t.Errorf("%s device %d: verdict simulated and static (%s)", f, d.Device, v.Static)
				}
			case v.Simulated:
				simulated++
				if v.Problem() != saves {
					t.Errorf("%s device %d: peak verdict %v (problem %v), but the best simulated setting reserves %d of the recorded %d",
						f, d.Device, v.Kind, v.Problem(), best, rec)
				}
			default:
				bounded++
				if saves || v.Problem() {
					t.Errorf("%s device %d: peak verdict %v from the free blocks (problem %v) left unsimulated, but the best simulated setting reserves %d of the recorded %d",
						f, d.Device, v.Kind, v.Problem(), best, rec)
				}
			}
		}
	}
	if simulated < 20 || bounded < 5 {
		t.Fatalf("%d devices' peak verdicts simulated, %d bounded; want 20 and 5 or more", simulated, bounded)
	}
}
