package attribution

import (
	"sort"

	"github.com/memscope/memscope/snapshot"
)

// KV cache recognition. An inference run's attention cache holds, per
// layer, a key and a value tensor, kept from the prefill to the end of the
// generation; a recording with a backward or an optimizer (training) holds
// none: transformers' models also build a DynamicCache in a training
// forward with use_cache, and those copies are activations. Training is a
// backward or optimizer phase, an Optimizer range, an allocation under
// torch/optim, or one of autograd's backward (its engine's thread records
// no Python frame).
//
// By site: an allocation under transformers/cache_utils.py is the cache's
// when it lives to the end of the recording (StaticCache's preallocated
// keys and values; the last token's DynamicCache tensors), when a cache
// class preallocates it (lazy_initialization, early_initialization: kept
// or dropped when the call returns), or when it is replaced: the last allocation from
// the same line before it is freed is larger (DynamicLayer.update grows
// each layer by one torch.cat per token and drops the old tensor once the
// new one is made), and so is the tensor that replaced it.
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
// that builds or moves weights, nor inside a module's forward (a forward
// cut short by an OOM keeps its saved activations, runs of one size, to
// the dump; an engine allocates its pools outside the model's forward).

// kvPoolMin is the smallest tensor the shape rule takes as a cache pool.
const kvPoolMin = 1 << 20

// findKVCache fills c.kv with the alloc events of KV cache blocks.
func (c *classifier) findKVCache() {
	if c.training {
		return
	}
	for i := range c.events {
		// Backward work with no phase to show it: an allocation on the
		// engine's thread (no Python frame where others have them) or
		// under a backward frame.
		if c.events[i].Action == snapshot.ActionAlloc && c.kinds.event(&c.events[i])&kindBackward != 0 {
			return
		}
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
		for j, i := range allocs {
			d := int(c.life.death[i])
			if d < 0 || preallocates(c.st.Frame(kvLine(c.st, c.kinds, c.events[i].Stack))) {
				kv[i] = true
				continue
			}
			// The last allocation of the line before i was freed: when
			// it is larger, it replaced i, and both are the cache (the
			// last one also when the cache is dropped at the end of
			// the call).
			r := sort.SearchInts(allocs, d) - 1
			if r > j && c.events[allocs[r]].Size > c.events[i].Size {
				kv[i], kv[allocs[r]] = true, true
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
		kept := c.life.death[i] < 0 && c.kinds.stack(ev.Stack)&(kindLoad|kindOptimizer|kindForward) == 0
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

// preallocates reports whether a cache_utils.py frame is one of the
// functions that allocate a cache's tensors ahead of use.
func preallocates(fr *snapshot.Frame) bool {
	return fr.Name == "lazy_initialization" || fr.Name == "early_initialization"
}
