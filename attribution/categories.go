package attribution

import (
	"sort"
	"strings"

	"github.com/memscope/memscope/snapshot"
)

// Category is what an allocation is for, inferred from its lifetime
// relative to the phases and from its stack.
type Category uint8

const (
	Unknown Category = iota
	Parameter
	OptimizerState
	Gradient
	Activation
	Input
	Temporary
	// BeforeRecording is memory that predates the recording and that
	// neither its sizes nor its lifetime assign to a category.
	BeforeRecording
	// KVCache is the key and value tensors an inference run's attention
	// cache holds (kvcache.go).
	KVCache
	// GatheredParameter is a sharded data-parallel library's gathered
	// copy of parameters for compute (FSDP's all-gather outputs and
	// unsharded parameters, ZeRO-3's), freed after each module.
	GatheredParameter
	// GraphPool is memory in a private pool: a CUDA graph's (CUDA graph
	// trees under torch.compile(mode="reduce-overhead"), a
	// graph_pool_handle()) or a torch.cuda.MemPool's. It is held for the
	// graph's replays and serves no other request.
	GraphPool
	NumCategories
)

var categoryNames = [NumCategories]string{"unknown", "parameter", "optimizer state", "gradient", "activation", "input", "temporary", "before recording", "kv cache", "parameter (gathered)", "cuda graph pool"}

func (c Category) String() string {
	if c < NumCategories {
		return categoryNames[c]
	}
	return "unknown"
}

// lifetimes gives, for every block, the event that ended it (from the
// replay: snapshot.ReplayOptions.Lifetimes).
type lifetimes struct {
	death    []int32
	preDeath map[uint64]int32
}

// deathOf returns the index of the event that ended b, or -1.
func (l *lifetimes) deathOf(b *snapshot.LiveBlock) int {
	if b.AllocIndex >= 0 {
		return int(l.death[b.AllocIndex])
	}
	if d, ok := l.preDeath[b.Addr]; ok {
		return int(d)
	}
	return -1
}

// classifier assigns categories to blocks.
type classifier struct {
	st     *snapshot.Stacks
	events []snapshot.Event
	phases *Phases
	owner  []int32 // event → phase index
	life   *lifetimes
	kinds  *kinds
	// steps and zeros are the Optimizer.step and Optimizer.zero_grad
	// ranges, by start time.
	steps, zeros []snapshot.Range
	// firstModule holds, per phase index, the first allocation of a
	// forward phase that calls an nn.Module (-1: none); what the phase
	// allocates before it is the batch.
	firstModule []int
	// firstOOM holds, per phase index, its first oom event (-1: none;
	// len(events) for the last phase of a pass cut short after the last
	// event).
	firstOOM []int
	// pre says, for blocks live before the first event and never
	// freed, which are parameters and which optimizer state (see
	// splitPreexisting).
	pre map[uint64]Category
	// training is set when the recording holds a backward or an
	// optimizer; kv holds the alloc events of KV cache blocks
	// (findKVCache), nil when there are none.
	training bool
	kv       map[int]bool
	// paramSites holds the stacks whose optimizer-phase allocations
	// replace parameters out of place (p.data = p.data - …): see
	// findParamSites. keptMany holds, in a recording with no steps, the
	// stacks that made three or more blocks never freed: something kept
	// per iteration, not the weights.
	paramSites map[snapshot.StackID]bool
	keptMany   map[snapshot.StackID]bool
	// optClass is the optimizer's class, from its Optimizer.step range
	// ("AdamW"), "" when there is none.
	optClass string
	// noHistory is set for a snapshot with no allocation history: a
	// state-only dump, or a one-entry trace (legacy
	// _record_memory_history(True), enabled="state"): nothing came
	// "before" a recording.
	noHistory bool
}

