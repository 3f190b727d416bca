package report

import "github.com/memscope/memscope/attribution"

// StepTableJSON is the step × phase table of one device
// (attribution.StepTable over every step), as 'peak' prints it after its
// moment: allocated bytes per step and phase.
type StepTableJSON struct {
	// Phases are the table's columns, in the order the names first appear
	// in the steps.
	Phases []string      `json:"phases"`
	Rows   []StepRowJSON `json:"rows"`
	// PeakStep and PeakPhase name the phase holding the device's
	// allocated peak; PeakStep is null when that phase is outside every
	// step (setup) or no phase holds it, PeakPhase "" when none does.
	PeakStep  *int   `json:"peak_step"`
	PeakPhase string `json:"peak_phase"`
}

// StepRowJSON is one step of the table.
type StepRowJSON struct {
	Step  int   `json:"step"`
	Floor int64 `json:"floor"` // allocated at the step's first event
	After int64 `json:"after"` // allocated after its last event
	Peak  int64 `json:"peak"`  // the highest allocated inside the step
	// PeakPhase is the phase holding the step's peak.
	PeakPhase string `json:"peak_phase"`
	// PhasePeaks holds, by phase name, the phase's highest allocated peak
	// in this step: with gradient accumulation, the highest of its
	// micro-batches'. A phase the step does not have is absent.
	PhasePeaks map[string]int64 `json:"phase_peaks"`
	// HoldsPeak is true for the step holding the device's peak.
	HoldsPeak bool `json:"holds_peak"`
}

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
