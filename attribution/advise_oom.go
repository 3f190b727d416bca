package attribution

import (
	"sort"

	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/snapshot"
)

// Advice on a run that ran out of memory: the step that failed is the one
// to fit, and each fix is held against the memory that step had.

// AdviceOOM is the step an out-of-memory error cut short, held against the
// memory it had.
type AdviceOOM struct {
	N, Index int // the OOM (OOM.N) and its event
	Step     int
	Phase    string
	Request  int64
	// Live and Reserved are allocated and reserved bytes at the OOM.
	Live, Reserved int64
	// More is what the step still had to allocate beyond Live: the failed
	// request, or, when the recording tells the rest (Needs), all of it.
	More  int64
	Needs *StepNeeds
	// Need is the failed step's allocated peak, at least: the highest of
	// its recorded events and of Live + More, after event NeedIndex. Each
	// fix's NewPeak is the same with the fix.
	Need      int64
	NeedIndex int
	// Partial is true when what the step would have allocated after the
	// failed request is not known (no Needs): Need and every fix's peak
	// are what the failed moment needed, a bound from below.
	Partial bool
	// NoBackward is true when the recording has no backward: the step ran
	// out of memory in its forward, whose terms are the ones to shrink.
	NoBackward bool
	Limit      Limit
	Fit        LimitFit // Need against Limit
}

// LimitSource says where an OOM'd step's limit comes from.
type LimitSource int

const (
	LimitGiven  LimitSource = iota + 1 // AdviseOptions.DeviceMemory: the user's device or cap
	LimitCap                           // a per-process cap, bracketed by the OOM (OOM.Cap)
	LimitDevice                        // the device: reserved at the OOM plus what the driver had free
)

// Limit is the memory an OOM'd step had: somewhere in [Low, High), or
// exactly Low when Low == High.
type Limit struct {
	Low, High int64
	Source    LimitSource
	Name      string // the GPU's name with LimitGiven, "" otherwise
}

// LimitVerdict is a step's peak against a Limit.
type LimitVerdict int

const (
	LimitFits       LimitVerdict = iota + 1 // at most Low, with budget.MinHeadroom of it left or more
	LimitTight                              // at most Low, with less than budget.MinHeadroom of it left
	LimitUnsure                             // between Low and High: the cap is not known closely enough to tell
	LimitDoesNotFit                         // above the limit (at or above High)
)

// LimitFit is an allocated peak held against a Limit. The limit bounds
// reserved memory, which is at least what is allocated: a peak that fits
// in allocated bytes may still not once the allocator rounds and caches.
type LimitFit struct {
	Peak    int64
	Verdict LimitVerdict
	// Headroom is Low − Peak (negative above Low); Over, when it does not
	// fit, is how far Peak is above the limit at least (Peak − High).
	Headroom, Over int64
}

// fit holds peak against l.
func (l Limit) fit(peak int64) LimitFit {
	f := LimitFit{Peak: peak, Headroom: l.Low - peak}
	switch {
	case peak <= l.Low && float64(f.Headroom) >= budget.MinHeadroom*float64(l.Low):
		f.Verdict = LimitFits
	case peak <= l.Low:
		f.Verdict = LimitTight
	case peak < l.High:
		f.Verdict = LimitUnsure
	default:
		f.Verdict = LimitDoesNotFit
		f.Over = peak - l.High
	}
	return f
}

// Fits reports whether the peak fits with room to spare (LimitFits).
func (f LimitFit) Fits() bool { return f.Verdict == LimitFits }

// failedOOM returns the device's last OOM inside a step, the one whose step
// advise fits; nil when there is none.
func (d *Device) failedOOM() *OOM {
	for i := len(d.OOMs) - 1; i >= 0; i-- {
		if d.OOMs[i].Step >= 0 {
			return d.OOMs[i]
		}
	}
	return nil
}

// oomLimit is the memory the OOM'd step had: the device the user gave,
// else the per-process cap the OOM brackets, else the device as the
// driver saw it at the OOM (what was reserved and what was still free).
func oomLimit(o *OOM, opt AdviseOptions) Limit {
	switch {
	case opt.DeviceMemory > 0:
		return Limit{Low: opt.DeviceMemory, High: opt.DeviceMemory, Source: LimitGiven, Name: opt.DeviceName}
	case o.Cap != nil:
		return Limit{Low: o.Cap.Low, High: o.Cap.High, Source: LimitCap}
	}
	n := o.Reserved + o.DeviceFree
	return Limit{Low: n, High: n, Source: LimitDevice}
}

// adviceOOM starts the advice on o's step: what it had, before the step's
// blocks are known.
func (d *Device) adviceOOM(o *OOM, opt AdviseOptions, training bool) *AdviceOOM {
	a := &AdviceOOM{N: o.N, Index: o.Index, Step: o.Step, Phase: o.Phase, Request: o.Request, Live: o.Allocated, Reserved: o.Reserved,
		More: o.Request, Needs: o.Needs, Partial: o.Needs == nil, NoBackward: !training, Limit: oomLimit(o, opt)}
	if o.Needs != nil {
		a.More = o.Needs.More
	}
	return a
}