func newClassifier(s *snapshot.Snapshot, events []snapshot.Event, ranges []snapshot.Range, p *Phases, owner []int32, life *lifetimes, k *kinds) *classifier {
	c := &classifier{st: s.Stacks, events: events, phases: p, owner: owner, life: life, kinds: k}
	for _, r := range ranges {
		switch {
		case strings.HasPrefix(r.Name, "Optimizer.step#"):
			c.steps = append(c.steps, r)
		case strings.HasPrefix(r.Name, "Optimizer.zero_grad#"):
			c.zeros = append(c.zeros, r)
		}
	}
	c.training = len(c.steps) > 0 || len(c.zeros) > 0
	if len(c.steps) > 0 {
		name := strings.TrimPrefix(c.steps[0].Name, "Optimizer.step#")
		c.optClass, _, _ = strings.Cut(name, ".")
	}
	for _, ph := range p.List {
		c.training = c.training || ph.Name == "backward" || ph.Name == "optimizer"
	}
	for i := 0; i < len(events) && !c.training; i++ {
		if events[i].Action == snapshot.ActionAlloc && events[i].Stack != 0 && k.stack(events[i].Stack)&kindOptimizer != 0 {
			c.training = true
		}
	}
	c.firstModule = make([]int, len(p.List))
	c.firstOOM = make([]int, len(p.List))
	for pi := range p.List {
		ph := &p.List[pi]
		c.firstModule[pi], c.firstOOM[pi] = -1, -1
		for i := max(ph.First, 0); i <= ph.Last && i < len(events); i++ {
			if events[i].Action == snapshot.ActionOOM {
				c.firstOOM[pi] = i
				break
			}
		}
		if last := pi == len(p.List)-1; last && c.firstOOM[pi] < 0 && (p.CutElsewhere || p.Source == "one pass" && ph.Name == "forward") {
			// The pass was cut short after this device's last event: by
			// another device's OOM, or by the dump after one forward
			// (what that forward keeps is its output and, with grad on,
			// what it saved for a backward that was never recorded).
			c.firstOOM[pi] = len(events)
		}
		if ph.Name != "forward" {
			continue
		}
		for i := max(ph.First, 0); i <= ph.Last && i < len(events); i++ {
			if events[i].Action == snapshot.ActionAlloc && k.event(&events[i])&kindModule != 0 {
				c.firstModule[pi] = i
				break
			}
		}
	}
	c.findParamSites()
	if len(p.Steps) == 0 {
		n := map[snapshot.StackID]int{}
		for i := range events {
			if events[i].Action == snapshot.ActionAlloc && events[i].Stack != 0 && life.death[i] < 0 {
				n[events[i].Stack]++
			}
		}
		c.keptMany = map[snapshot.StackID]bool{}
		for st, k := range n {
			if k >= 3 {
				c.keptMany[st] = true
			}
		}
	}
	return c
}

// replaceWindow bounds how far before a parameter's free findParamSites
// looks for the allocation that replaced it (the update's temporaries
// come between).
const replaceWindow = 64

// findParamSites finds the stacks whose optimizer-phase allocations are
// parameters replaced out of place, as hand-written optimizers do
// (p.data = p.data - lr·update): the old parameter dies inside the
// optimizer phase just after its replacement, of the same size, is made.
// A chain starts at a weight built in setup (a module's __init__, .to())
// and freed in an optimizer phase; the allocation of the same size made
// last before that free, and still live after it, is its replacement,
// and its stack a parameter site; a block from a parameter site freed in
// a later optimizer phase continues the chain. Moments replaced the same
// way (state["m"] = β·m + …) start from the optimizer's own zeros and
// stay optimizer state.
func (c *classifier) findParamSites() {
	type death struct{ at, alloc int }
	var ds []death
	for i := range c.events {
		if c.events[i].Action != snapshot.ActionAlloc {
			continue
		}
		if d := int(c.life.death[i]); d >= 0 {
			if name, _ := c.phaseName(d); name == "optimizer" {
				ds = append(ds, death{d, i})
			}
		}
	}
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].at < ds[j].at })
	c.paramSites = map[snapshot.StackID]bool{}
	for _, d := range ds {
		ev := &c.events[d.alloc]
		born, _ := c.phaseName(d.alloc)
		switch {
		case (born == "setup" || born == "") && ev.Stack != 0 && c.kinds.stack(ev.Stack)&kindLoad != 0:
		case born == "optimizer" && c.paramSites[ev.Stack]:
		default:
			continue
		}
		_, pi := c.phaseName(d.at)
		first := max(c.phases.List[pi].First, d.at-replaceWindow)
		for j := d.at - 1; j >= first; j-- {
			r := &c.events[j]
			if r.Action == snapshot.ActionAlloc && r.Size == ev.Size && r.Stream == ev.Stream && (c.life.death[j] < 0 || int(c.life.death[j]) > d.at) {
				if r.Stack != 0 {
					c.paramSites[r.Stack] = true
				}
				break
			}
		}
	}
}

