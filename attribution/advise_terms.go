package attribution

import (
	"strings"

	"github.com/memscope/memscope/snapshot"
)

// The blocks each fix of Advise acts on, found from stacks, sizes and
// lifetimes in the peak's step.

// modelState reports whether c is a model state: parameters, gradients,
// optimizer state.
func modelState(c Category) bool { return c == Parameter || c == Gradient || c == OptimizerState }

// lossFrame reports whether a frame is the loss's: cross_entropy, nll_loss,
// log_softmax, or a function or file that names a loss.
func lossFrame(f *snapshot.Frame) bool {
	n := strings.ToLower(f.Name)
	return strings.Contains(n, "loss") || strings.Contains(n, "cross_entropy") || strings.Contains(n, "log_softmax") ||
		strings.Contains(strings.ToLower(f.Filename), "/loss/")
}

// markLogits finds the logits: the largest request made under a loss frame
// in the step is the logits' size L (tokens × vocabulary × 4 for the fp32
// copy); every block of the step that is not a model state and requested
// about L or L/2 (the bf16 logits and their gradients, made by autograd
// with no Python frame) is marked. It returns L, 0 when no loss frame
// allocated in the step, and whether the loss is chunked already: the loss
// frame made a block of size L four times or more in the step, at most a
// quarter of them live at once.
func (st *adviseStep) markLogits(d *Device) (int64, bool) {
	stacks := d.an.Snapshot.Stacks
	isLoss := map[snapshot.StackID]bool{}
	lossStack := func(id snapshot.StackID) bool {
		loss, ok := isLoss[id]
		if !ok {
			for _, f := range stacks.Stack(id) {
				if lossFrame(stacks.Frame(f)) {
					loss = true
					break
				}
			}
			isLoss[id] = loss
		}
		return loss
	}
	var L int64
	for k := range st.blocks {
		if b := &st.blocks[k]; !modelState(b.cat) && b.req > L && lossStack(b.stack) {
			L = b.req
		}
	}
	if L == 0 {
		return 0, false
	}
	near := func(r, want int64) bool { return r >= want-want/32 && r <= want+want/32 }
	var made []delta
	for k := range st.blocks {
		b := &st.blocks[k]
		b.logits = !modelState(b.cat) && (near(b.req, L) || near(b.req, L/2))
		if b.logits && b.alloc >= st.first && near(b.req, L) && lossStack(b.stack) {
			made = append(made, added(b.start, b.end, 1))
		}
	}
	most, _ := st.peakWithout(made)
	return L, len(made) >= 4 && most*4 <= int64(len(made))
}

// lossDeltas is what a fused or chunked loss adds: the output projection's
// weight gradient (the first gradient the backward makes after its first
// logits block) exists earlier. A fused linear cross-entropy computes it in
// the forward, with the loss (from the forward's first logits block); a
// chunked one, back-propagating chunk by chunk, from the loss's first
// backward, with a buffer of its size that each chunk's gradient is made in
// before it is added.
func (st *adviseStep) lossDeltas() (fused, chunked []delta) {
	fwd, bwd, grad := -1, -1, -1
	for k := range st.blocks {
		b := &st.blocks[k]
		switch {
		case b.logits && b.born == "forward" && fwd < 0 && b.alloc >= st.first:
			fwd = k
		case b.logits && b.born == "backward" && bwd < 0:
			bwd = k
		case b.cat == Gradient && b.born == "backward" && bwd >= 0 && grad < 0:
			grad = k
		}
	}
	if grad < 0 {
		return nil, nil
	}
	g := &st.blocks[grad]
	if fwd >= 0 {
		fused = []delta{st.early(grad, st.blocks[fwd].start)}
	}
	chunked = []delta{st.early(grad, st.blocks[bwd].start), added(st.blocks[bwd].start, g.start, g.size)}
	return fused, chunked
}

// leakBlocks marks, when d has a leak, the blocks of the step that were
// born in a steady step of the leak's (Leak.Steps), this one included, are
// no model state and are never freed: what the staircase has piled up.
func (d *Device) leakBlocks(st *adviseStep) []bool {
	out := make([]bool, len(st.blocks))
	if d.Leak == nil || !d.Leak.Found {
		return out
	}
	steady := map[int]bool{}
	for _, s := range d.Leak.Steps {
		steady[s] = true
	}
	for k := range st.blocks {
		b := &st.blocks[k]
		if b.alloc < 0 || !b.toEnd || modelState(b.cat) {
			continue
		}
		if _, s := d.PhaseOf(b.alloc); steady[s] {
			out[k] = true
		}
	}
	return out
}

