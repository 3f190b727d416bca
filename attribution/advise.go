package attribution

import (
	"sort"

	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/snapshot"
)

// AdviseOptions tune Advise.
type AdviseOptions struct {
	// Ranks is the data-parallel ranks optimizer-state sharding is
	// suggested over (0: budget.DefaultRanks); LossChunks the slices of a
	// chunked cross-entropy (0: 8, as budget.Shape.LossChunks).
	Ranks, LossChunks int64
	// DeviceMemory, when above 0, is the device each fix is held against
	// (budget.FitNeed), called DeviceName ("" for a size).
	DeviceMemory int64
	DeviceName   string
	// Settings runs the allocator model under other allocator settings
	// (Advice.Settings): a what-if per setting, so off where advise rides
	// on another command (summary).
	Settings bool
}

// AdviseTerm is a term of what holds the peak.
type AdviseTerm int

const (
	TermModelStates   AdviseTerm = iota // parameters, gradients and optimizer state
	TermActivations                     // saved activations (born in forward, freed in backward)
	TermLogits                          // the vocabulary-sized logits of the loss, their copies and gradients
	TermTemporaries                     // born and freed inside one phase
	TermLeak                            // kept from an earlier step to the end, when the floor climbs
	TermOther                           // the batch, workspaces and caches, memory older than the recording
	TermFragmentation                   // reserved but not allocated at the peak (not part of the peak)
	NumAdviseTerms
)

// Advice is what holds a device's allocated peak, by term, and the fixes
// that lower it, each computed from the snapshot's own blocks: the blocks
// the fix would not allocate or would shrink, over every event of the
// peak's step, so that a fix that moves the peak elsewhere in the step is
// predicted at its new place.
type Advice struct {
	// Training is false when the recording has no backward (inference)
	// and did not run out of memory in a step's forward: advise covers
	// training peaks; Holders and Fixes are then empty, as they are when
	// the peak falls outside the steps (Step −1).
	Training bool
	// Peak is the allocated peak, after event PeakIndex, in phase Phase of
	// step Step; Reserved is reserved bytes there.
	Peak, Reserved int64
	PeakIndex      int
	Step           int
	Phase          string
	// OOM, on a device that ran out of memory inside a step, is that
	// step: Step and Phase are then its, Holders are what its need holds
	// (live at the OOM and what it still had to allocate), and the fixes
	// are held against its limit, those that fit first (nil otherwise).
	OOM *AdviceOOM
	// Holders are the peak's live blocks by term (TermFragmentation holds
	// reserved − allocated, not blocks).
	Holders [NumAdviseTerms]Bytes
	// LogitsBytes is the largest request at the loss site (0: no loss
	// frame found); Layers the repeated layers found in the forward (0:
	// none: full checkpointing is not computed).
	LogitsBytes int64
	Layers      int
	// Fixes are ranked cheapest first (budget.FixKind.CostRank), then by
	// new peak; only those that lower the peak by 1% or more. On an OOM'd
	// step, those whose peak fits its limit come first (Limit), then
	// those the cap's bracket cannot decide, then the rest.
	Fixes []AdviceFix
	// Combination is, with DeviceMemory or on an OOM'd step, when no fix
	// alone fits the device or the limit, the cheapest run of fixes that
	// does (nil otherwise).
	Combination *AdviceCombination
	// Fit holds the peak against the device (nil without DeviceMemory, and
	// on an OOM'd step, whose AdviceOOM.Fit says it).
	Fit *budget.Fit
	// Frag is the verdict on the reserved-but-free memory at the peak, with
	// the allocator settings to try (Device.Frag's first).
	Frag *FragVerdict
	// Inference, for a recording with no backward whose KV cache was
	// recognised: where its memory is, and the headroom on the device.
	Inference *InferenceAdvice
	// Settings, with AdviseOptions.Settings, are the allocator settings
	// the model says lower the reserved peak, largest saving first.
	Settings []SettingAdvice
}

