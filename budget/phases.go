package budget

import "fmt"

// A step's phases follow the training loop
//
//	loss = loss_fn(model(x), y)   # forward, under autocast
//	loss.backward()               # backward
//	opt.step(); opt.zero_grad(set_to_none=True)   # optimizer
//
// Each phase's peak is the largest of a few candidate moments, each listing
// what is live then. The forward peaks when the loss has been computed:
// every layer's activations are saved and the vocabulary-sized tensors
// exist. Backward starts with the loss gradients on top of everything
// saved, then frees each layer's activations as it adds that layer's
// gradients; the largest of its moments wins. The optimizer peaks inside
// step(): every gradient plus the step's temporaries. Gradients are set to
// None after the step, so they do not exist in the forward unless gradient
// accumulation keeps them.

// moment is a set of live tensors at one instant.
type moment struct {
	what   string
	shares []Share
}

func (m *moment) add(t TermKey, name, category string, b int64) {
	if b != 0 {
		m.shares = append(m.shares, Share{Term: t, Name: name, Bytes: b, Category: category})
	}
}

func (m *moment) addParts(t TermKey, category string, ps []Part) {
	for _, p := range ps {
		m.add(t, p.Name, category, p.Bytes)
	}
}

func (m *moment) total() int64 {
	var b int64
	for _, s := range m.shares {
		b += s.Bytes
	}
	return b
}

// peakOf returns the phase peak at the largest of the moments.
func peakOf(phase string, ms ...*moment) PhasePeak {
	best := ms[0]
	for _, m := range ms[1:] {
		if m.total() > best.total() {
			best = m
		}
	}
	return PhasePeak{Phase: phase, Bytes: best.total(), Moment: best.what, Shares: best.shares}
}

// floor adds what lives through the whole step: weights, optimizer state,
// workspaces, the batch, and gradients when they are accumulated.
func (c *calc) floor(m *moment) {
	m.add(ModelStates, c.weights().Name, "parameter", c.weights().Bytes)
	if c.s.Mode == Train {
		m.add(ModelStates, c.master().Name, "optimizer state", c.master().Bytes)
		m.add(ModelStates, c.optimizerState().Name, "optimizer state", c.optimizerState().Bytes)
		if c.s.Accumulation > 1 {
			m.add(ModelStates, c.grads().Name, "gradient", c.grads().Bytes)
		}
	}
	m.add(Overhead, c.workspace().Name, "unknown", c.s.Workspace)
	m.add(Activations, "token ids (int64)", "input", c.inputs())
}

// savedActivations adds the activations saved for the embedding and the
// first n layers (n = layers), and the rotary tables.
func (c *calc) savedActivations(m *moment, layers int64) {
	ckpt := c.s.Checkpointing != NoCheckpointing
	if c.residualSaved() || ckpt { // saved by the first norm, or by the checkpoint
		m.add(Activations, "embedding output (first layer's input)", "activation", c.embedOut())
	}
	m.add(Activations, "rotary cos and sin", "activation", c.rope())
	b := layers * c.layerSaved()
	if ckpt && layers == c.L && !c.residualSaved() {
		// Each checkpointed layer keeps its input, the layer below's
		// output; the last layer's output goes to the final norm, which
		// saves an fp32 copy of a bf16 stream instead.
		b -= c.d.resid * c.h * c.T
	}
	m.add(Activations, fmt.Sprintf("saved activations of %d layers", layers), "activation", b)
	if c.s.Checkpointing != NoCheckpointing {
		// Checkpointing keeps every tensor argument of a layer: the
		// position ids (one int64 per position) too.
		m.add(Activations, "position ids (a checkpointed layer's argument)", "activation", 8*c.S)
	}
}

