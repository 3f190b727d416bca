package budget

// The saved activations of a Hugging Face Llama-style decoder layer, derived
// from what each op saves for its backward (read off the live blocks of the
// llama-* fixtures, one layer at a time):
//
//   - RMSNorm computes in fp32: x.pow(2) saves x (the residual stream,
//     counted once), x * rsqrt(var) saves the 1/rms vector, and
//     weight * normalized saves the normalized fp32 tensor. A bf16 input is
//     first upcast, and that fp32 copy is what pow and the multiply save.
//   - Under autocast every F.linear casts its fp32 input to bf16 and saves
//     the cast, once per projection (q, k, v, gate, up: five copies), and
//     casts its weight (cached for the forward, saved for backward).
//   - SDPA (flash or memory-efficient) saves q, k and v after the rotary
//     embedding (k and v at the key/value width: GQA is not expanded), its
//     output (also o_proj's input) and the fp32 logsumexp per head and
//     token; no s×s matrix. Eager attention expands k and v to all heads
//     and saves the softmax probabilities in fp32 plus their bf16 copy.
//     So does SDPA in fp32 with GQA: flash takes only 16-bit inputs and the
//     memory-efficient kernel no GQA, so torch falls back to its math
//     kernel (measured on an H200, torch 2.11: k and v expanded, fp32
//     probabilities saved, no logsumexp).
//   - The gated MLP saves gate's output (for the activation), the
//     activation's output and up's output (for the product) and the product
//     (down's input): four tensors of the intermediate width; the plain MLP
//     saves up's output and the activation's output.
//   - The two residual adds produce the stream each next norm saves: fp32
//     under autocast, since the embedding output is fp32 and bf16 + fp32 is
//     fp32. A bf16 stream is not saved at all: the norms save their fp32
//     upcast instead, and nothing else keeps it.

// layerParts are the tensors one layer saves without checkpointing.
func (c *calc) layerParts() []Part {
	d, T, h := c.d, c.T, c.h
	var ps []Part
	add := func(kind PartKind, perToken int64, ops Operands) {
		ops.Tokens = T
		ps = append(ps, Part{Kind: kind, Ops: ops, Bytes: perToken * T, Live: LiveForwardToBackward})
	}
	if c.residualSaved() {
		add(PartLayerResidual, 2*d.resid*h, Operands{Hidden: h, Elem: d.resid})
	}
	if d.resid == 4 {
		add(PartLayerNormsFP32, 2*(4*h+4), Operands{Hidden: h})
	} else {
		add(PartLayerNormsBF16, 2*(6*h+4), Operands{Hidden: h})
	}
	if d.cast > 0 {
		k := int64(4) // q, k, v, gate/up
		if c.m.MLP == GatedMLP {
			k = 5
		}
		add(PartLayerNormCasts, k*d.cast*h, Operands{Count: k, Hidden: h, Elem: d.cast})
	} else {
		add(PartLayerNormOutputs, 2*d.resid*h, Operands{Hidden: h, Elem: d.resid})
	}
	if c.savesScores() {
		add(PartLayerQKVRepeated, 3*c.Q*d.act, Operands{QWidth: c.Q, Elem: d.act})
	} else {
		add(PartLayerQKV, (c.Q+2*c.K)*d.act, Operands{QWidth: c.Q, KVWidth: c.K, Elem: d.act})
	}
	add(PartLayerAttnOut, c.Q*d.act, Operands{QWidth: c.Q, Elem: d.act})
	if c.savesScores() {
		per := int64(4)
		if d.act < 4 {
			per += d.act
		}
		add(PartLayerProbs, per*c.nh*c.S, Operands{Heads: c.nh, Positions: c.S, Elem: per})
	} else {
		add(PartLayerLogsumexp, 4*c.nh, Operands{Heads: c.nh})
	}
	if c.m.MLP == GatedMLP {
		add(PartLayerGatedMLP, 4*c.I*d.act, Operands{Intermediate: c.I, Elem: d.act})
	} else {
		add(PartLayerPlainMLP, 2*c.I*d.act, Operands{Intermediate: c.I, Elem: d.act})
	}
	return ps
}

// layer describes one layer's saved activations.
func (c *calc) layer() Layer {
	l := Layer{Parts: c.layerParts()}
	for _, p := range l.Parts {
		l.Full += p.Bytes
	}
	l.PerToken = l.Full / c.T
	l.Saved = c.layerSaved()
	l.Rule = 34 * c.S * c.B * c.h
	l.RuleOps = RuleOperands{Seq: c.S, Batch: c.B, Hidden: c.h}
	if c.savesScores() {
		l.Rule += 5 * c.nh * c.S * c.S * c.B
		l.RuleOps.Heads = c.nh
	}
	return l
}

// layerFull is the sum of layerParts.
func (c *calc) layerFull() int64 {
	var b int64
	for _, p := range c.layerParts() {
		b += p.Bytes
	}
	return b
}

