package attribution

import "testing"

// TestStepTableMatchesTorch: every cell of the step × phase table is the
// peak torch's max_memory_allocated measured for that phase of that step
// (the harness reset the peak counters at each phase boundary), the floor
// and after columns are the allocated bytes at the step's edges, and the
// row marked as holding the device's peak is the step of its highest
// phase.
func TestStepTableMatchesTorch(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			d := f.an.Devices[0]
			p := d.Phases
			tab := p.Table(p.AllSteps(), 0)
			if len(tab.Rows) != len(p.Steps) {
				t.Fatalf("%d rows for %d steps", len(tab.Rows), len(p.Steps))
			}
			col := map[string]int{}
			for i, n := range tab.Phases {
				col[n] = i
			}
			row := map[int]StepRow{}
			for _, r := range tab.Rows {
				row[r.Step] = r
			}
			checked := 0
			var best int64 = -1
			bestStep := -1
			for _, tr := range f.truth.Phases {
				r, ok := row[tr.Step]
				if !ok {
					continue // setup outside steps
				}
				c, ok := col[tr.Phase]
				if !ok {
					t.Errorf("step %d: no %s column (columns %v)", tr.Step, tr.Phase, tab.Phases)
					continue
				}
				if got := r.Peaks[c]; got != tr.PeakAllocated {
					t.Errorf("step %d %s cell = %d, torch measured %d", tr.Step, tr.Phase, got, tr.PeakAllocated)
				}
				if tr.PeakAllocated > best {
					best, bestStep = tr.PeakAllocated, tr.Step
				}
				checked++
			}
			if checked == 0 {
				t.Fatal("no phase of the truth is in the table")
			}
			for _, r := range tab.Rows {
				if r.HoldsPeak != (r.Step == tab.PeakStep) {
					t.Errorf("step %d HoldsPeak %v, the table's peak step %d", r.Step, r.HoldsPeak, tab.PeakStep)
				}
				if r.Floor < 0 || r.After < 0 || r.Peak < r.Floor || r.Peak < r.After {
					t.Errorf("step %d: floor %d, after %d, peak %d: the peak must bound both edges", r.Step, r.Floor, r.After, r.Peak)
				}
			}
			if tab.PeakStep >= 0 && d.Timeline.PeakAllocated.Bytes == best && tab.PeakStep != bestStep {
				t.Errorf("peak in step %d, torch's highest phase peak %d is in step %d", tab.PeakStep, best, bestStep)
			}
		})
	}
}

// TestStepTableGapsAndColumns: gaps pass through as gap rows and the
// column limit keeps the first names seen.
func TestStepTableGapsAndColumns(t *testing.T) {
	p := &Phases{PeakPhase: 1,
		List: []Phase{{Name: "forward", Step: 0}, {Name: "backward", Step: 0}, {Name: "optimizer", Step: 1}, {Name: "forward", Step: 1}},
		Steps: []Step{{Step: 0, Phases: []int{0, 1}, FloorStart: 1, FloorEnd: 2, Peak: 9},
			{Step: 1, Phases: []int{3, 2}, FloorStart: 2, FloorEnd: 3, Peak: 8}}}
	p.List[0].Peak.Allocated, p.List[1].Peak.Allocated, p.List[2].Peak.Allocated, p.List[3].Peak.Allocated = 5, 9, 7, 6
	tab := p.Table([]int{0, -1, 1}, 2)
	if len(tab.Phases) != 2 || tab.Phases[0] != "forward" || tab.Phases[1] != "backward" {
		t.Fatalf("columns %v, want [forward backward]", tab.Phases)
	}
	if len(tab.Rows) != 3 || !tab.Rows[1].Gap {
		t.Fatalf("rows %+v, want a gap in the middle", tab.Rows)
	}
	if got := tab.Rows[2].Peaks; got[0] != 6 || got[1] != -1 {
		t.Errorf("step 1 cells %v, want [6 -1]: its optimizer column was cut", got)
	}
	if tab.PeakStep != 0 || tab.PeakPhase != "backward" || !tab.Rows[0].HoldsPeak || tab.Rows[2].HoldsPeak {
		t.Errorf("peak step %d %s, rows %+v", tab.PeakStep, tab.PeakPhase, tab.Rows)
	}
}
