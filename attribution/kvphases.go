package attribution

import "github.com/memscope/memscope/snapshot"

// Steps and phases of generate(), from its KV cache. A generate() call
// with no annotation is one step: it begins at the first event under the
// user's call that made the cache (the frame where the cache's stack
// leaves the stack of the last weight load; the first event when no weight
// load is recorded) and runs while cache blocks are live. A cache growing
// by one torch.cat per token (DynamicCache) allocates its first line (in
// layer order, once per layer) at one size in the prefill and at a larger
// size in each decode step: the prefill ends at the lowest allocated point
// between its sampling (the first allocation outside a module's forward
// after its last cache allocation; that allocation itself when there is
// none) and the first decode step's cache allocation, and "decode" is the
// rest. A cache allocated once
// (StaticCache, a compiled decode step replayed by CUDA graphs) does not
// say where the prefill ends; the model's forwards do: the prefill ends at
// the lowest allocated point between the step's first forward (its
// allocations under a module's forward or a compiled region, up to the
// first allocation outside one: the sampling) and the second. With no
// second forward the step is one "generate" phase. Each cache made after
// the last one was freed is a step of its own. A cache that neither grows,
// nor is preallocated, nor outlives the recording (one made and dropped in
// each forward of an eval loop with use_cache) makes no steps.

// kvRun is what kvPhases learns of one cache's life, for Inference.
type kvRun struct {
	first, last int  // the step's events
	prefillEnd  int  // last event of the prefill; -1 when not told
	growing     bool // the cache grows by a torch.cat per token
	rounds      int  // allocations of the first cache line at a new size: 1 + decode steps
	kvEnd       int  // an event with the cache whole: the end when it is kept, else its last allocation (a growing cache: the free after it)
}

// kvPhases returns the phases of generate() calls, nil when the recording
// has no transformers cache allocation or holds training work.
func kvPhases(st *snapshot.Stacks, events []snapshot.Event, k *kinds) (*Phases, []kvRun) {
	lastLoad := -1
	prealloc := false // a cache class preallocated a tensor
	// Each life's first and last cache event, its last cache allocation,
	// and the first cache free after that (-1: none).
	var lives [][4]int
	live := map[uint64]bool{}
	for i := range events {
		ev := &events[i]
		kd := k.event(ev)
		if ev.Action == snapshot.ActionAlloc && kd&(kindOptimizer|kindBackward) != 0 {
			return nil, nil // training: its caches are activations
		}
		switch ev.Action {
		case snapshot.ActionAlloc:
			if kd&kindLoad != 0 {
				lastLoad = i
			}
			if kd&kindKV != 0 {
				prealloc = prealloc || (ev.Size > 0 && preallocates(st.Frame(kvLine(st, k, ev.Stack))))
				if len(live) == 0 {
					lives = append(lives, [4]int{i, i, i, -1})
				}
				live[ev.Addr] = true
				lives[len(lives)-1][2], lives[len(lives)-1][3] = i, -1
			}
		case snapshot.ActionFreeCompleted:
			if live[ev.Addr] {
				delete(live, ev.Addr)
				lf := &lives[len(lives)-1]
				lf[1] = i
				if lf[3] < 0 {
					lf[3] = i
				}
			}
		}
	}
	if len(lives) == 0 || !(len(live) > 0 || prealloc || grows(st, events, k, lives)) {
		// A cache made and dropped inside each forward (an eval loop
		// with use_cache) is no generate() call.
		return nil, nil
	}
	if len(live) > 0 {
		lives[len(lives)-1][1] = len(events) - 1
	}
	p := &Phases{Source: "kv cache", PeakPhase: -1}
	var runs []kvRun
	prevEnd := -1
	for si, lf := range lives {
		first := prevEnd + 1
		if si == 0 {
			first = callStart(st, events, lastLoad, lf[0])
			if first > 0 {
				p.List = append(p.List, Phase{Step: -1, Name: "setup", First: 0, Last: first - 1})
			}
		}
		last := lf[1]
		if si == len(lives)-1 {
			last = len(events) - 1
		}
		r := kvRun{first: first, last: last, prefillEnd: -1, kvEnd: lf[2]}
		if si == len(lives)-1 && len(live) > 0 {
			r.kvEnd = len(events) - 1
		}
		r.prefillEnd, r.rounds = prefillEnd(st, events, k, lf[0], lf[1])
		r.growing = r.prefillEnd >= 0
		if r.growing && lf[3] >= 0 && r.kvEnd < len(events)-1 {
			// A growing cache is whole once its last torch.cat's old
			// tensor is freed.
			r.kvEnd = lf[3]
		}
		if !r.growing {
			r.prefillEnd = forwardSplit(events, k, first, last)
		}
		if r.prefillEnd >= 0 {
			p.List = append(p.List, Phase{Step: si, Name: "prefill", First: first, Last: r.prefillEnd},
				Phase{Step: si, Name: "decode", First: r.prefillEnd + 1, Last: last})
		} else {
			p.List = append(p.List, Phase{Step: si, Name: "generate", First: first, Last: last})
		}
		runs = append(runs, r)
		prevEnd = last
	}
	for i := range p.List {
		ph := &p.List[i]
		ph.StartUS, ph.EndUS = events[ph.First].TimeUS, events[max(ph.Last, ph.First)].TimeUS
	}
	return p, runs
}