// addNeeded puts what the OOM'd step still had to allocate into st as one
// block made at the OOM and live to the step's end (st ends at the OOM):
// the rest of the optimizer's state when the OOM's Needs tell it, else
// the failed request, by its phase and size an activation (forward), a
// weight's gradient or a temporary (backward), or a temporary
// (optimizer). Fixes then act on it as on the recorded blocks.
func (d *Device) addNeeded(st *adviseStep, a *AdviceOOM) {
	ev := &d.Timeline.Events[a.Index]
	b := adviseBlock{start: a.Index, end: st.last + 1, size: a.More, req: a.More, stack: ev.Stack, alloc: a.Index,
		born: a.Phase, needed: true, cat: Unknown}
	switch {
	case a.Needs != nil:
		b.cat = OptimizerState
	case a.Phase == "forward":
		b.cat = Activation
	case a.Phase == "backward" && st.paramSized(a.Request):
		b.cat = Gradient
	case a.Phase == "backward", a.Phase == "optimizer":
		b.cat = Temporary
	}
	st.blocks = append(st.blocks, b)
	for p := st.pos(b.start); p < len(st.base); p++ {
		st.base[p] += b.size
	}
}

// paramSized reports whether a request is the size of a parameter of the
// step: a weight's gradient, not a batch-sized tensor.
func (st *adviseStep) paramSized(req int64) bool {
	for k := range st.blocks {
		if b := &st.blocks[k]; b.cat == Parameter && b.req == req {
			return true
		}
	}
	return false
}

// liveAt reports whether block b is live after event i.
func (b *adviseBlock) liveAt(i int) bool { return b.start <= i && i < b.end }

// optimizerTemporaries marks the step's foreach temporaries: blocks made
// under torch/optim (or another optimizer's file) inside an Optimizer.step
// range and freed inside the same range, one or more per parameter (a
// foreach optimizer's intermediate lists); the failed request of an OOM in
// such a range counts too. A fused optimizer (fused=True) makes none.
func (d *Device) optimizerTemporaries(st *adviseStep) []int {
	c := d.class
	if len(c.steps) == 0 {
		return nil
	}
	events := d.Timeline.Events
	var out []int
	for k := range st.blocks {
		b := &st.blocks[k]
		if b.alloc < st.first || b.stack == 0 || c.kinds.stack(b.stack)&kindOptimizer == 0 {
			continue
		}
		if b.cat != Temporary {
			continue
		}
		r := rangeAt(c.steps, events[b.alloc].TimeUS)
		if r < 0 {
			continue
		}
		if !b.needed && (b.end > st.last || !c.steps[r].Contains(events[b.end].TimeUS)) {
			continue // outlives the step's range
		}
		out = append(out, k)
	}
	return out
}

// rangeAt returns the index of the range of rs (sorted by start, not
// overlapping) that holds time t, −1 when none does.
func rangeAt(rs []snapshot.Range, t int64) int {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].StartUS > t }) - 1
	if i >= 0 && rs[i].Contains(t) {
		return i
	}
	return -1
}

// periodLayers splits a forward an OOM cut short into its repeated layers
// by the order of its allocations: one layer allocates the same stacks in
// the same order as the one before, so the sequence of stacks repeats with
// the layer's allocation count as its period, the last repeat cut off
// where the OOM struck (layers' count of each stack, one layer short for
// the stacks after that point, does not tell it). The period is, among the
// commonest distances between two allocations of one stack, the one at
// which the most allocations repeat, accepted when at least half of them
// do; layers then start every period from the first allocation that does. It returns each
// layer's first and end (exclusive) block positions, as layers does, nil
// when the forward does not repeat so.
func (st *adviseStep) periodLayers(fwd *Phase) [][2]int {
	var seq []int // block positions of the forward's allocations
	for k := range st.blocks {
		b := &st.blocks[k]
		if b.alloc >= fwd.First && b.alloc <= fwd.Last && b.start == b.alloc && !b.needed && b.stack != 0 {
			seq = append(seq, k)
		}
	}
	last := map[snapshot.StackID]int{} // the stack's latest index into seq
	gaps := map[int]int{}
	for i, k := range seq {
		id := st.blocks[k].stack
		if j, ok := last[id]; ok {
			gaps[i-j]++
		}
		last[id] = i
	}
	// The commonest distances are the candidates (a stack made twice in a
	// row inside each layer repeats at a short one); the period is the one
	// at which the most allocations repeat.
	type cand struct{ gap, n int }
	var cands []cand
	for g, n := range gaps {
		if g >= 2 {
			cands = append(cands, cand{g, n})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		return cands[i].n > cands[j].n || cands[i].n == cands[j].n && cands[i].gap < cands[j].gap
	})
	p, first, matched := 0, -1, 0
	for _, c := range cands[:min(len(cands), 8)] {
		f, m := -1, 0
		for i := 0; i+c.gap < len(seq); i++ {
			if st.blocks[seq[i]].stack == st.blocks[seq[i+c.gap]].stack {
				m++
				if f < 0 {
					f = i
				}
			}
		}
		if m > matched {
			p, first, matched = c.gap, f, m
		}
	}
	if p == 0 || 2*matched < len(seq) {
		return nil
	}
	var out [][2]int
	for s := first; s < len(seq); s += p {
		e := min(s+p, len(seq))
		out = append(out, [2]int{seq[s], seq[e-1] + 1})
	}
	if len(out) < 2 {
		return nil
	}
	return out
}