// oomAfter reports whether an oom event follows event i within the step
// of phase pi.
func (c *classifier) oomAfter(pi, i int) bool {
	step := c.phases.List[pi].Step
	if step < 0 {
		return false
	}
	for j := pi; j < len(c.phases.List) && c.phases.List[j].Step == step; j++ {
		if o := c.firstOOM[j]; o > i {
			return true
		}
	}
	return false
}

// inRange reports whether time t falls in one of rs (sorted by start, not
// overlapping each other).
func inRange(rs []snapshot.Range, t int64) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].StartUS > t }) - 1
	return i >= 0 && rs[i].Contains(t)
}

// phaseName returns the phase name of event i ("" outside phases).
func (c *classifier) phaseName(i int) (string, int) {
	if i < 0 || i >= len(c.owner) || c.owner[i] < 0 {
		return "", -1
	}
	ph := &c.phases.List[c.owner[i]]
	return ph.Name, int(c.owner[i])
}

// timeOf returns the time of event i, 0 when there is none.
func (c *classifier) timeOf(i int) int64 {
	if i < 0 || i >= len(c.events) {
		return 0
	}
	return c.events[i].TimeUS
}

// Classify returns the category of one live block, from its lifetime
// relative to the phases and the optimizer's ranges, and from its stack.
//
// Blocks born in the recording: a KV cache's keys and values are kv cache
// first (findKVCache); a sharded library's gathered parameters are
// parameter (gathered) and its reduction buffers gradients. Born and dead
// inside one phase is a temporary. Born in the optimizer phase by a stack
// that replaces parameters out of place (findParamSites) is a parameter.
// Born in the optimizer phase and never freed, or born inside an
// Optimizer.step range and freed in a later step's optimizer phase (state
// replaced out of place), or allocated under torch/optim (or another
// optimizer's file) and kept, is optimizer state; other optimizer-phase
// blocks are temporaries. Born in backward and outliving it is a
// gradient. Born in forward before the step's first call of an nn.Module
// is the batch (input); born in forward and freed later an activation;
// never freed unknown (a workspace, a cache or a leak). Kept and made by
// code that builds, loads or moves weights (.to(), from_pretrained, a
// module's __init__) is a parameter in any phase, and so is such a weight
// built in setup that an optimizer phase frees (replaced out of place);
// born in setup, or outside phases by a class's __init__, and kept is a
// parameter too, unless a module's forward made it (a cuBLAS workspace, a
// cache: unknown) or, in
// a recording with no steps, its stack made three or more such blocks
// (kept per iteration: the inference leak). The rest is unknown.
//
// Blocks that predate the recording: by their stack when the snapshot
// kept one (its segments' blocks carry frames: a state-only dump, or
// history recorded before the trace's window): see byStack. Else never
// freed, parameters or optimizer state by sizes (splitPreexisting), else
// before recording; freed inside zero_grad, or by the loop after the
// optimizer step, a gradient; freed inside Optimizer.step, optimizer state
// it replaced; freed in backward, an activation saved before recording
// began; else before recording.
func (c *classifier) Classify(b *snapshot.LiveBlock) Category {
	death := c.life.deathOf(b)
	if b.AllocIndex < 0 {
		if b.FreeStack && c.kinds.stack(b.Stack)&kindZeroGrad != 0 {
			return Gradient // freed by zero_grad
		}
		if b.Stack != 0 && !b.FreeStack {
			// The stack the block was made at (a free site says where
			// it went, not what it was: the rules by death below).
			if cat, ok := c.byStack(b.Stack); ok {
				return cat
			}
			if c.noHistory {
				if kd := c.kinds.stack(b.Stack); kd&kindForward != 0 && kd&kindKV == 0 {
					return Activation // made inside a module's forward and held at the dump
				}
				return Unknown // no history: nothing came "before" a recording
			}
		}
		if death < 0 {
			if cat, ok := c.pre[b.Addr]; ok {
				return cat
			}
			if c.noHistory {
				return Unknown
			}
			return BeforeRecording
		}
		t := c.timeOf(death)
		switch name, _ := c.phaseName(death); {
		case inRange(c.zeros, t):
			return Gradient
		case inRange(c.steps, t):
			return OptimizerState
		case name == "optimizer":
			return Gradient
		case name == "backward":
			return Activation
		}
		return BeforeRecording
	}
	if c.kv[b.AllocIndex] {
		return KVCache
	}
	born, bornPhase := c.phaseName(b.AllocIndex)
	died, diedPhase := c.phaseName(death)
	kd := c.kinds.stack(b.Stack)
	switch {
	case kd&kindReduce != 0:
		return Gradient // FSDP2's allocate serves both: under foreach_reduce it is the reduce-scatter's
	case kd&kindGather != 0:
		return GatheredParameter
	}
	// A block born in a step that an out-of-memory error cut short, and
	// still live (the snapshot was taken while the failed step's frames
	// held it), is what that step was building, not a leak.
	cutShort := death < 0 && bornPhase >= 0 && c.oomAfter(bornPhase, b.AllocIndex)
	unwound := bornPhase >= 0 && bornPhase == diedPhase && b.AllocIndex < c.firstOOM[bornPhase] && death > c.firstOOM[bornPhase]
	if unwound {
		// Freed as the work unwound from an out-of-memory error: it
		// was not a temporary of a phase that never finished.
		died, diedPhase = "", -1
	}
	switch {
	case kd&kindLoad != 0 && kd&kindForward == 0:
		return Parameter // weights built, loaded or moved (.to(), .cuda(); offloaded layers moved in and out)
	case death >= 0 && bornPhase >= 0 && bornPhase == diedPhase:
		return Temporary
	case born == "optimizer" && c.paramSites[b.Stack]:
		return Parameter // a parameter replaced out of place (p.data = …)
	case born == "optimizer" && death < 0,
		born == "optimizer" && died == "optimizer" && inRange(c.steps, c.timeOf(b.AllocIndex)),
		death < 0 && kd&kindOptimizer != 0:
		return OptimizerState
	case born == "optimizer" && died == "optimizer" && c.replacedState(b):
		return OptimizerState // a hand-written optimizer's state, replaced out of place
	case born == "optimizer":
		return Temporary
	case kd&kindLoad != 0 && (death < 0 || died == "optimizer"):
		return Parameter // the model's weights, built, loaded or moved (.to()) and kept, or replaced by the optimizer
	case born == "prefill" || born == "decode" || born == "generate":
		if death >= 0 {
			return Activation // made by one phase of generate() and freed in a later one
		}
		return Unknown // kept, and not the cache: a workspace, the output, or a leak
	case born == "backward" && death < 0 && cublasWorkspace(b.Requested):
		return Unknown // the autograd thread's cuBLAS workspace, kept for the process's life
	case born == "backward":
		return Gradient
	case born == "forward" && bornPhase >= 0 && b.AllocIndex < c.firstModule[bornPhase]:
		return Input
	case born == "forward" && (death >= 0 || cutShort):
		return Activation
	case born == "forward":
		return Unknown // never freed: a workspace, a cache, or a leak
	case born == "data":
		return Input
	case born == "after":
		return Unknown
	case death < 0 && kd&kindForward != 0:
		return Unknown // made by the model's forward and kept: a workspace (cuBLAS'), a cache, or a leak
	case death < 0 && c.keptMany[b.Stack]:
		return Unknown // kept per iteration of a loop with no steps: the inference leak
	case death < 0 && died == "" && (born != "" || c.initFrame(b.Stack)):
		return Parameter // built before the first step (in setup, or by a class's __init__) and kept
	}
	return Unknown
}

