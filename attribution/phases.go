package attribution

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/memscope/memscope/snapshot"
)

// Phase is one phase of one training step (or a stretch outside steps) as a
// range of a device's events.
type Phase struct {
	Step int    // -1 outside any step (setup)
	Name string // data, forward, backward, optimizer, setup, or an annotation's
	// First and Last are the event indexes inside the phase; Last < First
	// when no event fell inside.
	First, Last    int
	StartUS, EndUS int64

	// Allocated bytes on entry, at the phase's peak and on exit, and the
	// event of the peak (First-1 when the entry state is the peak).
	Start, Peak, End snapshot.Numbers
	PeakIndex        int
}

// Step is one training step: its phases and the floor around them.
type Step struct {
	Step   int
	Phases []int // indexes into Phases.List
	// FloorStart and FloorEnd are allocated bytes at the step's first and
	// after its last event; Peak is the highest allocated inside it.
	FloorStart, FloorEnd, Peak int64
	PeakPhase                  string
}

// Phases is how a device's trace divides into steps and phases.
type Phases struct {
	// Source says where the boundaries came from: "harness" (memscope's own
	// memscope/step/N/PHASE annotations), "optimizer" (the optimizer's
	// Optimizer.step annotations, forward and backward told apart by
	// stacks), or "heuristic" (stacks alone), or "none".
	Source string
	List   []Phase
	Steps  []Step
	// PeakPhase indexes List: the phase holding the device's allocated
	// peak; -1 when the peak predates the trace or no phase holds it.
	PeakPhase int
}

var (
	harnessRE = regexp.MustCompile(`^memscope/step/(-?\d+)/([A-Za-z_]+)$`)
	optimRE   = regexp.MustCompile(`(^|/)torch/optim/`)
)

// findPhases divides t's events into phases. It needs no numbers: a
// phaseAccumulator adds them during the one replay pass.
//
// In order of preference: the capture harness's annotations; else the
// optimizer's Optimizer.step/zero_grad annotations, with forward and backward
// told apart by stacks; else stacks alone. The stack heuristic: an
// allocation whose stack has a frame in torch/optim/ belongs to the
// optimizer; one with no Python frame at all was made by the autograd
// engine's thread (backward: it runs no Python); any other is forward. A
// step starts at a forward allocation that follows optimizer work.
func findPhases(s *snapshot.Snapshot, device int, events []snapshot.Event) *Phases {
	ranges := s.Ranges(device)
	if p := harnessPhases(events, ranges); p != nil {
		return p
	}
	labels := labelEvents(s, events, ranges)
	p := &Phases{Source: "heuristic", PeakPhase: -1}
	for _, r := range ranges {
		if strings.HasPrefix(r.Name, "Optimizer.step#") {
			p.Source = "optimizer"
		}
	}
	step := -1
	prev := ""
	for i, l := range labels {
		if l == "" {
			continue
		}
		if l == prev {
			p.List[len(p.List)-1].Last = i
			continue
		}
		if l == "forward" && (prev == "optimizer" || prev == "") {
			step++
		}
		if n := len(p.List); n > 0 {
			p.List[n-1].Last = i - 1 // frees up to here belong to the phase before
		}
		p.List = append(p.List, Phase{Step: step, Name: l, First: i, Last: i})
		prev = l
	}
	if n := len(p.List); n > 0 {
		p.List[n-1].Last = len(events) - 1
		p.List[0].First = 0
	} else {
		p.Source = "none"
	}
	for i := range p.List {
		ph := &p.List[i]
		ph.StartUS = events[ph.First].TimeUS
		ph.EndUS = events[ph.Last].TimeUS
		if ph.Step < 0 {
			ph.Name = "setup"
		}
	}
	return p
}

// harnessPhases reads memscope/step/N/PHASE ranges; nil when there are none.
func harnessPhases(events []snapshot.Event, ranges []snapshot.Range) *Phases {
	p := &Phases{Source: "harness", PeakPhase: -1}
	for _, r := range ranges {
		m := harnessRE.FindStringSubmatch(r.Name)
		if m == nil {
			continue
		}
		step, _ := strconv.Atoi(m[1])
		end := r.EndUS
		if end == 0 && len(events) > 0 {
			end = events[len(events)-1].TimeUS
		}
		first := sort.Search(len(events), func(i int) bool { return events[i].TimeUS >= r.StartUS })
		last := sort.Search(len(events), func(i int) bool { return events[i].TimeUS > end }) - 1
		p.List = append(p.List, Phase{Step: step, Name: m[2], First: first, Last: last, StartUS: r.StartUS, EndUS: end})
	}
	if len(p.List) == 0 {
		return nil
	}
	return p
}