// InferenceAdvice is an inference run's memory against a device: the
// weights floor, the KV cache and its growth, the prefill's peak, and, with
// a device size, what is left at the peak and how many more decode steps of
// this cache's growth that would hold.
type InferenceAdvice struct {
	*Inference
	// Headroom is the device's memory minus the allocated peak (0 without
	// a device size; negative when the peak does not fit); MoreSteps the
	// decode steps of GrowthPerStep it holds (0 for a cache allocated
	// once, or without a device size).
	Headroom  int64
	MoreSteps int64
}

// inferenceHeadroom is the device's Inference held against memory bytes
// (0: no device size).
func (d *Device) inferenceHeadroom(memory int64) *InferenceAdvice {
	ia := &InferenceAdvice{Inference: d.Inference}
	if memory <= 0 {
		return ia
	}
	ia.Headroom = memory - d.Peak.Allocated
	if ia.Growing && ia.GrowthPerStep > 0 && ia.Headroom > 0 {
		ia.MoreSteps = ia.Headroom / ia.GrowthPerStep
	}
	return ia
}

// AdviceFix is one fix with what it does to the peak.
type AdviceFix struct {
	Kind budget.FixKind
	Term AdviseTerm // the term it shrinks
	// Removes is the bytes the fix takes from the old peak's moment (on an
	// OOM'd step, its need's), net of what it adds there, from Blocks of
	// its live blocks; NewPeak the predicted allocated peak of the step
	// with it, after event NewPeakIndex of this recording.
	Removes      int64
	Blocks       int
	NewPeak      int64
	NewPeakIndex int
	CostRank     int
	// Ranks is the shard count (FixShardOptimizer), Chunks the loss's
	// slices (FixChunkedLoss); 0 otherwise. Optimizer is the optimizer's
	// class for FixFusedAdamW ("" when no range names it).
	Ranks, Chunks int64
	Optimizer     string
	// Fit holds NewPeak against DeviceMemory; on an OOM'd step Limit holds
	// it against the step's limit instead (each nil otherwise).
	Fit   *budget.Fit
	Limit *LimitFit
	// Shrinks are the recorded requests the fix makes smaller (a fraction
	// Num/Den of each goes: the logits' slices, the optimizer state's
	// bytes), by the stack and alloc event of each block in the step;
	// Moves says it also changes what it cannot say as a smaller request
	// (a block dropped, made earlier, or a new buffer), and MovesBytes is
	// what those changes add to the new peak (NewPeak less the peak with
	// the shrinks alone; 0 when they add nothing or take bytes away).
	// Package fit drives the allocator model with the shrunk requests at
	// other batches.
	Shrinks    []FixShrink
	Moves      bool
	MovesBytes int64
	// MovesSave says the other changes take bytes away (the new peak is
	// below the shrinks' alone): the shrinks then say less than the fix.
	MovesSave bool
}

// FixShrink is one recorded request a fix makes smaller: Num/Den of it
// goes.
type FixShrink struct {
	Stack    snapshot.StackID
	Alloc    int // the alloc event in the recording
	Num, Den int64
}

// adviseBlock is a block live during the peak's step: live after events
// start … end−1 (end is its death, or past the step).
type adviseBlock struct {
	start, end int
	size, req  int64
	stack      snapshot.StackID
	alloc      int // its alloc event, -1 before the recording
	cat        Category
	born       string // the phase it was born in
	toEnd      bool   // never freed in the recording
	logits     bool
	needed     bool // not recorded: what an OOM'd step still had to allocate (addNeeded)
}

// adviseStep is the peak's step as blocks over its events.
type adviseStep struct {
	first, last int  // events of the step; positions are index − (first−1)
	cut         bool // the step ends at an OOM (last): it was cut short there
	blocks      []adviseBlock
	base        []int64 // allocated after each position
}

func (st *adviseStep) pos(i int) int { return i - (st.first - 1) }