// head adds the final norm's saved tensors and lm_head's input.
func (c *calc) head(m *moment, forward bool) {
	m.add(Activations, "final norm: normalized input and 1/rms", "activation", c.finalNormSaved())
	switch {
	case c.d.cast == 0 && c.s.Loss != FusedLoss:
		m.add(Activations, "final hidden states (lm_head's input)", "activation", c.finalNormOut())
	case forward:
		m.add(Activations, "final hidden states (held until the loss returns)", "temporary", c.finalNormOut())
	}
	if c.s.Loss != FusedLoss {
		m.add(Activations, "bf16 copy of lm_head's input (autocast)", "activation", c.lmInputCast())
	}
}

func (c *calc) forwardPhase() PhasePeak {
	end := &moment{what: "end of forward: the loss computed, every layer's activations saved"}
	c.floor(end)
	c.savedActivations(end, c.L)
	copyCat := "activation"
	if c.s.Checkpointing != NoCheckpointing {
		copyCat = "temporary" // only autocast's cache holds them
	}
	end.add(Activations, "bf16 weight copies (autocast cache)", copyCat, c.weightCopies())
	c.head(end, true)
	l := c.loss()
	for _, p := range l.forward {
		cat := "temporary"
		if p.Live == LiveForwardToBackward {
			cat = "activation"
		}
		end.add(LogitsLoss, p.Name, cat, p.Bytes)
	}
	if c.s.Checkpointing == NoCheckpointing {
		return peakOf("forward", end)
	}
	// With checkpointing a layer's activations exist until it returns:
	// inside the last layer, all of them are live at once.
	last := &moment{what: "inside the last layer: its activations exist until it returns"}
	c.floor(last)
	c.savedActivations(last, c.L-1)
	last.add(Activations, "the last layer's activations (recomputed in backward)", "temporary", c.layerFull())
	last.add(Activations, "bf16 weight copies of the layers (autocast cache)", copyCat, c.L*c.layerWeightCopies())
	return peakOf("forward", end, last)
}

func (c *calc) backwardPhase() PhasePeak {
	l := c.loss()
	start := &moment{what: "start of backward: the loss gradients on top of everything saved"}
	c.floor(start)
	c.savedActivations(start, c.L)
	c.addSavedCopies(start)
	c.head(start, false)
	start.addParts(LogitsLoss, "activation", l.saved)
	start.addParts(LogitsLoss, "temporary", l.spike)

	moments := []*moment{start}
	if len(l.lmBwd) > 0 {
		lm := &moment{what: "lm_head's backward: the logits' gradient, lm_head's weight gradient"}
		c.floor(lm)
		c.savedActivations(lm, c.L)
		c.addSavedCopies(lm)
		c.head(lm, false)
		lm.addParts(LogitsLoss, "temporary", l.lmBwd)
		c.gradsSoFar(lm, c.L)
		moments = append(moments, lm)
	}
	for i := c.L - 1; i >= 0; i-- {
		m := &moment{what: fmt.Sprintf("backward of layer %d: layers below still saved, gradients above made", i)}
		c.floor(m)
		c.savedActivations(m, i)
		if c.s.Checkpointing == NoCheckpointing {
			m.add(Activations, "this layer's saved activations", "activation", c.layerFull())
			m.add(Activations, "bf16 weight copies of this layer and those below (autocast)", "activation", (i+1)*c.layerWeightCopies())
		} else {
			// Its input is the layer below's output, already counted.
			m.add(Activations, "this layer's activations, recomputed", "temporary", c.layerFull())
			m.add(Activations, "bf16 weight copies of this layer, recomputed (autocast)", "temporary", c.layerWeightCopies())
		}
		m.add(Activations, "gradients inside the layer's backward (MLP)", "temporary", c.bwdWorkingSet())
		c.gradsSoFar(m, i)
		moments = append(moments, m)
	}
	end := &moment{what: "end of backward: every gradient made"}
	c.floor(end)
	if c.s.Accumulation <= 1 {
		end.add(ModelStates, c.grads().Name, "gradient", c.grads().Bytes)
	}
	if c.m.TiedEmbeddings {
		end.add(ModelStates, "embedding's dense gradient, before it is added to lm_head's", "temporary", c.d.grad*c.V*c.h)
	}
	moments = append(moments, end)
	return peakOf("backward", moments...)
}

