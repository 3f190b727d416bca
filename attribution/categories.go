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
	NumCategories
)

var categoryNames = [NumCategories]string{"unknown", "parameter", "optimizer state", "gradient", "activation", "input", "temporary", "before recording", "kv cache"}

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
	// firstOOM holds, per phase index, its first oom event (-1: none).
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
	return c
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
// Blocks born in the recording: born and dead inside one phase is a
// temporary. Born in the optimizer phase and never freed, or born inside
// an Optimizer.step range and freed in a later step's optimizer phase
// (state replaced out of place), or allocated under torch/optim and kept,
// is optimizer state; other optimizer-phase blocks are temporaries. Born in
// backward and outliving it is a gradient. Born in forward before the
// step's first call of an nn.Module is the batch (input); born in forward
// and freed later an activation; never freed unknown (a workspace, a cache
// or a leak). Kept and made by code that builds, loads or moves weights
// (.to(), from_pretrained, a module's __init__) is a parameter in any
// phase; born in setup, or outside phases, and kept is a parameter too,
// unless a module's forward made it (a cuBLAS workspace, a cache: unknown).
// A KV cache's keys and values are kv cache first (findKVCache).
//
// Blocks that predate the recording: never freed, parameters or optimizer
// state by sizes (splitPreexisting), else before recording; freed inside
// zero_grad, or by the loop after the optimizer step, a gradient; freed
// inside Optimizer.step, optimizer state it replaced; freed in backward, an
// activation saved before recording began; else before recording.
func (c *classifier) Classify(b *snapshot.LiveBlock) Category {
	death := c.life.deathOf(b)
	if b.AllocIndex < 0 {
		if death < 0 {
			if cat, ok := c.pre[b.Addr]; ok {
				return cat
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
	case death >= 0 && bornPhase >= 0 && bornPhase == diedPhase:
		return Temporary
	case born == "optimizer" && death < 0,
		born == "optimizer" && died == "optimizer" && inRange(c.steps, c.timeOf(b.AllocIndex)),
		death < 0 && kd&kindOptimizer != 0:
		return OptimizerState
	case born == "optimizer":
		return Temporary
	case death < 0 && kd&kindLoad != 0:
		return Parameter // the model's weights, built, loaded or moved (.to()) and kept
	case born == "prefill" || born == "decode" || born == "generate":
		if death >= 0 {
			return Activation // made by one phase of generate() and freed in a later one
		}
		return Unknown // kept, and not the cache: a workspace, the output, or a leak
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
	case death < 0:
		return Parameter // built before the first step and kept
	}
	return Input
}

// splitPreexisting decides which blocks that predate the trace and live to
// its end are parameters and which are optimizer state. With no stacks
// (they were allocated before recording), the decision uses the gradients
// seen in the trace: every parameter gets a gradient of its own size each
// step, and Adam keeps two moments of that size, SGD with momentum one. So
// for each gradient size with g gradients per step, the k pre-existing
// blocks of that size hold g parameters and k-g optimizer states (the g
// lowest addresses are taken as the parameters: models are built before
// their optimizers). Sizes with no gradient stay "before recording". A
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
	bySize := map[int64][]uint64{}
	for i := range initial {
		b := &initial[i]
		if c.life.deathOf(b) >= 0 || b.Stack != 0 {
			continue
		}
		bySize[b.Requested] = append(bySize[b.Requested], b.Addr)
	}
	for size, addrs := range bySize {
		g := grads[size]
		if !c.training {
			// No backward and no optimizer: what lives from before the
			// recording to its end is the model's weights and buffers.
			g = len(addrs)
		}
		if g == 0 {
			continue
		}
		sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
		for i, a := range addrs {
			if i < g {
				c.pre[a] = Parameter
			} else {
				c.pre[a] = OptimizerState
			}
		}
	}
}