// labelEvents labels each alloc event forward, backward or optimizer (other
// events get ""): by the optimizer's annotations where present, else by the
// allocation's stack.
func labelEvents(s *snapshot.Snapshot, events []snapshot.Event, ranges []snapshot.Range) []string {
	var optim []snapshot.Range
	for _, r := range ranges {
		if strings.HasPrefix(r.Name, "Optimizer.step#") || strings.HasPrefix(r.Name, "Optimizer.zero_grad#") {
			optim = append(optim, r)
		}
	}
	kind := map[snapshot.StackID]string{}
	labels := make([]string, len(events))
	for i := range events {
		ev := &events[i]
		if ev.Action != snapshot.ActionAlloc {
			continue
		}
		for _, r := range optim {
			if r.Contains(ev.TimeUS) {
				labels[i] = "optimizer"
				break
			}
		}
		if labels[i] != "" {
			continue
		}
		k, ok := kind[ev.Stack]
		if !ok {
			k = stackKind(s.Stacks, ev.Stack)
			kind[ev.Stack] = k
		}
		labels[i] = k
	}
	return labels
}

// stackKind classifies an allocation stack for the phase heuristic.
func stackKind(st *snapshot.Stacks, id snapshot.StackID) string {
	python := false
	for _, fid := range st.Stack(id) {
		fr := st.Frame(fid)
		if optimRE.MatchString(fr.Filename) {
			return "optimizer"
		}
		if isPython(fr) {
			python = true
		}
	}
	if !python {
		return "backward"
	}
	return "forward"
}

// phaseAccumulator collects per-phase numbers during the replay pass.
type phaseAccumulator struct {
	p     *Phases
	owner []int32 // event index → phase index, -1 for none
	prev  snapshot.Numbers
}

func newPhaseAccumulator(p *Phases, nEvents int) *phaseAccumulator {
	a := &phaseAccumulator{p: p, owner: make([]int32, nEvents)}
	for i := range a.owner {
		a.owner[i] = -1
	}
	for pi := range p.List {
		ph := &p.List[pi]
		for i := max(ph.First, 0); i <= ph.Last && i < nEvents; i++ {
			a.owner[i] = int32(pi)
		}
		ph.PeakIndex = ph.First - 1
	}
	return a
}

// observe takes the state after event i (before the first event at -1).
func (a *phaseAccumulator) observe(i int, n snapshot.Numbers) {
	if i < 0 {
		a.prev = n
		return
	}
	pi := a.owner[i]
	if pi >= 0 {
		ph := &a.p.List[pi]
		if i == ph.First {
			ph.Start, ph.Peak, ph.PeakIndex = a.prev, a.prev, i-1
		}
		if n.Allocated > ph.Peak.Allocated {
			ph.Peak, ph.PeakIndex = n, i
		}
		ph.End = n
	}
	a.prev = n
}

// finish fills empty phases and builds the steps.
func (a *phaseAccumulator) finish(t *snapshot.Timeline) {
	p := a.p
	for pi := range p.List {
		ph := &p.List[pi]
		if ph.Last < ph.First {
			st := t.Start
			if ph.First > 0 && ph.First-1 < len(t.Events) {
				st = t.StateAt(ph.First - 1)
			}
			ph.Start, ph.Peak, ph.End, ph.PeakIndex = st, st, st, ph.First-1
		}
		if t.PeakAllocated.Index >= ph.First && t.PeakAllocated.Index <= ph.Last {
			p.PeakPhase = pi
		}
	}
	byStep := map[int]int{}
	for pi := range p.List {
		ph := &p.List[pi]
		if ph.Step < 0 {
			continue
		}
		si, ok := byStep[ph.Step]
		if !ok {
			si = len(p.Steps)
			byStep[ph.Step] = si
			p.Steps = append(p.Steps, Step{Step: ph.Step, FloorStart: ph.Start.Allocated})
		}
		s := &p.Steps[si]
		s.Phases = append(s.Phases, pi)
		s.FloorEnd = ph.End.Allocated
		if ph.Peak.Allocated > s.Peak || s.PeakPhase == "" {
			s.Peak, s.PeakPhase = ph.Peak.Allocated, ph.Name
		}
	}
}
