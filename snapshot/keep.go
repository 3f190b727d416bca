package snapshot

import (
	"sync/atomic"

	"github.com/memscope/memscope/internal/addrmap"
)

// keptState is the allocator's state after one event, kept so that At
// and StateAt can start there: the numbers, the live blocks in slab order
// and the reserved layout.
type keptState struct {
	at     int
	n      Numbers
	blocks []LiveBlock
	lay    layout
}

// KeepStates replays the trace once more and keeps the allocator's state
// after every len(Events)/n events (n states), so that At and
// StateAt at any event replay at most that many events from the nearest
// kept state before it, where they would otherwise replay from the first
// event each time the index goes back (a web UI's moments, asked in any
// order). It costs one replay and, per kept state, a copy of the blocks
// and segments live then; n ≤ 0 or a short trace keeps none. observe,
// when not nil, rides on the replay as ReplayOptions.Observe does: called
// with index -1 and the state before the first event, then with the state
// after every event, in order (it is called even when no state is kept).
// It may run while At is being called: the states are in use once it
// returns.
func (t *Timeline) KeepStates(n int, observe func(index int, n Numbers)) {
	keep := n > 0 && len(t.Events) >= 2*n && t.cur != nil
	if !keep && observe == nil {
		return
	}
	every := len(t.Events) + 1
	if keep {
		every = len(t.Events) / n
	}
	kept := make([]keptState, 0, max(n, 0))
	e := t.newEngine()
	if observe != nil {
		observe(-1, e.n)
	}
	for i := range t.Events {
		e.prefetch(i)
		e.apply(i, &t.Events[i])
		if observe != nil {
			observe(i, e.n)
		}
		if (i+1)%every == 0 && len(kept) < n {
			kept = append(kept, e.keep(i))
		}
	}
	if keep {
		t.cur.kept.Store(&kept)
	}
}

// keep copies the engine's state after event i.
func (e *engine) keep(i int) keptState {
	dead := make([]bool, len(e.slab))
	for _, j := range e.free {
		dead[j] = true
	}
	blocks := make([]LiveBlock, 0, e.live.Len())
	for j := range e.slab {
		if !dead[j] {
			blocks = append(blocks, e.slab[j])
		}
	}
	return keptState{at: i, n: e.n, blocks: blocks, lay: e.lay.clone()}
}

// restore returns an engine in the kept state.
func (t *Timeline) restore(k *keptState) *engine {
	hint := max(len(t.Initial), t.liveMost, len(k.blocks))
	if t.final != nil {
		hint = max(hint, len(t.final.slab))
	}
	e := &engine{t: t, live: addrmap.New(hint), slab: make([]LiveBlock, 0, hint), lay: k.lay.clone(), n: k.n}
	for _, b := range k.blocks {
		e.put(b)
	}
	return e
}

// nearestKept returns the latest kept state at or before event index, or
// nil.
func (c *cursor) nearestKept(index int) *keptState {
	p := c.kept.Load()
	if p == nil {
		return nil
	}
	kept := *p
	lo, hi := 0, len(kept) // the first state after index
	for lo < hi {
		m := (lo + hi) / 2
		if kept[m].at <= index {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return nil
	}
	return &kept[lo-1]
}

// keptStates is what KeepStates publishes: set once.
type keptStates = atomic.Pointer[[]keptState]
