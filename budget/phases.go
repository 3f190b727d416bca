package budget

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
	what   Moment
	shares []Share
}

// add adds b bytes of the tensors kind names (with the operands its name
// needs).
func (m *moment) add(t TermKey, kind PartKind, ops Operands, category string, b int64) {
	if b != 0 {
		m.shares = append(m.shares, Share{Term: t, Kind: kind, Ops: ops, Bytes: b, Category: category})
	}
}

// addPart adds part p's bytes.
func (m *moment) addPart(t TermKey, category string, p Part) {
	m.add(t, p.Kind, p.Ops, category, p.Bytes)
}

func (m *moment) addParts(t TermKey, category string, ps []Part) {
	for _, p := range ps {
		m.addPart(t, category, p)
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
	m.addPart(ModelStates, "parameter", c.weights())
	if c.s.Mode == Train {
		m.addPart(ModelStates, "optimizer state", c.master())
		m.addPart(ModelStates, "optimizer state", c.optimizerState())
		if c.s.Accumulation > 1 {
			m.addPart(ModelStates, "gradient", c.grads())
		}
	}
	m.addPart(Overhead, "unknown", c.workspace())
	m.add(Activations, PartTokenIDs, Operands{Tokens: c.T}, "input", c.inputs())
}

// savedActivations adds the activations saved for the embedding and the
// first n layers (n = layers), and the rotary tables.
func (c *calc) savedActivations(m *moment, layers int64) {
	ckpt := c.s.Checkpointing != NoCheckpointing
	if c.residualSaved() || ckpt { // saved by the first norm, or by the checkpoint
		m.addPart(Activations, "activation", c.embedOutPart())
	}
	m.addPart(Activations, "activation", c.ropePart())
	b := layers * c.layerSaved()
	if ckpt && layers == c.L && !c.residualSaved() {
		// Each checkpointed layer keeps its input, the layer below's
		// output; the last layer's output goes to the final norm, which
		// saves an fp32 copy of a bf16 stream instead.
		b -= c.d.resid * c.h * c.T
	}
	m.add(Activations, ShareLayersSaved, Operands{Layers: layers}, "activation", b)
	if c.s.Checkpointing != NoCheckpointing {
		// Checkpointing keeps every tensor argument of a layer: the
		// position ids (one int64 per position) too.
		m.add(Activations, SharePositionIDs, Operands{Positions: c.S}, "activation", 8*c.S)
	}
}

// head adds the final norm's saved tensors and lm_head's input.
func (c *calc) head(m *moment, forward bool) {
	m.addPart(Activations, "activation", c.finalNormPart())
	hidden := c.finalHiddenPart().Ops
	switch {
	case c.d.cast == 0 && c.s.Loss != FusedLoss:
		m.add(Activations, ShareFinalHiddenHead, hidden, "activation", c.finalNormOut())
	case forward:
		m.add(Activations, ShareFinalHiddenHeld, hidden, "temporary", c.finalNormOut())
	}
	if c.s.Loss != FusedLoss {
		m.addPart(Activations, "activation", c.lmInputCastPart())
	}
}

func (c *calc) forwardPhase() PhasePeak {
	end := &moment{what: Moment{Kind: MomentForwardEnd}}
	c.floor(end)
	c.savedActivations(end, c.L)
	copyCat := "activation"
	if c.s.Checkpointing != NoCheckpointing {
		copyCat = "temporary" // only autocast's cache holds them
	}
	end.addPart(Activations, copyCat, c.weightCopiesCache(LiveForward))
	c.head(end, true)
	l := c.loss()
	for _, p := range l.forward {
		cat := "temporary"
		if p.Live == LiveForwardToBackward {
			cat = "activation"
		}
		end.addPart(LogitsLoss, cat, p)
	}
	if c.s.Checkpointing == NoCheckpointing {
		return peakOf("forward", end)
	}
	// With checkpointing a layer's activations exist until it returns:
	// inside the last layer, all of them are live at once.
	last := &moment{what: Moment{Kind: MomentLastLayer}}
	c.floor(last)
	c.savedActivations(last, c.L-1)
	last.add(Activations, ShareLastLayerActs, Operands{}, "temporary", c.layerFull())
	last.add(Activations, ShareLayerCopiesCache, Operands{}, copyCat, c.L*c.layerWeightCopies())
	return peakOf("forward", end, last)
}

func (c *calc) backwardPhase() PhasePeak {
	l := c.loss()
	start := &moment{what: Moment{Kind: MomentBackwardStart}}
	c.floor(start)
	c.savedActivations(start, c.L)
	c.addSavedCopies(start)
	c.head(start, false)
	start.addParts(LogitsLoss, "activation", l.saved)
	start.addParts(LogitsLoss, "temporary", l.spike)

	moments := []*moment{start}
	if len(l.lmBwd) > 0 {
		lm := &moment{what: Moment{Kind: MomentLMHeadBackward}}
		c.floor(lm)
		c.savedActivations(lm, c.L)
		c.addSavedCopies(lm)
		c.head(lm, false)
		lm.addParts(LogitsLoss, "temporary", l.lmBwd)
		c.gradsSoFar(lm, c.L)
		moments = append(moments, lm)
	}
	for i := c.L - 1; i >= 0; i-- {
		m := &moment{what: Moment{Kind: MomentLayerBackward, Layer: i}}
		c.floor(m)
		c.savedActivations(m, i)
		if c.s.Checkpointing == NoCheckpointing {
			m.add(Activations, ShareThisLayerSaved, Operands{}, "activation", c.layerFull())
			m.add(Activations, ShareCopiesBelow, Operands{}, "activation", (i+1)*c.layerWeightCopies())
		} else {
			// Its input is the layer below's output, already counted.
			m.add(Activations, ShareThisLayerRecomputed, Operands{}, "temporary", c.layerFull())
			m.add(Activations, ShareThisLayerCopyRecomputed, Operands{}, "temporary", c.layerWeightCopies())
		}
		m.add(Activations, ShareLayerBackwardGrads, Operands{}, "temporary", c.bwdWorkingSet())
		c.gradsSoFar(m, i)
		moments = append(moments, m)
	}
	end := &moment{what: Moment{Kind: MomentBackwardEnd}}
	c.floor(end)
	if c.s.Accumulation <= 1 {
		end.addPart(ModelStates, "gradient", c.grads())
	}
	if c.m.TiedEmbeddings {
		end.add(ModelStates, ShareEmbeddingGrad, Operands{}, "temporary", c.d.grad*c.V*c.h)
	}
	moments = append(moments, end)
	return peakOf("backward", moments...)
}

// addSavedCopies adds autocast's weight copies that backward needs.
func (c *calc) addSavedCopies(m *moment) {
	kind := ShareSavedCopies
	if c.s.Checkpointing != NoCheckpointing {
		kind = ShareSavedHeadCopy
	}
	b := c.weightCopiesSaved()
	if c.s.Loss == FusedLoss {
		b -= c.lmWeightCopy()
	}
	m.add(Activations, kind, Operands{}, "activation", b)
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
	m.add(ModelStates, ShareGradsSoFar, Operands{}, "gradient", params*c.d.grad)
}

func (c *calc) optimizerPhase() PhasePeak {
	m := &moment{what: Moment{Kind: MomentOptimizerStep}}
	c.floor(m)
	if c.s.Accumulation <= 1 {
		m.addPart(ModelStates, "gradient", c.grads())
	}
	m.addPart(ModelStates, "temporary", c.stepTemporaries())
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
		m.addPart(KVCache, "kv cache", c.kvCache())
		m.add(Activations, ShareEmbedHeld, Operands{}, "temporary", h)
		m.add(Activations, ShareRopePositions, Operands{}, "temporary", c.rope()+8*c.S)
	}
	k := int64(3) // activation output, up output, product
	if c.m.MLP == PlainMLP {
		k = 2
	}
	mlp := &moment{what: Moment{Kind: MomentPrefillMLP}}
	base(mlp)
	// down_proj of the last layer has not run yet: its copy does not exist.
	mlp.add(Activations, ShareLayerCopiesCache, Operands{}, "temporary",
		c.L*c.layerWeightCopies()-c.d.cast*c.h*c.I)
	mlp.add(Activations, ShareInferResiduals, Operands{}, "temporary", 3*h)
	mlp.add(Activations, ShareInferMLP, Operands{Count: k}, "temporary", k*c.d.act*c.I*c.T)
	out := &moment{what: Moment{Kind: MomentPrefillOutput}}
	base(out)
	out.addPart(Activations, "temporary", c.weightCopiesCache(LiveForward))
	out.addPart(Activations, "temporary", c.finalHiddenPart())
	out.addParts(LogitsLoss, "temporary", c.inferLogits())
	return peakOf("forward", mlp, out)
}
