package attribution

import (
	"fmt"

	"github.com/memscope/memscope/budget"
)

// MeasureBudget measures d's phases for a comparison with the prediction p:
// for each phase name, the highest allocated peak over the steady steps
// (budget.SteadyPhase), with what was live there by category and charged to
// p's terms (budget.Prediction.Classify; blocks pending free are left out).
// Phases come in the order their names first appear. The notes say when
// there is nothing to measure: no phases (budget.NoteNoPhases), or only
// step 0 (budget.NoteOnlyStepZero).
func MeasureBudget(d *Device, p *budget.Prediction) ([]budget.Measured, []budget.Note) {
	var notes []budget.Note
	if d.Phases.Source == "none" || len(d.Phases.Steps) == 0 {
		notes = append(notes, budget.Note{Kind: budget.NoteNoPhases})
	}
	last := -1
	for _, st := range d.Phases.Steps {
		last = max(last, st.Step)
	}
	// The highest peak of each phase name (the first to reach it), then
	// what was live there: one moment per name, not one per step of a
	// rising staircase.
	// An inference prediction's one phase, "forward", is generate()'s
	// prefill: the name memscope gives that phase of a generate() step.
	infer := p.Shape.Mode == budget.Infer
	name := func(ph *Phase) string {
		if infer && ph.Name == "prefill" {
			return "forward"
		}
		return ph.Name
	}
	var out []budget.Measured
	best := map[string]int{}
	for i := range d.Phases.List {
		ph := &d.Phases.List[i]
		if !budget.SteadyPhase(ph.Step, last) || ph.Last < ph.First {
			continue
		}
		j, ok := best[name(ph)]
		if !ok {
			out = append(out, budget.Measured{Phase: name(ph)})
		}
		if !ok || ph.Peak.Allocated > d.Phases.List[j].Peak.Allocated {
			best[name(ph)] = i
		}
	}
	for k := range out {
		ph := &d.Phases.List[best[out[k].Phase]]
		if ph.Peak.Allocated <= 0 {
			continue
		}
		mo := d.At(ph.PeakIndex, fmt.Sprintf("step %d %s", ph.Step, ph.Name))
		m := budget.Measured{Phase: name(ph), Step: ph.Step, Peak: mo.Allocated, Requested: mo.Requested,
			ByCategory: map[string]int64{}, HasTerms: true}
		for c := range NumCategories {
			if mo.Categories[c].Count > 0 {
				m.ByCategory[c.String()] = mo.Categories[c].Bytes
			}
		}
		for i, b := range mo.Live {
			if !b.PendingFree {
				m.ByTerm[p.Classify(name(ph), mo.Category[i].String(), b.Requested)] += b.Size
			}
		}
		out[k] = m
	}
	if last == 0 && !infer { // a generate() call is one step, with no optimizer state to create
		notes = append(notes, budget.Note{Kind: budget.NoteOnlyStepZero})
	}
	return out, notes
}

// HoldBudget holds the prediction p against what was measured: the phases
// of d (nil: no snapshot; MeasureBudget) with torch's peaks in tr (nil:
// none; budget.MergeTruth) taking precedence. It returns each predicted
// phase against the measured one, the notes on the measurement and the
// comparison, and, from a snapshot, advise's fixes of the same run from its
// blocks, over ranks and p's loss chunks (the predicted fixes' own).
func HoldBudget(p *budget.Prediction, d *Device, tr *budget.Truth, ranks int64) ([]budget.Comparison, []budget.Note, *Advice) {
	var ms []budget.Measured
	var notes []budget.Note
	var advice *Advice
	if d != nil {
		ms, notes = MeasureBudget(d, p)
		advice = d.Advise(AdviseOptions{Ranks: ranks, LossChunks: p.Shape.LossChunks})
	}
	if tr != nil {
		var more []budget.Note
		ms, more = budget.MergeTruth(ms, tr)
		notes = append(notes, more...)
	}
	cmp := budget.Compare(p, ms)
	return cmp, append(notes, budget.CompareNotes(cmp, ms)...), advice
}
