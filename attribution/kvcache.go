package attribution

import "github.com/memscope/memscope/snapshot"

// KV cache recognition. An inference run's attention cache holds, per
// layer, a key and a value tensor, kept from the prefill to the end of the
// generation; a recording with a backward or an optimizer (training) holds
// none: transformers' models also build a DynamicCache in a training
// forward with use_cache, and those copies are activations.
//
// By site: an allocation under transformers/cache_utils.py is the cache's
// when it lives to the end of the recording (StaticCache's preallocated
// keys and values, made once in lazy_initialization; the last token's
// DynamicCache tensors), or when a larger tensor from the same line is
// allocated before it is freed: DynamicLayer.update grows each layer by one
// torch.cat per token and drops the old tensor once the new one is made.
// Index tensors and other temporaries of the same file are made at one
// size and freed: they stay what their lifetime says.
//
// By shape, where no cache site is recorded (vLLM-style engines allocating
// a pool per layer, other libraries, or no stacks): at least four, an even
// number (a key and a value per layer, or two layers' pools) of tensors of
// one size of at least kvPoolMin, allocated one after another (smaller
// allocations of under 1/64 of that size between them are allowed), all
// live at the end, after the model has run (a block was freed before the
// first of them: weights are loaded without frees) and not made by code
// that builds or moves weights.

// kvPoolMin is the smallest tensor the shape rule takes as a cache pool.
const kvPoolMin = 1 << 20

// findKVCache fills c.kv with the alloc events of KV cache blocks.
func (c *classifier) findKVCache() {
	if c.training {
		return
	}
	kv := map[int]bool{}
	// By the cache_utils.py frame (its line): the prefill's call of
	// update comes through other lines of generate than a decode step's.
	bySite := map[snapshot.FrameID][]int{}
	for i := range c.events {
		ev := &c.events[i]
		if ev.Action == snapshot.ActionAlloc && ev.Stack != 0 && c.kinds.stack(ev.Stack)&kindKV != 0 {
			f := kvLine(c.st, c.kinds, ev.Stack)
			bySite[f] = append(bySite[f], i)
		}
	}
	for _, allocs := range bySite {
		next := nextLarger(c.events, allocs)
		for j, i := range allocs {
			d := int(c.life.death[i])
			if d < 0 || (next[j] >= 0 && next[j] < d) {
				kv[i] = true
			}
		}
	}
	if len(kv) == 0 {
		c.poolsByShape(kv)
	}
	if len(kv) > 0 {
		c.kv = kv
	}
}

// nextLarger returns, for each of allocs (alloc event indexes in order),
// the index of the first later one of a larger size, or -1.
func nextLarger(events []snapshot.Event, allocs []int) []int {
	next := make([]int, len(allocs))
	var open []int // positions in allocs still waiting, sizes not increasing
	for j, i := range allocs {
		next[j] = -1
		for len(open) > 0 && events[allocs[open[len(open)-1]]].Size < events[i].Size {
			next[open[len(open)-1]] = i
			open = open[:len(open)-1]
		}
		open = append(open, j)
	}
	return next
}

// poolsByShape adds to kv the runs of equal-sized kept allocations the
// shape rule takes as a cache.
func (c *classifier) poolsByShape(kv map[int]bool) {
	var run []int
	var size int64
	freed := false // a block was freed before the run began
	ranBefore := false
	flush := func() {
		if ranBefore && len(run) >= 4 && len(run)%2 == 0 {
			for _, i := range run {
				kv[i] = true
			}
		}
		run = run[:0]
	}
	for i := range c.events {
		ev := &c.events[i]
		switch ev.Action {
		case snapshot.ActionFreeRequested, snapshot.ActionFreeCompleted:
			if len(run) == 0 {
				freed = true
			}
			continue
		case snapshot.ActionAlloc:
		default:
			continue
		}
		kept := c.life.death[i] < 0 && c.kinds.stack(ev.Stack)&(kindLoad|kindOptimizer) == 0
		switch {
		case len(run) > 0 && ev.Size == size && kept:
			run = append(run, i)
		case len(run) > 0 && ev.Size < size/64:
		default:
			flush()
			if kept && ev.Size >= kvPoolMin {
				run, size, ranBefore = append(run, i), ev.Size, freed
			}
		}
	}
	flush()
}