// initFrame reports whether a stack runs a class's __init__: where
// hand-written modules make their weights (nn.Parameter(torch.empty(…))).
func (c *classifier) initFrame(id snapshot.StackID) bool {
	for _, f := range c.st.Stack(id) {
		if c.st.Frame(f).Name == "__init__" {
			return true
		}
	}
	return false
}

// replacedState reports whether an optimizer-phase block that a later
// optimizer phase frees is state a hand-written optimizer (one with no
// Optimizer.step range) replaces out of place: it outlives its own phase.
func (c *classifier) replacedState(b *snapshot.LiveBlock) bool {
	if len(c.steps) > 0 {
		return false // the range rule above decides
	}
	_, bp := c.phaseName(b.AllocIndex)
	_, dp := c.phaseName(c.life.deathOf(b))
	return bp >= 0 && dp > bp && c.phases.List[dp].Step > c.phases.List[bp].Step
}

// byStack returns the category a kept block's stack tells by itself, for
// blocks that predate the recording: a KV cache allocator's (transformers'
// cache classes, vLLM's cache engine, SGLang's pools), a sharded library's
// gathered parameters or reduction buffers, an optimizer's (torch/optim,
// Megatron's distributed optimizer, ZeRO's partitions), code that builds,
// loads or moves weights (a module's __init__, .to(), from_pretrained,
// Megatron's parameter buffers).
func (c *classifier) byStack(id snapshot.StackID) (Category, bool) {
	kd := c.kinds.stack(id)
	switch {
	case kd&kindKV != 0 && (kd&kindForward == 0 || strings.HasSuffix(normPath(c.st.Frame(kvLine(c.st, c.kinds, id)).Filename), "cache_utils.py")):
		// A cache class's tensor, or a serving engine's KV allocator
		// outside a model's forward (vLLM's profiling forward inside
		// _initialize_kv_caches makes activations and workspaces).
		return KVCache, true
	case kd&kindReduce != 0:
		return Gradient, true
	case kd&kindGather != 0:
		return GatheredParameter, true
	case kd&kindOptimizer != 0:
		return OptimizerState, true
	case kd&kindLoad != 0:
		return Parameter, true
	}
	return 0, false
}