// delta is a change of bytes after events start … end−1. A fix's deltas
// say which block each changes and how (op), so that fixes combine by
// composing what they do to each block (combine) rather than by adding
// bytes: two fixes that shrink the same block do not remove it twice.
type delta struct {
	start, end int
	bytes      int64
	block      int     // the block's position in adviseStep.blocks; −1: bytes of no block (a new buffer)
	op         deltaOp // what the delta does to the block
	num, den   int64   // opShrink: num/den of the block goes
}

// deltaOp is what a delta does to its block.
type deltaOp uint8

const (
	opAdd    deltaOp = iota // bytes of no block: a buffer the fix makes
	opShrink                // num/den of the block goes over its whole life
	opDrop                  // the block is not there after events start … end−1
	opEarly                 // the block is there from start, before its alloc
)

// added is a buffer of bytes after events start … end−1.
func added(start, end int, bytes int64) delta {
	return delta{start: start, end: end, bytes: bytes, block: -1}
}

// shrink is num/den of block k going over its life.
func (st *adviseStep) shrink(k int, num, den int64) delta {
	b := &st.blocks[k]
	return delta{start: b.start, end: b.end, bytes: -b.size * num / den, block: k, op: opShrink, num: num, den: den}
}

// drop is block k not there after events start … end−1.
func (st *adviseStep) drop(k, start, end int) delta {
	return delta{start: start, end: end, bytes: -st.blocks[k].size, block: k, op: opDrop}
}

// early is block k there from event start on, before its alloc.
func (st *adviseStep) early(k, start int) delta {
	b := &st.blocks[k]
	return delta{start: start, end: b.start, bytes: b.size, block: k, op: opEarly}
}

// sum returns, at each position of the step, the sum of the deltas there.
func (st *adviseStep) sum(ds []delta, n int) []int64 {
	out := make([]int64, n+1)
	for _, d := range ds {
		s, e := max(st.pos(d.start), 0), min(st.pos(d.end), n)
		if s < e {
			out[s] += d.bytes
			out[e] -= d.bytes
		}
	}
	for p := 1; p <= n; p++ {
		out[p] += out[p-1]
	}
	return out[:n]
}

// peakWithout returns the highest sum of the deltas alone over the step,
// and the event after which it is reached.
func (st *adviseStep) peakWithout(ds []delta) (int64, int) {
	var best int64
	at := 0
	for p, v := range st.sum(ds, len(st.base)) {
		if p == 0 || v > best {
			best, at = v, p
		}
	}
	return best, at + st.first - 1
}

// peakWith returns the step's highest allocated bytes with the deltas and
// the event after which it is reached (the first, at a tie).
func (st *adviseStep) peakWith(ds []delta) (int64, int) {
	var best int64
	at := 0
	for p, v := range st.sum(ds, len(st.base)) {
		if v += st.base[p]; p == 0 || v > best {
			best, at = v, p
		}
	}
	return best, at + st.first - 1
}

// Advise attributes d's allocated peak to terms and computes the fixes.
func (d *Device) Advise(opt AdviseOptions) *Advice {
	ad, _, _ := d.advise(opt)
	return ad
}

