package attribution

import (
	"sort"

	"github.com/memscope/memscope/snapshot"
)

// periodSteps finds steps in a stream with no annotation (an inference
// loop, a bare training loop) from the stream itself: a loop of N steps
// allocates most of its (stack, size) keys a multiple of N times, and each
// step allocates each of them the same number of times.
//
// Candidates are the counts N ≥ 2 of keys such that the keys whose counts
// are multiples of N hold at least 90% of the allocations of repeated keys.
// For a candidate, the boundary is the key allocated exactly N times that
// comes first; the stream is cut at its N occurrences, and the cut is
// accepted when at least 90% of those allocations fall evenly (a key of
// count m·N has m in every step). The smallest accepted N wins: a model's
// repeated layers repeat within a step too, and the step is the largest
// unit that repeats. Events before the first cut are setup; the last step
// runs to the end.
//
// Keys are (stack, size); when no candidate is accepted so, stacks alone
// (the batch's size varies from step to step).
//
// A candidate whose repeating keys are one key alone is refused: that is a
// list being filled, not a loop of steps. It returns nil when no candidate
// is accepted: the stream does not say.
func periodSteps(events []snapshot.Event) []span {
	if sp := periodStepsBy(events, true); sp != nil {
		return sp
	}
	// Batches of varying sizes (a server's requests, a ragged evaluation
	// set) repeat their stacks, not their sizes: the same test by stack.
	return periodStepsBy(events, false)
}

// periodStepsBy is periodSteps keyed by (stack, size), or by stack alone
// when sized is false.
func periodStepsBy(events []snapshot.Event, sized bool) []span {
	type key struct {
		stack snapshot.StackID
		size  int64
	}
	ids := map[key]int32{}
	seq := make([]int32, 0, len(events)/2) // key id per alloc
	pos := make([]int32, 0, len(events)/2) // event index per alloc
	var count []int32
	for i := range events {
		ev := &events[i]
		if ev.Action != snapshot.ActionAlloc || !sized && cublasWorkspace(ev.Size) {
			continue // (by stack, a matmul's first call also makes cuBLAS's workspace under its stack)
		}
		k := key{ev.Stack, ev.Size}
		if !sized {
			k.size = 0
		}
		id, ok := ids[k]
		if !ok {
			id = int32(len(count))
			ids[k] = id
			count = append(count, 0)
		}
		count[id]++
		seq = append(seq, id)
		pos = append(pos, int32(i))
	}
	// Allocations per count value, over repeated keys.
	byCount := map[int32]int{}
	repeated := 0
	for _, c := range count {
		if c >= 2 {
			byCount[c] += int(c)
			repeated += int(c)
		}
	}
	if repeated == 0 {
		return nil
	}
	// By stack, a key may allocate up to slack more in the first step
	// than in the others: a first call's one-off buffers (cuBLASLt's
	// workspace, a lazily made cache) come from the same stacks.
	slack := int32(0)
	if !sized {
		slack = 2
	}
	var cands []int32
	for n := range byCount {
		cov := 0
		for c, a := range byCount {
			if c >= n && c%n <= slack {
				cov += a
			}
		}
		if 10*cov >= 9*repeated {
			cands = append(cands, n)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i] < cands[j] })
	const maxTries = 16
	for t, n := range cands {
		if t == maxTries {
			break
		}
		if sp := tryPeriod(events, seq, pos, count, n, slack); sp != nil {
			return sp
		}
	}
	return nil
}

// tryPeriod cuts the stream into n steps at the first key allocated
// exactly n times and checks that the keys of counts m·n fall m to a step
// (m·n + e with e ≤ slack: m to a step, m + e to the first).
func tryPeriod(events []snapshot.Event, seq, pos, count []int32, n, slack int32) []span {
	fits := func(c int32) bool { return c >= 2 && c >= n && c%n <= slack }
	boundary := int32(-1)
	for _, id := range seq {
		if count[id] == n {
			boundary = id
			break
		}
	}
	if boundary < 0 {
		return nil
	}
	// The keys that must fall evenly: a count of m·n, m ≥ 1.
	keys, total := 0, 0
	for _, c := range count {
		if fits(c) {
			keys++
			total += int(c)
		}
	}
	// One key repeating alone is a list being filled (16 tensors made in
	// a comprehension), not a loop of steps: a step allocates several
	// kinds of block.
	if keys < 2 {
		return nil
	}
	var cuts []int // indexes into seq
	for j, id := range seq {
		if id == boundary {
			cuts = append(cuts, j)
		}
	}
	// A key's allocations in one step are a run of its allocations in
	// order (steps only rise along the stream): each key keeps the step of
	// its run and the run's length, and a run of m adds m to even.
	cur := make([]int32, len(count)) // step of the key's run (-1: none yet)
	run := make([]int32, len(count))
	for i := range cur {
		cur[i] = -1
	}
	even := 0
	endRun := func(id int32) {
		if m := count[id] / n; run[id] == m || cur[id] == 0 && run[id] == m+count[id]%n {
			even += int(run[id])
		}
	}
	step := int32(-1) // step of each allocation (-1 before the first cut)
	for j, id := range seq {
		if int(step+1) < len(cuts) && j == cuts[step+1] {
			step++
		}
		if step < 0 || !fits(count[id]) {
			continue
		}
		if cur[id] != step {
			endRun(id)
			cur[id], run[id] = step, 0
		}
		run[id]++
	}
	for id := range count {
		if fits(count[id]) {
			endRun(int32(id))
		}
	}
	if 10*even < 9*total {
		return nil
	}
	out := make([]span, len(cuts))
	for k, c := range cuts {
		out[k].first = int(pos[c])
		if k+1 < len(cuts) {
			out[k].last = int(pos[cuts[k+1]]) - 1
		} else {
			out[k].last = len(events) - 1
		}
	}
	return out
}