// splitPreexisting decides which blocks that predate the trace and live to
// its end are parameters and which are optimizer state. With no stacks
// (they were allocated before recording), the decision uses what the trace
// does once per parameter: every parameter gets a gradient of its own size
// each step, and a foreach optimizer makes one temporary of each
// parameter's size inside Optimizer.step (FSDP's gradients are views of
// flat reduce-scatter buffers: only the optimizer's temporaries tell its
// parameters' sizes). Adam keeps two moments of that size, SGD with
// momentum one. So for each such size with g parameters, the k
// pre-existing blocks of that size hold g parameters and k-g optimizer
// states (the g lowest addresses are taken as the parameters: models are
// built before their optimizers); under an Adam-family optimizer a size
// whose count is a multiple of three is a third parameters, unless the
// optimizer made that size's state inside the recording (recording began
// before its first step): then every pre-existing block of it is a
// parameter. When no size
// is told (fused AdamW, which allocates nothing, over FSDP's flat
// gradients), the Adam rule alone decides.
//
// Sizes with no gradient stay "before recording", except in the adapter
// shape: when the parameters found are fewer bytes than the blocks left
// over (minFrozen of them at least, cuBLAS's workspaces aside), those are
// frozen weights (a LoRA's base model, never given a
// gradient nor touched by the optimizer) and count as parameters. A
// recording with no backward and no optimizer (inference) holds no
// gradients to match: everything it never frees is taken as the weights.
func (c *classifier) splitPreexisting(initial []snapshot.LiveBlock, events []snapshot.Event) {
	c.pre = map[uint64]Category{}
	// Gradients per size in the first step that has any.
	grads := map[int64]int{}
	step := -2
	for i := range events {
		ev := &events[i]
		if ev.Action != snapshot.ActionAlloc {
			continue
		}
		name, pi := c.phaseName(i)
		if name != "backward" {
			continue
		}
		ph := &c.phases.List[pi]
		if step != -2 && ph.Step != step {
			break
		}
		lb := snapshot.LiveBlock{AllocIndex: i, Stack: ev.Stack, Addr: ev.Addr}
		if c.Classify(&lb) == Gradient {
			step = ph.Step
			grads[ev.Size]++
		}
	}
	temps := c.optimizerTemps(events)
	bySize := map[int64][]uint64{}
	for i := range initial {
		b := &initial[i]
		if c.life.deathOf(b) >= 0 || b.Stack != 0 {
			continue
		}
		bySize[b.Requested] = append(bySize[b.Requested], b.Addr)
	}
	adam := adamFamily(c.optClass)
	born := c.bornState(events)
	// When the recording's backward makes no gradient, it accumulates into
	// gradients that predate it (a warm-up's backward without zero_grad,
	// set_to_none=False, a later micro-batch): each parameter's incoming
	// gradient is a temporary of its size, added in place and freed.
	var acc map[int64]int
	if c.training && len(grads) == 0 {
		acc = c.backwardTemps(events)
	}
	told := false
	per := map[int64]int{}
	gradsOf := map[int64]int{}
	for size, addrs := range bySize {
		k := len(addrs)
		g := grads[size]
		// every: each pre-existing block of this size got a gradient in
		// the step: all parameters (the optimizer's state, if any, has
		// stacks of its own, made in an earlier recording).
		every := g == k
		if g == 0 || g > k {
			g = temps[size]
		}
		if acc != nil && !cublasWorkspace(size) {
			// A parameter, its accumulated gradient and its state
			// (none, one moment, two): 2, 3 or 4 blocks per parameter.
			n := 0
			switch {
			case k%2 == 0 && born[size] > 0:
				// The optimizer made this size's state in the recording
				// (its first step, or a hand-written one replacing it out
				// of place): what stays is parameters and gradients.
				n = k / 2
			case adam && k%4 == 0:
				n = k / 4 // parameters, gradients and two moments
			case g > 0 && k == 3*g, g > 0 && k == 2*g:
				n = g // one moment, or none, per parameter
			case g == 0 && k%2 == 0 && len(temps) == 0 && len(born) == 0:
				n = k / 2 // no optimizer in the recording
			}
			if n > 0 && acc[size] >= n {
				told = true
				per[size], gradsOf[size] = n, n
				continue
			}
		}
		switch {
		case g > 0 && born[size] > 0:
			g = k // the optimizer made this size's state inside the recording: these are parameters
		case g > 0 && adam && k%3 == 0 && !every:
			g = k / 3
		}
		if g > k {
			g = 0
		}
		if !c.training && !cublasWorkspace(size) {
			// No backward and no optimizer: what lives from before the
			// recording to its end is the model's weights and buffers
			// (cuBLAS's workspaces aside).
			g = k
		}
		if g > 0 {
			told = true
			per[size] = g
		}
	}
	if c.training && !told && adam {
		for size, addrs := range bySize {
			if len(addrs)%3 == 0 {
				per[size] = len(addrs) / 3
			}
		}
	}
	var trained, left int64
	nleft := 0
	for size, addrs := range bySize {
		switch _, ok := per[size]; {
		case ok:
			trained += size * int64(per[size])
		case !cublasWorkspace(size):
			left += size * int64(len(addrs))
			nleft += len(addrs)
		}
	}
	frozen := c.training && trained > 0 && trained < left && nleft >= minFrozen
	for size, addrs := range bySize {
		g, ok := per[size]
		if !ok {
			if frozen && !cublasWorkspace(size) {
				for _, a := range addrs {
					c.pre[a] = Parameter
				}
			}
			continue
		}
		// Models are built before their first backward makes gradients,
		// and those before the optimizer's state: by address, the lowest
		// are parameters, then gradients, then state.
		sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
		for i, a := range addrs {
			switch {
			case i < g:
				c.pre[a] = Parameter
			case i < g+gradsOf[size]:
				c.pre[a] = Gradient
			default:
				c.pre[a] = OptimizerState
			}
		}
	}
}

