package attribution

import (
	"sort"

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
	NumCategories
)

var categoryNames = [NumCategories]string{"unknown", "parameter", "optimizer state", "gradient", "activation", "input", "temporary"}

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
	phases *Phases
	owner  []int32 // event → phase index
	life   *lifetimes
	kinds  map[snapshot.StackID]string
	// preParams says, for blocks live before the first event and never
	// freed, which are parameters and which optimizer state (see
	// splitPreexisting).
	pre map[uint64]Category
}

// phaseName returns the phase name of event i ("" outside phases).
func (c *classifier) phaseName(i int) (string, int) {
	if i < 0 || i >= len(c.owner) || c.owner[i] < 0 {
		return "", -1
	}
	ph := &c.phases.List[c.owner[i]]
	return ph.Name, int(c.owner[i])
}

// Classify returns the category of one live block.
//
// The rules, in order: born and dead inside one phase is a temporary; a
// stack through torch/optim/, or born in the optimizer phase and never
// freed, is optimizer state (other optimizer-phase blocks are
// temporaries); born in backward and outliving it is a gradient; born in
// forward and freed later is an activation (saved for backward), never
// freed unknown (a workspace, a cache or a leak); born in the data phase is
// an input; born before the first step and kept is a parameter, freed an
// input. Blocks that predate the trace are parameters or optimizer state by
// the gradient-size match (splitPreexisting) when they live to the end, a
// gradient when zero_grad frees them, else unknown.
func (c *classifier) Classify(b *snapshot.LiveBlock) Category {
	death := c.life.deathOf(b)
	if b.AllocIndex < 0 {
		if death < 0 {
			if cat, ok := c.pre[b.Addr]; ok {
				return cat
			}
			return Unknown
		}
		if name, _ := c.phaseName(death); name == "optimizer" {
			return Gradient // freed by zero_grad
		}
		return Unknown
	}
	born, bornPhase := c.phaseName(b.AllocIndex)
	_, diedPhase := c.phaseName(death)
	kind, ok := c.kinds[b.Stack]
	if !ok {
		kind = stackKind(c.st, b.Stack)
		c.kinds[b.Stack] = kind
	}
	switch {
	case death >= 0 && bornPhase >= 0 && bornPhase == diedPhase:
		return Temporary
	case kind == "optimizer", born == "optimizer" && death < 0:
		return OptimizerState
	case born == "optimizer":
		return Temporary
	case born == "backward":
		return Gradient
	case born == "forward" && death >= 0:
		return Activation
	case born == "forward":
		return Unknown // never freed: a workspace, a cache, or a leak
	case born == "data":
		return Input
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
// their optimizers). Sizes with no gradient stay unknown.
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
