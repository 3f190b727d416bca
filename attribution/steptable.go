package attribution

// StepTable is the step × phase table of a device: one row per step, one
// column per phase name (forward, backward, optimizer…) in the order the
// names first appear in the rows shown, each cell the highest allocated
// peak of that phase in that step.
type StepTable struct {
	Phases []string
	Rows   []StepRow
	// PeakStep and PeakPhase name the phase holding the device's peak;
	// PeakStep is -1 when no phase holds it.
	PeakStep  int
	PeakPhase string
}

// StepRow is one step of a StepTable, or a gap where steps were left out.
type StepRow struct {
	Gap bool // a run of steps left out; nothing else is set
	// Step is the step's number; Floor and After the allocated bytes at
	// its first event and after its last; Peak the highest inside it.
	Step               int
	Floor, After, Peak int64
	PeakIn             string // the phase holding the step's peak
	// Peaks holds one cell per StepTable.Phases: the phase's highest
	// allocated peak in this step, or -1 when the step has no such phase.
	Peaks []int64
	// HoldsPeak is true for the step holding the device's peak.
	HoldsPeak bool
}

// Table builds the step × phase table of the steps at rows (indexes into
// p.Steps; -1 for a gap), with at most maxPhases columns (≤ 0: all).
func (p *Phases) Table(rows []int, maxPhases int) StepTable {
	t := StepTable{PeakStep: -1}
	if p.PeakPhase >= 0 {
		ph := p.List[p.PeakPhase]
		t.PeakStep, t.PeakPhase = ph.Step, ph.Name
	}
	col := map[string]int{}
	for _, si := range rows {
		if si < 0 {
			continue
		}
		for _, pi := range p.Steps[si].Phases {
			n := p.List[pi].Name
			if _, ok := col[n]; !ok && (maxPhases <= 0 || len(t.Phases) < maxPhases) {
				col[n] = len(t.Phases)
				t.Phases = append(t.Phases, n)
			}
		}
	}
	for _, si := range rows {
		if si < 0 {
			t.Rows = append(t.Rows, StepRow{Gap: true})
			continue
		}
		s := &p.Steps[si]
		r := StepRow{Step: s.Step, Floor: s.FloorStart, After: s.FloorEnd, Peak: s.Peak, PeakIn: s.PeakPhase,
			Peaks: make([]int64, len(t.Phases)), HoldsPeak: t.PeakStep >= 0 && t.PeakStep == s.Step}
		for i := range r.Peaks {
			r.Peaks[i] = -1
		}
		for _, pi := range s.Phases {
			ph := &p.List[pi]
			if c, ok := col[ph.Name]; ok {
				r.Peaks[c] = max(r.Peaks[c], ph.Peak.Allocated)
			}
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// AllSteps is the rows argument of Table for every step.
func (p *Phases) AllSteps() []int {
	rows := make([]int, len(p.Steps))
	for i := range rows {
		rows[i] = i
	}
	return rows
}
