package budget

import "fmt"

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
	part := func(name string, tokens, bytes int64, live Lifetime) Part {
		return Part{Name: name, Bytes: tokens * V * bytes, Live: live,
			Formula: fmt.Sprintf("%s tokens × %s vocab × %d B", n(tokens), n(V), bytes)}
	}
	var l lossTensors
	switch c.s.Loss {
	case PlainLoss:
		logits := part(fmt.Sprintf("logits (%s)", dtypeName(act)), c.T, act, LiveForward)
		ls := part("log-softmax output, fp32 (saved)", c.T, 4, LiveForwardToBackward)
		l.forward = []Part{logits}
		if c.upcast() {
			l.forward = append(l.forward, part("fp32 copy of the logits (.float())", c.T, 4, LiveForward))
		}
		l.forward = append(l.forward, ls)
		l.saved = []Part{ls}
		l.spike = []Part{part("gradient of the log-softmax output", c.T, 4, LiveBackwardStart),
			part("gradient of the logits, fp32", c.T, 4, LiveBackwardStart)}
		l.lmBwd = []Part{part("gradient of the logits, fp32", c.T, 4, LiveBackwardStart)}
		if c.upcast() {
			l.lmBwd = append(l.lmBwd, part(fmt.Sprintf("gradient of the logits (%s)", dtypeName(act)), c.T, act, LiveBackwardStart))
		}
	case ChunkedLoss:
		C := c.chunkTokens()
		ls := part(fmt.Sprintf("log-softmax output of all %d chunks, fp32 (saved)", c.s.LossChunks), c.T, 4, LiveForwardToBackward)
		l.forward = []Part{part(fmt.Sprintf("logits of all chunks (%s)", dtypeName(act)), c.T, act, LiveForward)}
		if c.upcast() {
			l.forward = append(l.forward, part("fp32 copy of one chunk", C, 4, LiveForward))
		}
		l.forward = append(l.forward, ls)
		l.saved = []Part{ls}
		l.spike = []Part{part("gradients of one chunk's log-softmax and logits, fp32", C, 2*4, LiveBackwardStart)}
		l.lmBwd = []Part{part("gradient of one chunk's logits", C, 4+act, LiveBackwardStart)}
	case FusedLoss:
		C := c.chunkTokens()
		gh := Part{Name: "gradient of the hidden states, computed in the forward", Bytes: c.d.resid * c.h * c.T,
			Formula: fmt.Sprintf("%s × %d hidden × %d B", c.tokens(), c.h, c.d.resid), Live: LiveForwardToBackward}
		gw := Part{Name: "gradient of the output projection, computed in the forward", Bytes: c.d.grad * c.V * c.h,
			Formula: fmt.Sprintf("%s vocab × %d hidden × %d B", n(c.V), c.h, c.d.grad), Live: LiveForwardToBackward}
		l.forward = []Part{part(fmt.Sprintf("logits of one %s-token chunk (%s)", n(C), dtypeName(act)), C, act, LiveForward), gh, gw}
		l.saved = []Part{gh, gw}
	}
	return l
}

// inferLogits is the logits generation computes: the last position of each
// sequence, upcast to fp32.
func (c *calc) inferLogits() []Part {
	ps := []Part{{Name: "logits of the last position of each sequence", Bytes: c.B * c.V * c.d.act, Live: LiveForward,
		Formula: fmt.Sprintf("%d sequences × %s vocab × %d B", c.B, n(c.V), c.d.act)}}
	if c.upcast() {
		ps = append(ps, Part{Name: "their fp32 copy", Bytes: c.B * c.V * 4, Live: LiveForward,
			Formula: fmt.Sprintf("%d sequences × %s vocab × 4 B", c.B, n(c.V))})
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
		return Part{Name: "none in training (use_cache off)", Live: LiveForward}
	}
	return Part{Name: "keys and values of every layer", Bytes: c.kvPerToken() * c.s.MaxTokens, Live: LiveWholeStep,
		Formula: fmt.Sprintf("%s tokens × 2 × %d layers × %d KV heads × %d dim × %d B = %s tokens × %s B",
			n(c.s.MaxTokens), c.L, c.m.KVHeads, c.m.headDim(), c.d.resid, n(c.s.MaxTokens), n(c.kvPerToken()))}
}

func dtypeName(bytes int64) string {
	switch bytes {
	case 2:
		return "bf16"
	case 4:
		return "fp32"
	}
	return fmt.Sprintf("%d B", bytes)
}

func sum(ps []Part) int64 {
	var b int64
	for _, p := range ps {
		b += p.Bytes
	}
	return b
}
