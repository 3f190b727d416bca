package budget

// lossTensors are the vocabulary-sized tensors of the output projection and
// the cross-entropy, by when they are live.
type lossTensors struct {
	forward []Part // live when the loss has been computed (the forward's peak)
	saved   []Part // the part of forward (or made there) kept for backward
	spike   []Part // made at the start of backward, on top of saved
	lmBwd   []Part // alive while lm_head's backward runs (saved ones freed)
}

// upcast reports whether the loss makes an fp32 copy of bf16 logits.
func (c *calc) upcast() bool { return c.d.act < 4 }

// chunkTokens is the tokens of one loss chunk: T / LossChunks for the
// chunked loss; Liger's rule for the fused one (the next power of two of
// T / ⌈V / h⌉, so that a chunk of logits is about the size of the hidden
// states).
func (c *calc) chunkTokens() int64 {
	switch c.s.Loss {
	case ChunkedLoss:
		return ceilDiv(c.T, c.s.LossChunks)
	case FusedLoss:
		x := ceilDiv(c.T, ceilDiv(c.V, c.h))
		p := int64(1)
		for p < x {
			p *= 2
		}
		return p
	}
	return c.T
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// loss returns the loss tensors of the run's loss.
func (c *calc) loss() lossTensors {
	V, act := c.V, c.d.act
	part := func(kind PartKind, tokens, bytes int64, live Lifetime) Part {
		return Part{Kind: kind, Ops: Operands{Tokens: tokens, Vocab: V, Elem: bytes}, Bytes: tokens * V * bytes, Live: live}
	}
	var l lossTensors
	switch c.s.Loss {
	case PlainLoss:
		logits := part(PartLogits, c.T, act, LiveForward)
		ls := part(PartLogSoftmax, c.T, 4, LiveForwardToBackward)
		l.forward = []Part{logits}
		if c.upcast() {
			l.forward = append(l.forward, part(PartLogitsFP32, c.T, 4, LiveForward))
		}
		l.forward = append(l.forward, ls)
		l.saved = []Part{ls}
		l.spike = []Part{part(PartLogSoftmaxGrad, c.T, 4, LiveBackwardStart),
			part(PartLogitsGradFP32, c.T, 4, LiveBackwardStart)}
		l.lmBwd = []Part{part(PartLogitsGradFP32, c.T, 4, LiveBackwardStart)}
		if c.upcast() {
			l.lmBwd = append(l.lmBwd, part(PartLogitsGrad, c.T, act, LiveBackwardStart))
		}
	case ChunkedLoss:
		C := c.chunkTokens()
		ls := part(PartChunkLogSoftmax, c.T, 4, LiveForwardToBackward)
		ls.Ops.Count = c.s.LossChunks
		l.forward = []Part{part(PartChunkLogits, c.T, act, LiveForward)}
		if c.upcast() {
			l.forward = append(l.forward, part(PartChunkFP32, C, 4, LiveForward))
		}
		l.forward = append(l.forward, ls)
		l.saved = []Part{ls}
		l.spike = []Part{part(PartChunkGrads, C, 2*4, LiveBackwardStart)}
		l.lmBwd = []Part{part(PartChunkLogitsGrad, C, 4+act, LiveBackwardStart)}
	case FusedLoss:
		C := c.chunkTokens()
		gh := Part{Kind: PartFusedHiddenGrad, Ops: Operands{Tokens: c.T, Hidden: c.h, Elem: c.d.resid},
			Bytes: c.d.resid * c.h * c.T, Live: LiveForwardToBackward}
		gw := Part{Kind: PartFusedHeadGrad, Ops: Operands{Vocab: c.V, Hidden: c.h, Elem: c.d.grad},
			Bytes: c.d.grad * c.V * c.h, Live: LiveForwardToBackward}
		l.forward = []Part{part(PartFusedChunkLogits, C, act, LiveForward), gh, gw}
		l.saved = []Part{gh, gw}
	}
	return l
}

// inferLogits is the logits generation computes: the last position of each
// sequence, upcast to fp32.
func (c *calc) inferLogits() []Part {
	ps := []Part{{Kind: PartLastLogits, Ops: Operands{Sequences: c.B, Vocab: c.V, Elem: c.d.act},
		Bytes: c.B * c.V * c.d.act, Live: LiveForward}}
	if c.upcast() {
		ps = append(ps, Part{Kind: PartLastLogitsFP32, Ops: Operands{Sequences: c.B, Vocab: c.V, Elem: 4},
			Bytes: c.B * c.V * 4, Live: LiveForward})
	}
	return ps
}

// kvPerToken is the KV cache's bytes per token: a key and a value per
// layer, each KV heads × head dim elements. Keys are cached after the
// rotary embedding, whose cos and sin have the residual stream's dtype, so
// under autocast a bf16 key times fp32 cos is fp32; and transformers'
// DynamicCache starts each layer from an empty tensor of the keys' dtype,
// which torch.cat promotes the values to. Both take the residual's bytes:
// 4 under autocast (measured on an H200), 2 in bf16.
func (c *calc) kvPerToken() int64 { return 2 * c.L * c.K * c.d.resid }

// kvCache is the cache for MaxTokens tokens in inference; none in training.
func (c *calc) kvCache() Part {
	if c.s.Mode != Infer {
		return Part{Kind: PartNoKVCache, Live: LiveForward}
	}
	return Part{Kind: PartKVCache, Bytes: c.kvPerToken() * c.s.MaxTokens, Live: LiveWholeStep,
		Ops: Operands{Tokens: c.s.MaxTokens, Layers: c.L, KVHeads: c.m.KVHeads, HeadDim: c.m.headDim(),
			Elem: c.d.resid, PerToken: c.kvPerToken()}}
}

func sum(ps []Part) int64 {
	var b int64
	for _, p := range ps {
		b += p.Bytes
	}
	return b
}
