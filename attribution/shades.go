package attribution

import "fmt"

// PhaseShade is a stretch of phases shaded on a timeline (the report's
// phase bands, serve's shades): one phase, one step, or a run of steps
// when there are too many to show one by one. First and Last index
// Phases.List: the stretch runs from the first's start to the last's end.
type PhaseShade struct {
	Name  string // "forward", "step 3 forward", "step 3", "steps 10–19"
	Phase string // the phase's name when the shade is one phase; "" otherwise
	Step  int    // the first step it covers; -1 for a phase outside the steps
	First int
	Last  int
}

// Shades shades the phases of in (indices into p.List, in order): one
// shade each while there are at most maxShades; else one per step (a
// phase outside the steps, as setup, is one of its own); with more steps
// than that, runs of them, each of the same number of steps but the last,
// named by the steps they cover.
func (p *Phases) Shades(in []int, maxShades int) []PhaseShade {
	out := []PhaseShade{}
	maxShades = max(maxShades, 1)
	if len(in) <= maxShades {
		for _, i := range in {
			ph := &p.List[i]
			name := ph.Name
			if ph.Step >= 0 {
				name = fmt.Sprintf("step %d %s", ph.Step, ph.Name)
			}
			out = append(out, PhaseShade{Name: name, Phase: ph.Name, Step: ph.Step, First: i, Last: i})
		}
		return out
	}
	// Units: the phases of one step, or one phase outside the steps.
	type unit struct{ first, last int }
	var units []unit
	for _, i := range in {
		if n := len(units); n > 0 && p.List[i].Step >= 0 && p.List[units[n-1].last].Step == p.List[i].Step {
			units[n-1].last = i
			continue
		}
		units = append(units, unit{i, i})
	}
	per := (len(units) + maxShades - 1) / maxShades
	for k := 0; k < len(units); k += per {
		a, b := units[k], units[min(k+per, len(units))-1]
		first, last := &p.List[a.first], &p.List[b.last]
		s := PhaseShade{Step: first.Step, First: a.first, Last: b.last}
		// Named by the steps it covers (a phase outside the steps in a
		// run of them goes unnamed), else by its phases.
		lo, hi := -1, -1
		for _, u := range units[k:min(k+per, len(units))] {
			if st := p.List[u.first].Step; st >= 0 {
				if lo < 0 {
					lo = st
				}
				hi = st
			}
		}
		switch {
		case lo >= 0 && hi > lo:
			s.Name = fmt.Sprintf("steps %d–%d", lo, hi)
		case lo >= 0:
			s.Name = fmt.Sprintf("step %d", lo)
		case a == b:
			s.Name, s.Phase = first.Name, first.Name
		default:
			s.Name = first.Name + " to " + last.Name
		}
		out = append(out, s)
	}
	return out
}