// addSavedCopies adds autocast's weight copies that backward needs.
func (c *calc) addSavedCopies(m *moment) {
	name := "bf16 weight copies saved for backward (autocast)"
	if c.s.Checkpointing != NoCheckpointing {
		name = "bf16 copy of lm_head's weight saved for backward (autocast)"
	}
	b := c.weightCopiesSaved()
	if c.s.Loss == FusedLoss {
		b -= c.lmWeightCopy()
	}
	m.add(Activations, name, "activation", b)
}

// gradsSoFar adds the gradients made when backward reaches layer i: the
// output projection's, the final norm's, and those of layers i to L-1.
func (c *calc) gradsSoFar(m *moment, i int64) {
	if c.s.Accumulation > 1 {
		return // all of them are in the floor
	}
	params := c.V*c.h + c.p.FinalNorm + (c.L-i)*c.p.PerLayer
	if i == c.L { // lm_head's backward
		params = c.V * c.h
	}
	m.add(ModelStates, "gradients made so far", "gradient", params*c.d.grad)
}

func (c *calc) optimizerPhase() PhasePeak {
	m := &moment{what: "inside optimizer.step(): every gradient and the step's temporaries"}
	c.floor(m)
	if c.s.Accumulation <= 1 {
		m.add(ModelStates, c.grads().Name, "gradient", c.grads().Bytes)
	}
	t := c.stepTemporaries()
	m.add(ModelStates, t.Name, "temporary", t.Bytes)
	return peakOf("optimizer", m)
}

// inferPhase is one forward of inference (prefill) over Batch × Seq tokens
// with the KV cache holding MaxTokens: a preallocated pool (vLLM, a static
// cache) holds them from the start; transformers' DynamicCache grows to
// them, so with MaxTokens above Batch × Seq this is an upper bound. Without autograd only what a
// Python variable holds is live: in the last layer's MLP, the embedding
// output (LlamaModel keeps inputs_embeds), the layer's input (the caller's
// hidden_states), the post-attention residual, the MLP's input and three
// intermediate-width tensors (activation, up, product), with autocast's
// cached weight copies of every projection run so far; at the end, the
// final hidden states and the last position's logits.
func (c *calc) inferPhase() PhasePeak {
	h := c.d.resid * c.h * c.T
	base := func(m *moment) {
		c.floor(m)
		m.add(KVCache, c.kvCache().Name, "activation", c.kvCache().Bytes)
		m.add(Activations, "embedding output (held until the forward returns)", "temporary", h)
		m.add(Activations, "rotary cos and sin, position ids", "temporary", c.rope()+8*c.S)
	}
	k := int64(3) // activation output, up output, product
	if c.m.MLP == PlainMLP {
		k = 2
	}
	mlp := &moment{what: "prefill, inside the last layer's MLP, with the KV cache filled"}
	base(mlp)
	// down_proj of the last layer has not run yet: its copy does not exist.
	mlp.add(Activations, "bf16 weight copies of the layers (autocast cache)", "temporary",
		c.L*c.layerWeightCopies()-c.d.cast*c.h*c.I)
	mlp.add(Activations, "layer input, post-attention residual, MLP input", "temporary", 3*h)
	mlp.add(Activations, fmt.Sprintf("MLP intermediates (%d × intermediate)", k), "temporary", k*c.d.act*c.I*c.T)
	out := &moment{what: "prefill, the output projection of the last positions"}
	base(out)
	out.add(Activations, "bf16 weight copies (autocast cache)", "temporary", c.weightCopies())
	out.add(Activations, "final hidden states", "temporary", h)
	out.addParts(LogitsLoss, "temporary", c.inferLogits())
	return peakOf("forward", mlp, out)
}