// callStart returns the first event after lastLoad under the user's call
// that made the cache at event kv: the frame, counted from the outermost,
// where kv's stack leaves the last weight load's. With no load recorded it
// is 0: the whole recording is the call.
func callStart(st *snapshot.Stacks, events []snapshot.Event, lastLoad, kv int) int {
	if lastLoad < 0 {
		return 0
	}
	a, b := st.Stack(events[lastLoad].Stack), st.Stack(events[kv].Stack)
	depth := 0
	for depth < len(a) && depth < len(b) && a[len(a)-1-depth] == b[len(b)-1-depth] {
		depth++
	}
	if depth >= len(b) {
		return lastLoad + 1
	}
	call := b[len(b)-1-depth]
	for i := lastLoad + 1; i <= kv; i++ {
		fs := st.Stack(events[i].Stack)
		if depth < len(fs) && fs[len(fs)-1-depth] == call {
			return i
		}
	}
	return kv
}

// prefillEnd finds the end of the prefill of the cache whose events run
// from first to last: -1 when the cache's first line never grows. rounds
// counts that line's sizes (the prefill's, then one per decode step).
func prefillEnd(st *snapshot.Stacks, events []snapshot.Event, k *kinds, first, last int) (int, int) {
	var line snapshot.FrameID
	var size int64
	rounds, lastPrefill, decode := 0, -1, -1
	for i := first; i <= last; i++ {
		ev := &events[i]
		if ev.Action != snapshot.ActionAlloc || ev.Stack == 0 || k.stack(ev.Stack)&kindKV == 0 {
			continue
		}
		f := kvLine(st, k, ev.Stack)
		if rounds == 0 {
			line, size, rounds = f, ev.Size, 1
		}
		switch {
		case f == line && ev.Size > size:
			size = ev.Size
			rounds++
			if decode < 0 {
				decode = i
			}
		case decode < 0:
			lastPrefill = i
		}
	}
	if decode < 0 {
		return -1, rounds
	}
	// The lowest point of allocated bytes between the prefill's last
	// cache allocation and the first decode step's (the latest one),
	// from the sampling on when there is one: the first allocation
	// outside a module's forward after the prefill's last cache
	// allocation. The prefill's logits are its own, though a hand-written
	// loop keeps them until the next forward returns.
	from := lastPrefill
	for i := lastPrefill + 1; i < decode; i++ {
		if ev := &events[i]; ev.Action == snapshot.ActionAlloc && ev.Stack != 0 && k.stack(ev.Stack)&(kindForward|kindPython) == kindPython {
			from = i
			break
		}
	}
	return valley(events, from, decode), rounds
}

// kvLine returns the innermost frame of stack id in cache_utils.py.
func kvLine(st *snapshot.Stacks, k *kinds, id snapshot.StackID) snapshot.FrameID {
	for _, f := range st.Stack(id) {
		if k.frame(f)&fKV != 0 {
			return f
		}
	}
	return 0
}

// forwardSplit ends the prefill of a step (events first to last) at the
// lowest allocated point between its first model forward and its second;
// -1 when it has no second.
func forwardSplit(events []snapshot.Event, k *kinds, first, last int) int {
	state, lastFwd, second := 0, -1, -1 // state: before, in, after the first forward
	for i := first; i <= last && second < 0; i++ {
		ev := &events[i]
		if ev.Action != snapshot.ActionAlloc {
			continue
		}
		fw := k.event(ev)&kindForward != 0
		switch {
		case state == 0 && fw:
			state, lastFwd = 1, i
		case state == 1 && fw:
			lastFwd = i
		case state == 1:
			state = 2
		case state == 2 && fw:
			second = i
		}
	}
	if second < 0 {
		return -1
	}
	return valley(events, lastFwd, second)
}

// valley returns the event after which allocated bytes are lowest
// between events from and to (both excluded; from when nothing is lower),
// the latest of equals.
func valley(events []snapshot.Event, from, to int) int {
	var cur, low int64
	at := from
	for i := from + 1; i < to; i++ {
		switch events[i].Action {
		case snapshot.ActionAlloc:
			cur += events[i].Size
		case snapshot.ActionFreeCompleted:
			cur -= events[i].Size
		}
		if cur <= low {
			low, at = cur, i
		}
	}
	return at
}

// grows reports whether some cache life's first line grows.
func grows(st *snapshot.Stacks, events []snapshot.Event, k *kinds, lives [][4]int) bool {
	for _, lf := range lives {
		if end, _ := prefillEnd(st, events, k, lf[0], lf[1]); end >= 0 {
			return true
		}
	}
	return false
}