// advise is Advise, with the peak's step and each fix's deltas (in
// ad.Fixes' order) for tests; nil when there are no fixes.
//
// On a device that ran out of memory inside a step, that step is the one
// advised (AdviceOOM): its window ends at the OOM (what follows is the
// error unwinding), what it still had to allocate is a block made there
// (addNeeded), the fixes are measured at its need's moment and held
// against its limit, and those that then fit come first.
func (d *Device) advise(opt AdviseOptions) (ad *Advice, st *adviseStep, fixDeltas [][]delta) {
	ad = &Advice{Peak: d.Peak.Allocated, PeakIndex: d.Peak.Index, Step: -1}
	ad.Reserved = d.Peak.Reserved
	if len(d.Frag) > 0 && d.Frag[0] != nil {
		ad.Frag = &d.Frag[0].Verdict
	}
	for _, ph := range d.Phases.List {
		ad.Training = ad.Training || ph.Name == "backward"
	}
	if pi := d.Phases.PeakPhase; pi >= 0 {
		ad.Step, ad.Phase = d.Phases.List[pi].Step, d.Phases.List[pi].Name
	}
	cut := -1
	if o := d.failedOOM(); o != nil && (ad.Training || o.Phase == "forward" && d.Inference == nil) {
		// A step cut short before its backward is still a training
		// step's forward: its terms apply.
		ad.OOM = d.adviceOOM(o, opt, ad.Training)
		ad.Training, ad.Step, ad.Phase, cut = true, o.Step, o.Phase, o.Index
	}
	if opt.DeviceMemory > 0 && ad.OOM == nil {
		f := budget.FitNeed(opt.DeviceName, opt.DeviceMemory, ad.Peak)
		ad.Fit = &f
	}
	if opt.Settings {
		ad.Settings = d.simulateSettings()
	}
	if !ad.Training && d.Inference != nil {
		ad.Inference = d.inferenceHeadroom(opt.DeviceMemory)
	}
	if !ad.Training || ad.Step < 0 {
		return ad, nil, nil // no backward, or a peak outside the steps: no step to advise on
	}
	st = d.adviseStep(ad.Step, cut)
	if st == nil {
		ad.OOM = nil
		return ad, nil, nil
	}
	if !st.cut {
		ad.OOM = nil // the OOM's event is outside its step's events: nothing to add there
	}
	// at is the moment fixes are measured at, ref the peak they lower.
	at, ref := ad.PeakIndex, ad.Peak
	if o := ad.OOM; o != nil {
		d.addNeeded(st, o)
		o.Need, o.NeedIndex = st.peakWith(nil)
		o.Fit = o.Limit.fit(o.Need)
		at, ref = o.NeedIndex, o.Need
	}
	var chunkedAlready bool
	ad.LogitsBytes, chunkedAlready = st.markLogits(d)
	leak := d.leakBlocks(st)
	// params and state are the parameter and optimizer-state bytes live at
	// the moment measured.
	var params, state int64
	for k := range st.blocks {
		b := &st.blocks[k]
		if !b.liveAt(at) {
			continue
		}
		term := TermOther
		switch {
		case modelState(b.cat):
			term = TermModelStates
		case b.logits:
			term = TermLogits
		case leak[k]:
			term = TermLeak
		case b.cat == Activation:
			term = TermActivations
		case b.cat == Temporary:
			term = TermTemporaries
		}
		ad.Holders[term].Bytes += b.size
		ad.Holders[term].Count++
		switch b.cat {
		case Parameter:
			params += b.size
		case OptimizerState:
			state += b.size
		}
	}
	ad.Holders[TermFragmentation].Bytes = max(ad.Reserved-ad.Peak, 0)

	var fixes []AdviceFix
	var dss [][]delta // each fix's deltas
	add := func(kind budget.FixKind, term AdviseTerm, ds []delta, f AdviceFix) {
		if len(ds) == 0 {
			return
		}
		f.Kind, f.Term, f.CostRank = kind, term, kind.CostRank()
		f.NewPeak, f.NewPeakIndex = st.peakWith(ds)
		for _, x := range ds {
			if x.start <= at && at < x.end {
				f.Removes -= x.bytes
				if x.bytes < 0 {
					f.Blocks++
				}
			}
		}
		if f.NewPeak >= ref || (ref-f.NewPeak)*100 < ref {
			return
		}
		var shrinks []delta
		for _, x := range ds {
			if x.op == opShrink && x.block >= 0 && st.blocks[x.block].alloc >= 0 {
				b := &st.blocks[x.block]
				f.Shrinks = append(f.Shrinks, FixShrink{Stack: b.stack, Alloc: b.alloc, Num: x.num, Den: x.den})
				shrinks = append(shrinks, x)
			} else {
				f.Moves = true
			}
		}
		if f.Moves && len(shrinks) > 0 {
			alone, _ := st.peakWith(shrinks)
			f.MovesBytes, f.MovesSave = max(0, f.NewPeak-alone), f.NewPeak < alone
		}
		switch {
		case ad.OOM != nil:
			fit := ad.OOM.Limit.fit(f.NewPeak)
			f.Limit = &fit
		case opt.DeviceMemory > 0:
			fit := budget.FitNeed(opt.DeviceName, opt.DeviceMemory, f.NewPeak)
			f.Fit = &fit
		}
		fixes, dss = append(fixes, f), append(dss, ds)
	}
	chunks := opt.LossChunks
	if chunks <= 0 {
		chunks = 8
	}
	// The loss: a fused linear cross-entropy never makes the logits; a
	// chunked one keeps one slice of each at a time. Both make the output
	// projection's weight gradient early (lossDeltas).
	isLogits := func(b *adviseBlock) bool { return b.logits }
	fused, chunked := st.lossDeltas()
	add(budget.FixFusedLoss, TermLogits, append(st.scaled(isLogits, 1, 1), fused...), AdviceFix{})
	if !chunkedAlready {
		add(budget.FixChunkedLoss, TermLogits, append(st.scaled(isLogits, chunks-1, chunks), chunked...), AdviceFix{Chunks: chunks})
	}
	// Full checkpointing keeps each layer's input (the previous layer's
	// output) and recomputes the rest during the layer's backward.
	ckpt, layers := d.checkpointDeltas(st, ad.Step)
	ad.Layers = layers
	add(budget.FixFullCkpt, TermActivations, ckpt, AdviceFix{})
	// A fused optimizer step (or foreach=False) makes none of the foreach
	// temporaries.
	var temps []delta
	for _, k := range d.optimizerTemporaries(st) {
		temps = append(temps, st.drop(k, st.blocks[k].start, st.blocks[k].end))
	}
	add(budget.FixFusedAdamW, TermTemporaries, temps, AdviceFix{Optimizer: d.class.optClass})
	// Optimizer state: bf16 moments halve fp32 ones and 8-bit ones keep a
	// quarter (only when the state is about twice the parameters: Adam's
	// two fp32 moments); sharding keeps 1/N. Where an OOM'd step failed in
	// the optimizer, an optimizer with no state, or one that keeps it on
	// the CPU, takes all of it off the device.
	isState := func(b *adviseBlock) bool { return b.cat == OptimizerState }
	if params > 0 && state*2 >= params*3 {
		add(budget.FixBF16Moments, TermModelStates, st.scaled(isState, 1, 2), AdviceFix{})
		add(budget.FixEightBitMoments, TermModelStates, st.scaled(isState, 3, 4), AdviceFix{})
	}
	ranks := opt.Ranks
	if ranks <= 1 {
		ranks = budget.DefaultRanks
	}
	add(budget.FixShardOptimizer, TermModelStates, st.scaled(isState, ranks-1, ranks), AdviceFix{Ranks: ranks})
	if ad.OOM != nil && ad.Phase == "optimizer" {
		add(budget.FixOffloadOptimizer, TermModelStates, st.scaled(isState, 1, 1), AdviceFix{})
		add(budget.FixStatelessOptimizer, TermModelStates, st.scaled(isState, 1, 1), AdviceFix{})
	}
	// A leak: the blocks kept from earlier steps go.
	var ld []delta
	for k := range st.blocks {
		if leak[k] {
			ld = append(ld, st.drop(k, st.blocks[k].start, st.blocks[k].end))
		}
	}
	add(budget.FixReleaseLeak, TermLeak, ld, AdviceFix{})
	add(budget.FixMicroBatch, TermActivations, d.microBatchDeltas(st, ad.Step), AdviceFix{})
	order := make([]int, len(fixes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := &fixes[order[i]], &fixes[order[j]]
		if a.Limit != nil && b.Limit != nil && fitClass(a.Limit.Verdict) != fitClass(b.Limit.Verdict) {
			return fitClass(a.Limit.Verdict) < fitClass(b.Limit.Verdict) // those that fit the failed step first
		}
		if a.CostRank != b.CostRank {
			return a.CostRank < b.CostRank
		}
		return a.NewPeak < b.NewPeak
	})
	sorted, sortedDeltas := make([]AdviceFix, len(fixes)), make([][]delta, len(fixes))
	for i, o := range order {
		sorted[i], sortedDeltas[i] = fixes[o], dss[o]
	}
	if len(sorted) > 0 {
		ad.Fixes = sorted
	}
	ad.Combination = st.combination(ad.Fixes, sortedDeltas, opt, ad.OOM)
	return ad, st, sortedDeltas
}

