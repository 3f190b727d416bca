package attribution

import (
	"sort"
	"strconv"
	"strings"

	"github.com/memscope/memscope/snapshot"
)

// Phase is one phase of one training step (or a stretch outside steps) as a
// range of a device's events.
type Phase struct {
	Step int // -1 outside any step (setup)
	// Name is data, forward, backward, optimizer, setup, an annotation's,
	// or for generate(): prefill, decode, or generate when the two are not
	// told apart.
	Name string
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
	// Source says where the step boundaries came from: "harness"
	// (memscope's own memscope/step/N/PHASE annotations), "optimizer"
	// (Optimizer.step ranges, by their times), "profiler" (ProfilerStep#N
	// ranges), "record_function" (a repeated user range), "dataloader"
	// (DataLoader fetches), "pattern" (the period of the allocation stream
	// itself), "kv cache" (generate() calls, told by their KV cache:
	// kvphases.go), "one pass" (one step: the allocation pattern repeats
	// inside one module call, so its period is a layer: layers.go) or
	// "none"; Range is the repeated range's name for record_function, and
	// for one pass the layer's function and its count ("LlamaDecoderLayer.forward ×32").
	Source string
	Range  string
	List   []Phase
	Steps  []Step
	// PeakPhase indexes List: the phase holding the device's allocated
	// peak; -1 when the peak predates the trace or no phase holds it.
	PeakPhase int
	// CutElsewhere is true when this device's one pass ended with another
	// device's out-of-memory error, CutDevice (one process driving several
	// GPUs: its own trace has none, and what the pass held at the end is
	// what the failed step was building).
	CutElsewhere bool
	CutDevice    int

	kv []kvRun // the generate() calls, with Source "kv cache"
}

// harnessName splits a harness range's name, memscope/step/N/PHASE (N an
// integer, PHASE letters and underscores), into N and PHASE. It is the
// regular expression ^memscope/step/(-?\d+)/([A-Za-z_]+)$ written out: a
// long run has tens of thousands of these ranges.
func harnessName(name string) (num, phase string, ok bool) {
	rest, ok := strings.CutPrefix(name, "memscope/step/")
	if !ok {
		return "", "", false
	}
	i := 0
	if i < len(rest) && rest[i] == '-' {
		i++
	}
	j := i
	for j < len(rest) && '0' <= rest[j] && rest[j] <= '9' {
		j++
	}
	if j == i || j == len(rest) || rest[j] != '/' || j+1 == len(rest) {
		return "", "", false
	}
	for k := j + 1; k < len(rest); k++ {
		if c := rest[k]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_') {
			return "", "", false
		}
	}
	return rest[:j], rest[j+1:], true
}

// findPhases divides t's events into steps and phases. It needs no
// numbers: a phaseAccumulator adds them during the one replay pass.
//
// The capture harness's annotations are read as they are. Otherwise steps
// come from findSteps and each step divides by the stacks of its events
// (kinds): backward runs from the first to the last event of autograd's
// backward (no Python frame, or under a backward or checkpoint-recompute
// frame of torch); forward is what comes before it, optimizer what comes
// after it (gradient clipping, the update, zero_grad). A step with no
// backward is forward alone (inference), or forward then optimizer from
// the first allocation under torch/optim or the Optimizer.step range's
// start. Inside backward, an allocation that calls an nn.Module starts a
// micro-batch's forward. Events before the first step are setup; events
// after the last are "after", or a partial step when they hold a step's
// work (a step cut short by an OOM or by the dump).
func findPhases(s *snapshot.Snapshot, device int, events []snapshot.Event, ranges []snapshot.Range, k *kinds) *Phases {
	if p := harnessPhases(events, ranges); p != nil {
		return p
	}
	spans, src := findSteps(s, device, events, ranges, k)
	if src.key == "pattern" || src.key == "one pass" || src.key == "none" {
		if p, runs := kvPhases(s.Stacks, events, k); p != nil {
			p.kv = runs
			return p
		}
	}
	p := &Phases{Source: src.key, Range: src.rangeName, PeakPhase: -1}
	if len(spans) == 0 {
		return p
	}
	if src.key == "one pass" && !hasOOM(events) {
		if d := oomElsewhere(s, device, k); d >= 0 {
			p.CutElsewhere, p.CutDevice = true, d
		}
	}
	b := phaseBuilder{p: p, events: events, k: k, onePass: src.key == "one pass"}
	for _, r := range ranges {
		// One pass with an Optimizer.step range that never ended: the
		// step was cut short inside optimizer.step(closure) (Lightning
		// runs the forward in the closure), so the range's start is no
		// optimizer phase; torch/optim's own allocations still are.
		if strings.HasPrefix(r.Name, "Optimizer.step#") && !(src.key == "one pass" && r.EndUS == 0) {
			b.optStarts = append(b.optStarts, r.StartUS)
		}
	}
	if spans[0].first > 0 {
		b.add(-1, "setup", 0, spans[0].first-1)
	}
	for si, sp := range spans {
		b.step(si, sp)
	}
	if last := spans[len(spans)-1].last; last < len(events)-1 {
		tail := span{last + 1, len(events) - 1}
		if b.work(tail) {
			b.step(len(spans), tail)
		} else {
			b.add(-1, "after", tail.first, tail.last)
		}
	}
	for i := range p.List {
		ph := &p.List[i]
		at := min(max(ph.First, ph.Last, 0), len(events)-1)
		ph.StartUS, ph.EndUS = events[min(ph.First, at)].TimeUS, events[at].TimeUS
	}
	return p
}