// backwardTemps counts, by size, the allocations of the first backward
// phase freed inside it.
func (c *classifier) backwardTemps(events []snapshot.Event) map[int64]int {
	out := map[int64]int{}
	for _, ph := range c.phases.List {
		if ph.Name != "backward" {
			continue
		}
		for i := max(ph.First, 0); i <= ph.Last && i < len(events); i++ {
			if ev := &events[i]; ev.Action == snapshot.ActionAlloc {
				if d := int(c.life.death[i]); d >= 0 && d <= ph.Last {
					out[ev.Size]++
				}
			}
		}
		break
	}
	return out
}

// minFrozen is the fewest blocks left over that the adapter shape takes
// as frozen weights: a model is many tensors; a few leftovers are
// workspaces or buffers.
const minFrozen = 8

// cublasWorkspace reports whether a requested size is one of the
// workspaces cuBLAS and cuBLASLt take from the caching allocator at their
// first matmul (CUBLAS_WORKSPACE_CONFIG's defaults: 32 MiB on Hopper and
// later, 4096 KiB × 2 + 16 KiB × 8 before): kept for the process's life,
// never a weight.
func cublasWorkspace(size int64) bool {
	return size == 32<<20 || size == 4096<<10*2+16<<10*8
}

// bornState counts, by size, the optimizer state made inside the
// recording: allocations in the optimizer phase that outlive it (a lazy
// optimizer's first step creates its moments there).
func (c *classifier) bornState(events []snapshot.Event) map[int64]int {
	out := map[int64]int{}
	for i := range events {
		ev := &events[i]
		if ev.Action != snapshot.ActionAlloc {
			continue
		}
		if name, pi := c.phaseName(i); name == "optimizer" {
			if d := int(c.life.death[i]); d < 0 || d > c.phases.List[pi].Last {
				out[ev.Size]++
			}
		}
	}
	return out
}

// optimizerTemps counts, by size, the allocations under an optimizer's
// frames inside the first Optimizer.step range that has any: a foreach
// optimizer's temporaries, one per parameter.
func (c *classifier) optimizerTemps(events []snapshot.Event) map[int64]int {
	out := map[int64]int{}
	for _, r := range c.steps {
		lo := sort.Search(len(events), func(i int) bool { return events[i].TimeUS >= r.StartUS })
		for i := lo; i < len(events) && r.Contains(events[i].TimeUS); i++ {
			ev := &events[i]
			if ev.Action == snapshot.ActionAlloc && ev.Stack != 0 && c.kinds.stack(ev.Stack)&kindOptimizer != 0 {
				out[ev.Size]++
			}
		}
		if len(out) > 0 {
			break
		}
	}
	return out
}

// adamFamily reports whether an optimizer class keeps two moments of each
// parameter's size.
func adamFamily(class string) bool {
	switch class {
	case "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "FusedAdam", "DeepSpeedCPUAdam", "Lamb", "LAMB":
		return true
	}
	return false
}
