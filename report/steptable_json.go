package report

import (
	"github.com/memscope/memscope/attribution"

	"github.com/memscope/memscope/report/jsondoc"
)

// StepTableJSON is jsondoc.StepTableJSON.
type StepTableJSON = jsondoc.StepTableJSON

// StepRowJSON is jsondoc.StepRowJSON.
type StepRowJSON = jsondoc.StepRowJSON

// stepTableJSON converts a step table built over every step.
func stepTableJSON(t attribution.StepTable) StepTableJSON {
	j := StepTableJSON{Phases: append([]string{}, t.Phases...), Rows: []StepRowJSON{}, PeakPhase: t.PeakPhase}
	if t.PeakStep >= 0 {
		n := t.PeakStep
		j.PeakStep = &n
	}
	for _, r := range t.Rows {
		if r.Gap {
			continue // a table of every step has none
		}
		row := StepRowJSON{Step: r.Step, Floor: r.Floor, After: r.After, Peak: r.Peak, PeakPhase: r.PeakIn,
			PhasePeaks: map[string]int64{}, HoldsPeak: r.HoldsPeak}
		for i, v := range r.Peaks {
			if v >= 0 {
				row.PhasePeaks[t.Phases[i]] = v
			}
		}
		j.Rows = append(j.Rows, row)
	}
	return j
}

// deviceStepTableJSON is the table of every step of a device.
func deviceStepTableJSON(d *attribution.Device) StepTableJSON {
	return stepTableJSON(d.Phases.Table(d.Phases.AllSteps(), 0))
}