type phaseBuilder struct {
	p         *Phases
	events    []snapshot.Event
	k         *kinds
	optStarts []int64 // Optimizer.step START times, in order
	onePass   bool    // the steps are one pass (Phases.Source "one pass")
}

// add appends a phase; last < first makes an empty one (at first-1).
func (b *phaseBuilder) add(step int, name string, first, last int) {
	b.p.List = append(b.p.List, Phase{Step: step, Name: name, First: first, Last: last})
}

// backwardIn returns the first and last backward event of sp, or -1, -1.
func (b *phaseBuilder) backwardIn(sp span) (int, int) {
	fb, lb := -1, -1
	for i := sp.first; i <= sp.last; i++ {
		if b.k.event(&b.events[i])&kindBackward != 0 {
			if fb < 0 {
				fb = i
			}
			lb = i
		}
	}
	return fb, lb
}

// work reports whether sp holds a step's work: backward, or an allocation
// that calls an nn.Module (a step cut short, by an OOM say).
func (b *phaseBuilder) work(sp span) bool {
	for i := sp.first; i <= sp.last; i++ {
		kd := b.k.event(&b.events[i])
		if kd&kindBackward != 0 || (b.events[i].Action == snapshot.ActionAlloc && kd&kindModule != 0) {
			return true
		}
	}
	return false
}

// step divides one step's events into its phases.
func (b *phaseBuilder) step(step int, sp span) {
	ev := b.events
	fb, lb := b.backwardIn(sp)
	if fb < 0 {
		fo := -1
		for i := sp.first; i <= sp.last && fo < 0; i++ {
			if ev[i].Action == snapshot.ActionAlloc && b.k.event(&ev[i])&kindOptimizer != 0 {
				fo = i
			}
		}
		if fo < 0 {
			j := sort.Search(len(b.optStarts), func(j int) bool { return b.optStarts[j] >= ev[sp.first].TimeUS })
			if j < len(b.optStarts) && b.optStarts[j] <= ev[sp.last].TimeUS {
				fo = sort.Search(len(ev), func(i int) bool { return ev[i].TimeUS >= b.optStarts[j] })
				fo = min(max(fo, sp.first), sp.last)
			}
		}
		switch {
		case fo < 0:
			b.add(step, "forward", sp.first, sp.last)
		case fo == sp.first:
			b.add(step, "optimizer", sp.first, sp.last)
		default:
			b.add(step, "forward", sp.first, fo-1)
			b.add(step, "optimizer", fo, sp.last)
		}
		return
	}
	if fb > sp.first {
		b.add(step, "forward", sp.first, fb-1)
	}
	cur, start := "backward", fb
	for i := fb; i <= lb; i++ {
		kd := b.k.event(&ev[i])
		switch {
		case cur == "backward" && ev[i].Action == snapshot.ActionAlloc && kd&kindBackward == 0 && kd&kindModule != 0:
			b.add(step, cur, start, i-1)
			cur, start = "forward", i
		case cur == "forward" && kd&kindBackward != 0:
			b.add(step, cur, start, i-1)
			cur, start = "backward", i
		}
	}
	b.add(step, cur, start, lb)
	if b.onePass && b.modelWork(lb+1, sp.last) {
		// One pass cut short (an OOM dump): after a stray stackless
		// allocation the model's forward went on, with no optimizer
		// in sight; that is not an optimizer phase.
		b.add(step, "forward", lb+1, sp.last)
		return
	}
	b.add(step, "optimizer", lb+1, sp.last)
}