// layerSaved is what one layer keeps until its backward under the run's
// checkpointing. Full keeps the layer's input (the residual stream) and
// recomputes the rest; selective also keeps the outputs of the matmuls and
// of attention.
func (c *calc) layerSaved() int64 {
	d, T := c.d, c.T
	switch c.s.Checkpointing {
	case FullCheckpointing:
		return d.resid * c.h * T
	case SelectiveCheckpointing:
		mm := c.Q + 2*c.K + c.h + c.h // q, k, v, o and down outputs
		if c.m.MLP == GatedMLP {
			mm += 2 * c.I
		} else {
			mm += c.I
		}
		b := d.resid*c.h*T + d.act*(mm+c.Q)*T // + attention output
		if c.savesScores() {
			b += d.act * c.nh * c.S * T // the score matmul's output
		} else {
			b += 4 * c.nh * T
		}
		return b
	}
	return c.layerFull()
}

// savesScores reports whether attention saves the s×s probabilities:
// eager attention, or SDPA falling back to its math kernel (fp32 with GQA).
func (c *calc) savesScores() bool {
	return c.m.Attention == Eager || c.d.act == 4 && c.m.KVHeads != c.m.Heads
}

// residualSaved reports whether the norms save the residual stream itself:
// an fp32 stream, which x.to(float32) returns as it is. A bf16 stream is
// upcast first and the copy is what is saved.
func (c *calc) residualSaved() bool { return c.d.resid == 4 }

// embedOut is the embedding's output, the first layer's input.
func (c *calc) embedOut() int64 { return c.d.resid * c.h * c.T }

// rope is the rotary cos and sin tables, one sequence long (position ids
// are shared by the batch), in the residual dtype.
func (c *calc) rope() int64 { return 2 * c.S * c.m.headDim() * c.d.resid }

// embedOutPart, ropePart, finalNormPart, finalHiddenPart and
// lmInputCastPart are the parts of the tensors above.
func (c *calc) embedOutPart() Part {
	return Part{Kind: PartEmbedOut, Ops: Operands{Tokens: c.T, Hidden: c.h, Elem: c.d.resid},
		Bytes: c.embedOut(), Live: LiveForwardToBackward}
}

func (c *calc) ropePart() Part {
	return Part{Kind: PartRope, Ops: Operands{Positions: c.S, HeadDim: c.m.headDim(), Elem: c.d.resid},
		Bytes: c.rope(), Live: LiveForwardToBackward}
}

func (c *calc) finalNormPart() Part {
	return Part{Kind: PartFinalNorm, Ops: Operands{Tokens: c.T, Elem: c.d.resid}, Bytes: c.finalNormSaved(), Live: LiveForwardToBackward}
}

func (c *calc) finalHiddenPart() Part {
	return Part{Kind: PartFinalHidden, Ops: Operands{Tokens: c.T, Hidden: c.h, Elem: c.d.resid},
		Bytes: c.finalNormOut(), Live: LiveForward}
}

func (c *calc) lmInputCastPart() Part {
	return Part{Kind: PartLMInputCast, Ops: Operands{Tokens: c.T, Hidden: c.h, Elem: c.d.cast},
		Bytes: c.lmInputCast(), Live: LiveForwardToBackward}
}

// weightCopiesCache is autocast's cache of the weight copies, live.
func (c *calc) weightCopiesCache(live Lifetime) Part {
	return Part{Kind: PartWeightCopiesCache, Ops: Operands{Params: c.p.Matmul, Elem: c.d.cast},
		Bytes: c.weightCopies(), Live: live}
}

// inputs is the token ids (int64).
func (c *calc) inputs() int64 { return 8 * c.T }

// finalNormSaved is what the final RMSNorm saves (its input is the last
// layer's output, counted there).
func (c *calc) finalNormSaved() int64 {
	if c.d.resid == 4 {
		return (4*c.h + 4) * c.T
	}
	return (6*c.h + 4) * c.T
}

// finalNormOut is the final hidden states, lm_head's input: saved by
// lm_head when it needs no cast, otherwise live only in the forward.
func (c *calc) finalNormOut() int64 { return c.d.resid * c.h * c.T }

// lmInputCast is autocast's bf16 copy of lm_head's input, saved.
func (c *calc) lmInputCast() int64 { return c.d.cast * c.h * c.T }

// weightCopies is autocast's bf16 copies of the matmul weights: all layers
// and lm_head.
func (c *calc) weightCopies() int64      { return c.d.cast * c.p.Matmul }
func (c *calc) layerWeightCopies() int64 { return c.d.cast * c.p.LayerMatmul }
func (c *calc) lmWeightCopy() int64      { return c.d.cast * c.V * c.h }

// weightCopiesSaved is the part of the weight copies autograd keeps for
// backward: every one without checkpointing; only lm_head's with it (the
// layers' copies are made again when a layer is recomputed).
func (c *calc) weightCopiesSaved() int64 {
	if c.s.Checkpointing == NoCheckpointing {
		return c.weightCopies()
	}
	return c.lmWeightCopy()
}

// bwdWorkingSet is the gradients alive inside one layer's backward: in the
// MLP's backward, the product's gradient and the gradients of both of its
// inputs (three tensors of the intermediate width; two for a plain MLP),
// and the layer's largest weight gradient before it is accumulated.
func (c *calc) bwdWorkingSet() int64 {
	k := int64(3)
	if c.m.MLP == PlainMLP {
		k = 2
	}
	return k*c.I*c.d.act*c.T + c.h*c.I*c.d.act
}
