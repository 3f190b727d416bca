package attribution

import "sort"

// This file estimates what only the phases can tell of a wrapped ring
// buffer: how much history it lost. Renderers say it with the replay's
// warning that the buffer wrapped.

// Lost is an estimate of the trace entries a wrapped ring buffer dropped,
// from the steps whose annotations outlived their entries (torch keeps
// external_annotations in a buffer of the same size, and a step writes far
// fewer annotations than allocations).
type Lost struct {
	Entries  int64 // about this many
	Steps    int   // whole steps before the first surviving entry
	CutStep  int   // the step the first surviving entry falls in; -1 for none
	PerStep  int   // the median entries of the steps recorded from their start
	Complete int   // how many steps that median is over
}

// lostHistory estimates what a wrapped trace lost, or returns nil when the
// trace did not wrap or the steps do not allow an estimate (no step
// recorded whole, or none before the first surviving entry).
func (d *Device) lostHistory() *Lost {
	t := d.Timeline
	if !t.Wrapped || len(t.Events) == 0 || !t.Timed {
		return nil
	}
	first := t.Events[0].TimeUS
	l := &Lost{CutStep: -1}
	cutEntries := 0
	var per []int
	for _, s := range d.Phases.Steps {
		if len(s.Phases) == 0 {
			continue
		}
		startUS, endUS := int64(1<<62), int64(-1<<62)
		lo, hi := len(t.Events), -1
		for _, pi := range s.Phases {
			ph := &d.Phases.List[pi]
			startUS, endUS = min(startUS, ph.StartUS), max(endUS, ph.EndUS)
			if ph.Last >= ph.First {
				lo, hi = min(lo, ph.First), max(hi, ph.Last)
			}
		}
		switch {
		case endUS < first:
			l.Steps++
		case startUS < first:
			l.CutStep, cutEntries = s.Step, max(hi-lo+1, 0)
		case hi >= lo:
			// A step the trace ends in may be partial; the median
			// discounts it.
			per = append(per, hi-lo+1)
		}
	}
	if len(per) == 0 {
		return nil
	}
	sort.Ints(per)
	if l.CutStep >= 0 && cutEntries >= per[len(per)/2] {
		// Its annotation began before its first entry, but none is missing.
		l.CutStep = -1
		per = append(per, cutEntries)
		sort.Ints(per)
	}
	if l.Steps == 0 && l.CutStep < 0 {
		return nil
	}
	l.PerStep, l.Complete = per[len(per)/2], len(per)
	l.Entries = int64(l.Steps) * int64(l.PerStep)
	if l.CutStep >= 0 {
		l.Entries += int64(max(l.PerStep-cutEntries, 0))
	}
	if l.Entries == 0 {
		return nil
	}
	return l
}