// forwardOf returns the first forward phase of step, or nil.
func (d *Device) forwardOf(step int) *Phase {
	for i := range d.Phases.List {
		if ph := &d.Phases.List[i]; ph.Step == step && ph.Name == "forward" && ph.Last >= ph.First {
			return ph
		}
	}
	return nil
}

// layers splits the forward's allocations into repeated layers: the stacks
// that recur most often recur once per layer (count L), and the first
// allocation of such a stack starts each layer. It returns each layer's
// first and end (exclusive) block positions in st.blocks, nil when no
// stack repeats.
func (st *adviseStep) layers(fwd *Phase) [][2]int {
	var seq []int // block positions of the forward's allocations
	count := map[snapshot.StackID]int{}
	for k := range st.blocks {
		b := &st.blocks[k]
		if b.alloc >= fwd.First && b.alloc <= fwd.Last && b.start == b.alloc && !b.needed {
			seq = append(seq, k)
			count[b.stack]++
		}
	}
	// L: the count most stacks share, among those seen twice or more.
	stacksWith := map[int]int{}
	for id, n := range count {
		if n >= 2 && id != 0 {
			stacksWith[n]++
		}
	}
	L, most := 0, 0
	for n, c := range stacksWith {
		if c > most || c == most && n < L {
			L, most = n, c
		}
	}
	if L < 2 {
		return nil
	}
	var starts []int // indexes into seq
	var first snapshot.StackID
	found := false
	for i, k := range seq {
		id := st.blocks[k].stack
		if !found && count[id] == L && id != 0 {
			first, found = id, true
		}
		if found && id == first {
			starts = append(starts, i)
		}
	}
	if len(starts) < 2 {
		return nil
	}
	out := make([][2]int, len(starts))
	for j, s := range starts {
		e := len(seq)
		if j+1 < len(starts) {
			e = starts[j+1]
		} else {
			e = min(e, s+starts[j]-starts[j-1])
		}
		out[j] = [2]int{seq[s], seq[e-1] + 1}
	}
	return out
}

// checkpointDeltas is full activation checkpointing: in each layer, the
// activations it saves for backward go, except the last it makes (its
// output, the next layer's input, which checkpointing keeps); they come
// back when the layer is recomputed, at the first free of one of them in
// backward. It returns the deltas and the number of layers.
func (d *Device) checkpointDeltas(st *adviseStep, step int) ([]delta, int) {
	fwd := d.forwardOf(step)
	if fwd == nil {
		return nil, 0
	}
	layers := st.layers(fwd)
	if st.cut && st.last <= fwd.Last {
		// The OOM cut the forward short, in its last layer: the stacks
		// after that point were made one time fewer than the rest.
		if pl := st.periodLayers(fwd); pl != nil {
			layers = pl
		}
	}
	fwdLast := min(fwd.Last, st.last) // a forward an OOM cut short ends there
	var ds []delta
	for _, l := range layers {
		var saved []int
		for k := l[0]; k < l[1]; k++ {
			b := &st.blocks[k]
			if b.cat == Activation && !b.logits && b.end > fwdLast {
				saved = append(saved, k)
			}
		}
		if len(saved) < 2 {
			continue
		}
		saved = saved[:len(saved)-1] // the output stays
		recompute := st.last + 1
		for _, k := range saved {
			recompute = min(recompute, st.blocks[k].end)
		}
		for _, k := range saved {
			ds = append(ds, st.drop(k, st.blocks[k].start, max(recompute, st.blocks[k].start)))
		}
	}
	return ds, len(layers)
}

// microBatchDeltas is half the micro-batch with twice the gradient
// accumulation: what the step's forward and backward make for the batch
// (activations, logits, temporaries, the input) halves, but autocast's
// copies of the weights (half a parameter's request) do not; and the
// gradients the step's backward makes are there from the step's start, as
// the first micro-batch's, while the second runs.
func (d *Device) microBatchDeltas(st *adviseStep, step int) []delta {
	weights := map[int64]bool{}
	for k := range st.blocks {
		if b := &st.blocks[k]; b.cat == Parameter {
			weights[b.req/2] = true
		}
	}
	bwdLast := -1
	for _, ph := range d.Phases.List {
		if ph.Step == step && ph.Name == "backward" {
			bwdLast = max(bwdLast, min(ph.Last, st.last)) // a backward an OOM cut short ends there
		}
	}
	var ds []delta
	for k := range st.blocks {
		b := &st.blocks[k]
		if b.alloc < st.first || b.born != "forward" && b.born != "backward" {
			continue
		}
		switch b.cat {
		case Activation, Temporary, Input:
			if !weights[b.req] || b.logits {
				ds = append(ds, st.shrink(k, 1, 2))
			}
		case Gradient:
			if b.born == "backward" && b.end > bwdLast {
				ds = append(ds, st.early(k, st.first))
			}
		}
	}
	return ds
}
