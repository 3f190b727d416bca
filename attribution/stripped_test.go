package attribution

import (
	"strings"
	"testing"
)

// TestHarnessMarksStripped: every harness fixture read with its
// memscope/step/N/PHASE marks removed, as a snapshot of the same run made
// without the harness would be, gives the same steps, the same peak per
// phase (the harness's data phase is part of forward without it) and the
// same bytes per category at the peak.
func TestHarnessMarksStripped(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			s := *f.an.Snapshot
			s.Annotations = nil
			for _, a := range f.an.Snapshot.Annotations {
				if !strings.HasPrefix(a.Name, "memscope/") {
					s.Annotations = append(s.Annotations, a)
				}
			}
			plain := Analyze(&s, Options{Device: -1})
			for di, md := range f.an.Devices {
				pd := plain.Devices[di]
				mp, pp := md.Phases, pd.Phases
				if len(pp.Steps) != len(mp.Steps) {
					t.Fatalf("device %d: %d steps without marks (from %s), %d with", md.Device, len(pp.Steps), pp.Source, len(mp.Steps))
				}
				want := map[[2]any]int64{}
				for _, ph := range mp.List {
					name := ph.Name
					if name == "data" {
						name = "forward"
					}
					if ph.Step >= 0 {
						k := [2]any{ph.Step - mp.Steps[0].Step, name}
						want[k] = max(want[k], ph.Peak.Allocated)
					}
				}
				got := map[[2]any]int64{}
				for _, ph := range pp.List {
					if ph.Step >= 0 {
						k := [2]any{ph.Step, ph.Name}
						got[k] = max(got[k], ph.Peak.Allocated)
					}
				}
				for k, w := range want {
					if got[k] != w {
						t.Errorf("device %d step %v %s: peak %d without marks, %d with", md.Device, k[0], k[1], got[k], w)
					}
				}
				for c := Category(0); c < NumCategories; c++ {
					if g, w := pd.Peak.Categories[c].Bytes, md.Peak.Categories[c].Bytes; g != w {
						t.Errorf("device %d: %s at the peak %d without marks, %d with", md.Device, c, g, w)
					}
				}
			}
		})
	}
}