// fitClass orders limit verdicts for ranking: a fix that fits with room,
// then one that fits tight, then one the cap's bracket cannot decide, then
// one that does not fit.
func fitClass(v LimitVerdict) int {
	switch v {
	case LimitFits:
		return 0
	case LimitTight:
		return 1
	case LimitUnsure:
		return 2
	}
	return 3
}

// scaled returns, for each block keep chooses, the delta that removes
// num/den of it.
func (st *adviseStep) scaled(keep func(*adviseBlock) bool, num, den int64) []delta {
	var ds []delta
	for k := range st.blocks {
		b := &st.blocks[k]
		if keep(b) && num > 0 {
			ds = append(ds, st.shrink(k, num, den))
		}
	}
	return ds
}

// stepWindow returns the blocks live before event first and the sizes of
// the allocs in [first, last] (sizes[i−first]): from the analysis's kept
// sizes when it has them, else from one replay up to last.
func (d *Device) stepWindow(first, last int) ([]snapshot.LiveBlock, []int64) {
	if d.allocSizes != nil {
		return d.Timeline.LiveAt(first - 1), d.allocSizes[first : last+1]
	}
	return d.Timeline.Window(first, last)
}

// adviseStep collects the blocks live during step: those live before its
// first event and those allocated inside it, each with its lifetime and
// category, and the allocated bytes after each of its events. With cut ≥ 0
// (an OOM's event inside the step) the step ends there: a block freed
// later lives to its end. It returns nil when no event falls in the step.
func (d *Device) adviseStep(step, cut int) *adviseStep {
	st := &adviseStep{first: -1}
	for _, ph := range d.Phases.List {
		if ph.Step != step || ph.Last < ph.First {
			continue
		}
		if st.first < 0 || ph.First < st.first {
			st.first = ph.First
		}
		st.last = max(st.last, ph.Last)
	}
	if st.first < 0 {
		return nil
	}
	if cut >= st.first && cut <= st.last {
		st.last, st.cut = cut, true // the step ran out of memory there; what follows unwinds it
	}
	events := d.Timeline.Events
	endOf := func(death int) int {
		if death < 0 || death > st.last {
			return st.last + 1
		}
		return death
	}
	live, sizes := d.stepWindow(st.first, st.last)
	for _, b := range live {
		death := d.class.life.deathOf(&b)
		born, _ := d.class.phaseName(b.AllocIndex)
		st.blocks = append(st.blocks, adviseBlock{start: st.first - 1, end: endOf(death), size: b.Size, req: b.Requested,
			stack: b.Stack, alloc: b.AllocIndex, cat: d.class.Classify(&b), born: born, toEnd: death < 0})
	}
	for i := st.first; i <= st.last; i++ {
		ev := &events[i]
		if ev.Action != snapshot.ActionAlloc {
			continue
		}
		size := sizes[i-st.first]
		lb := snapshot.LiveBlock{Addr: ev.Addr, Size: size, Requested: ev.Size, Stack: ev.Stack, AllocIndex: i, AllocTimeUS: ev.TimeUS}
		born, _ := d.class.phaseName(i)
		death := d.class.life.deathOf(&lb)
		st.blocks = append(st.blocks, adviseBlock{start: i, end: endOf(death), size: size, req: ev.Size,
			stack: ev.Stack, alloc: i, cat: d.class.Classify(&lb), born: born, toEnd: death < 0})
	}
	ds := make([]delta, len(st.blocks))
	for k, b := range st.blocks {
		ds[k] = added(b.start, b.end, b.size)
	}
	st.base = st.sum(ds, st.last-st.first+2)
	return st
}