// modelWork reports whether events first..last allocate under a module's
// call and nothing under an optimizer.
func (b *phaseBuilder) modelWork(first, last int) bool {
	model := false
	for i := first; i <= last; i++ {
		ev := &b.events[i]
		if ev.Action != snapshot.ActionAlloc {
			continue
		}
		kd := b.k.event(ev)
		if kd&kindOptimizer != 0 {
			return false
		}
		model = model || kd&kindModule != 0
	}
	return model
}

// harnessPhases reads memscope/step/N/PHASE ranges; nil when there are none.
func harnessPhases(events []snapshot.Event, ranges []snapshot.Range) *Phases {
	p := &Phases{Source: "harness", PeakPhase: -1}
	// Each range's events are found by time. With many ranges, and times
	// in order (as torch records them), each search starts where the last
	// one ended: the ranges come by start time.
	sorted := len(ranges) >= 1024 && timeSorted(events)
	at := 0 // where the last search ended
	search := func(f func(int) bool) int {
		if sorted {
			at = searchNear(len(events), at, f)
			return at
		}
		return sort.Search(len(events), f)
	}
	for _, r := range ranges {
		num, name, ok := harnessName(r.Name)
		if !ok {
			continue
		}
		step, _ := strconv.Atoi(num)
		end := r.EndUS
		if end == 0 && len(events) > 0 {
			end = events[len(events)-1].TimeUS
		}
		first := search(func(i int) bool { return events[i].TimeUS >= r.StartUS })
		last := search(func(i int) bool { return events[i].TimeUS > end }) - 1
		p.List = append(p.List, Phase{Step: step, Name: name, First: first, Last: last, StartUS: r.StartUS, EndUS: end})
	}
	if len(p.List) == 0 {
		return nil
	}
	return p
}

// timeSorted reports whether the events' times never go back.
func timeSorted(events []snapshot.Event) bool {
	for i := 1; i < len(events); i++ {
		if events[i].TimeUS < events[i-1].TimeUS {
			return false
		}
	}
	return true
}

// searchNear is sort.Search(n, f), f false then true over [0, n), looking
// first near hint and then in steps that double.
func searchNear(n, hint int, f func(int) bool) int {
	if n == 0 {
		return 0
	}
	hint = min(max(hint, 0), n-1)
	lo, hi := 0, n // f is false below lo, and true at hi unless hi is n
	if f(hint) {
		hi = hint
		for step := 1; ; step *= 2 {
			j := hi - step
			if j < 0 {
				break
			}
			if !f(j) {
				lo = j + 1
				break
			}
			hi = j
		}
	} else {
		lo = hint + 1
		for step := 1; lo < n; step *= 2 {
			j := lo - 1 + step
			if j >= n {
				break
			}
			if f(j) {
				hi = j
				break
			}
			lo = j + 1
		}
	}
	return lo + sort.Search(hi-lo, func(i int) bool { return f(lo + i) })
}

// phaseAccumulator collects per-phase numbers during the replay pass.
type phaseAccumulator struct {
	p     *Phases
	owner []int32 // event index → phase index, -1 for none
	prev  snapshot.Numbers
	// empties are the phases with no event, by First; the state after
	// event First-1 is kept for each as the replay passes it.
	empties []int
	next    int
	emptyAt map[int]snapshot.Numbers
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
		if ph.Last < ph.First {
			a.empties = append(a.empties, pi)
		}
	}
	sort.SliceStable(a.empties, func(i, j int) bool { return p.List[a.empties[i]].First < p.List[a.empties[j]].First })
	a.emptyAt = map[int]snapshot.Numbers{}
	return a
}

// keepEmpty stores the state after event i for the empty phases at i+1.
func (a *phaseAccumulator) keepEmpty(i int, n snapshot.Numbers) {
	for a.next < len(a.empties) && a.p.List[a.empties[a.next]].First-1 <= i {
		a.emptyAt[a.empties[a.next]] = n
		a.next++
	}
}

// stateBefore returns the state an empty phase sits at: after its First-1
// event, or the last state when that is past the end.
func (a *phaseAccumulator) stateBefore(pi int, t *snapshot.Timeline) snapshot.Numbers {
	if n, ok := a.emptyAt[pi]; ok {
		return n
	}
	if a.p.List[pi].First <= 0 {
		return t.Start
	}
	return a.prev
}

// observe takes the state after event i (before the first event at -1).
func (a *phaseAccumulator) observe(i int, n snapshot.Numbers) {
	if a.next < len(a.empties) {
		a.keepEmpty(i, n)
	}
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
			st := a.stateBefore(pi, t)
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
