package budget

import "testing"

// The parts of Llama-3.2-1B (llama1B's shape) hold the numbers their
// formulas multiply: the model's parameter count, bytes per element, the
// micro-batch's tokens, the architecture's widths.
func TestLlama1BPartOperands(t *testing.T) {
	p := llama1B(t)
	const P, T = 1_235_814_400, 16384
	for _, c := range []struct {
		term TermKey
		kind PartKind
		ops  Operands
	}{
		{ModelStates, PartWeights, Operands{Params: P, Elem: 4}},
		{ModelStates, PartGrads, Operands{Params: P, Elem: 4}},
		{ModelStates, PartAdamWMoments, Operands{Params: P, Count: 2, Elem: 4, Ranks: 1}},
		{ModelStates, PartStepForeach, Operands{Params: P, Elem: 4, Ranks: 1, Temps: TempSqrtMoments}},
		{Activations, PartLayers, Operands{Layers: 16, LayerBytes: 129_160 * T, Tokens: T, PerToken: 129_160}},
		{Activations, PartEmbedOut, Operands{Tokens: T, Hidden: 2048, Elem: 4}},
		{Activations, PartRope, Operands{Positions: 4096, HeadDim: 64, Elem: 4}},
		{Activations, PartWeightCopies, Operands{Params: 1_235_746_816, Elem: 2}},
		{Activations, PartTokenIDs, Operands{Tokens: T}},
		{Activations, PartBackwardGrads, Operands{Tokens: T, Count: 3, Intermediate: 8192, Elem: 2}},
		{LogitsLoss, PartLogits, Operands{Tokens: T, Vocab: 128256, Elem: 2}},
		{LogitsLoss, PartLogSoftmax, Operands{Tokens: T, Vocab: 128256, Elem: 4}},
		{KVCache, PartNoKVCache, Operands{}},
		{Overhead, PartWorkspaces, Operands{Count: 2}},
		{Overhead, PartOutside, Operands{}},
	} {
		if got := partOf(t, p, c.term, c.kind).Ops; got != c.ops {
			t.Errorf("%s part %d operands = %+v, want %+v", c.term, c.kind, got, c.ops)
		}
	}
	if got := partOf(t, p, ModelStates, PartWeights).Bytes; got != P*4 {
		t.Errorf("weights = %d B, want params × 4 = %d", got, int64(P*4))
	}
	// One layer: residual, norms, the five casts, q/k/v, attention output,
	// logsumexp, MLP; each Tokens × what it says.
	wantLayer := []struct {
		kind PartKind
		ops  Operands
	}{
		{PartLayerResidual, Operands{Tokens: T, Hidden: 2048, Elem: 4}},
		{PartLayerNormsFP32, Operands{Tokens: T, Hidden: 2048}},
		{PartLayerNormCasts, Operands{Tokens: T, Count: 5, Hidden: 2048, Elem: 2}},
		{PartLayerQKV, Operands{Tokens: T, QWidth: 2048, KVWidth: 512, Elem: 2}},
		{PartLayerAttnOut, Operands{Tokens: T, QWidth: 2048, Elem: 2}},
		{PartLayerLogsumexp, Operands{Tokens: T, Heads: 32}},
		{PartLayerGatedMLP, Operands{Tokens: T, Intermediate: 8192, Elem: 2}},
	}
	if len(p.Layer.Parts) != len(wantLayer) {
		t.Fatalf("Layer.Parts = %d parts, want %d", len(p.Layer.Parts), len(wantLayer))
	}
	for i, w := range wantLayer {
		if got := p.Layer.Parts[i]; got.Kind != w.kind || got.Ops != w.ops {
			t.Errorf("Layer.Parts[%d] = kind %d %+v, want kind %d %+v", i, got.Kind, got.Ops, w.kind, w.ops)
		}
	}
	if want := (RuleOperands{Seq: 4096, Batch: 4, Hidden: 2048}); p.Layer.RuleOps != want {
		t.Errorf("Layer.RuleOps = %+v, want %+v", p.Layer.RuleOps, want)
	}
	// The peaks: the end of forward, the start of backward (the loss
	// gradients on everything saved), inside step().
	if k := p.Phases[0].Moment.Kind; k != MomentForwardEnd {
		t.Errorf("forward peaks at moment %d, want MomentForwardEnd", k)
	}
	if m := p.Phases[1].Moment; m != (Moment{Kind: MomentBackwardStart}) {
		t.Errorf("backward peaks at %+v, want MomentBackwardStart", m)
	}
	if k := p.Phases[2].Moment.Kind; k != MomentOptimizerStep {
		t.Errorf("optimizer peaks at moment %d, want MomentOptimizerStep", k)
	}
}

// The operands follow the run shape: sharding, the master copy, the
// chunked loss, eager attention, inference's KV cache.
func TestPartOperandsFollowShape(t *testing.T) {
	base := llama1B(t)
	const P = 1_235_814_400
	predict := func(f func(*Shape), m Model) *Prediction {
		s := base.Shape
		f(&s)
		p, err := Predict(m, s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	mixed := predict(func(s *Shape) { s.Precision, s.ShardRanks = BF16Mixed, 4 }, base.Model)
	if got, want := partOf(t, mixed, ModelStates, PartMaster), (Part{Kind: PartMaster,
		Ops: Operands{Params: P, Elem: 4, Ranks: 4}, Bytes: P * 4 / 4, PerParam: 4, Live: LiveWholeStep}); got != want {
		t.Errorf("bf16-mixed over 4 ranks: master = %+v, want %+v", got, want)
	}
	if got := partOf(t, mixed, ModelStates, PartStepForeach).Ops.Temps; got != TempSqrtMoments|TempFP32Grads {
		t.Errorf("bf16-mixed step temporaries = %b, want sqrt and fp32 gradients", got)
	}
	sgd := predict(func(s *Shape) { s.Optimizer = SGD }, base.Model)
	if got := partOf(t, sgd, ModelStates, PartStepInPlace).Ops; got != (Operands{Optimizer: SGD}) {
		t.Errorf("SGD step temporaries = %+v, want in place by sgd", got)
	}
	chunked := predict(func(s *Shape) { s.Loss = ChunkedLoss }, base.Model)
	if got := partOf(t, chunked, LogitsLoss, PartChunkLogSoftmax).Ops.Count; got != 8 {
		t.Errorf("chunked loss: log-softmax of %d chunks, want 8", got)
	}
	if got := partOf(t, chunked, LogitsLoss, PartChunkFP32).Ops.Tokens; got != 16384/8 {
		t.Errorf("chunked loss: a chunk of %d tokens, want %d", got, 16384/8)
	}
	eager := base.Model
	eager.Attention = Eager
	e := predict(func(*Shape) {}, eager)
	if want := (RuleOperands{Seq: 4096, Batch: 4, Hidden: 2048, Heads: 32}); e.Layer.RuleOps != want {
		t.Errorf("eager: RuleOps = %+v, want %+v (with the s² term)", e.Layer.RuleOps, want)
	}
	infer := predict(func(s *Shape) { s.Mode, s.MaxTokens = Infer, 65536 }, base.Model)
	// 2 × 16 layers × 8 KV heads × 64 dim × 4 B = 65,536 B per token.
	kv := partOf(t, infer, KVCache, PartKVCache)
	if want := (Operands{Tokens: 65536, Layers: 16, KVHeads: 8, HeadDim: 64, Elem: 4, PerToken: 65536}); kv.Ops != want || kv.Bytes != 65536*65536 {
		t.Errorf("KV cache = %+v, want operands %+v and %d B", kv, want, int64(65536*65536))
	}
	if got := partOf(t, infer, Overhead, PartWorkspaces).Ops.Count; got != 1 {
		t.Errorf("inference workspaces for %d threads, want 1", got)
	}
	if k := infer.Phases[0].Moment.Kind; k != MomentPrefillMLP && k != MomentPrefillOutput {
		t.Errorf("inference peaks at moment %d, want a prefill moment", k)
	}
}

// opsBytes is the bytes a part's operands multiply to, for the kinds whose
// formula is the whole product; ok is false for the others.
func opsBytes(k PartKind, o Operands) (int64, bool) {
	shard := func(b int64) int64 { return ceilDiv(b, max(o.Ranks, 1)) }
	switch k {
	case PartWeights, PartGrads, PartWeightCopies, PartWeightCopiesCache, PartStepLargest:
		return o.Params * o.Elem, true
	case PartMaster, PartStepForeach:
		return shard(o.Params * o.Elem), true
	case PartAdamWMoments, PartMomentumBuffer, PartNoOptimizerState:
		return shard(o.Params * o.Count * o.Elem), true
	case PartTokenIDs:
		return 8 * o.Tokens, true
	case PartInferResiduals:
		return o.Count * o.Tokens * o.Hidden * o.Elem, true
	case PartInferMLP:
		return o.Count * o.Tokens * o.Intermediate * o.Elem, true
	case PartLayers:
		return o.Layers * o.Tokens * o.PerToken, true
	case PartLayersSelectiveCkpt:
		return o.Layers * o.LayerBytes, true
	case PartLayersFullCkpt:
		return o.Layers * o.Tokens * o.Hidden * o.Elem, true
	case PartEmbedOut, PartFinalHidden, PartLMInputCast, PartFusedHiddenGrad:
		return o.Tokens * o.Hidden * o.Elem, true
	case PartRope:
		return 2 * o.Positions * o.HeadDim * o.Elem, true
	case PartLogits, PartLogSoftmax, PartLogitsFP32, PartLogSoftmaxGrad, PartLogitsGradFP32, PartLogitsGrad,
		PartChunkLogSoftmax, PartChunkLogits, PartChunkFP32, PartChunkGrads, PartChunkLogitsGrad, PartFusedChunkLogits:
		return o.Tokens * o.Vocab * o.Elem, true
	case PartFusedHeadGrad:
		return o.Vocab * o.Hidden * o.Elem, true
	case PartLastLogits, PartLastLogitsFP32:
		return o.Sequences * o.Vocab * o.Elem, true
	case PartKVCache:
		if o.PerToken != 2*o.Layers*o.KVHeads*o.HeadDim*o.Elem {
			return -1, true
		}
		return o.Tokens * o.PerToken, true
	case PartLayerResidual, PartLayerNormOutputs:
		return o.Tokens * 2 * o.Hidden * o.Elem, true
	case PartLayerNormsFP32:
		return o.Tokens * 2 * (o.Hidden*4 + 4), true
	case PartLayerNormsBF16:
		return o.Tokens * 2 * (o.Hidden*6 + 4), true
	case PartLayerNormCasts:
		return o.Tokens * o.Count * o.Hidden * o.Elem, true
	case PartLayerQKVRepeated:
		return o.Tokens * 3 * o.QWidth * o.Elem, true
	case PartLayerQKV:
		return o.Tokens * (o.QWidth + 2*o.KVWidth) * o.Elem, true
	case PartLayerAttnOut:
		return o.Tokens * o.QWidth * o.Elem, true
	case PartLayerProbs:
		return o.Tokens * o.Heads * o.Positions * o.Elem, true
	case PartLayerLogsumexp:
		return o.Tokens * o.Heads * 4, true
	case PartLayerGatedMLP:
		return o.Tokens * 4 * o.Intermediate * o.Elem, true
	case PartLayerPlainMLP:
		return o.Tokens * 2 * o.Intermediate * o.Elem, true
	}
	return 0, false
}

// Over the variants of the run shape, every part's bytes are the product
// of its operands: the formula report writes is the arithmetic done.
func TestPartBytesAreTheirOperands(t *testing.T) {
	base := llama1B(t)
	plain, eager := base.Model, base.Model
	plain.MLP = PlainMLP
	eager.Attention = Eager
	for _, c := range []struct {
		name string
		m    Model
		f    func(*Shape)
	}{
		{"default", base.Model, func(*Shape) {}},
		{"fp32-eager", eager, func(s *Shape) { s.Precision = FP32 }},
		{"bf16-plain-selective", plain, func(s *Shape) { s.Precision, s.Checkpointing = BF16, SelectiveCheckpointing }},
		{"mixed-sharded-forloop", base.Model, func(s *Shape) { s.Precision, s.ShardRanks, s.OptimizerImpl = BF16Mixed, 3, ForLoop }},
		{"full-chunked-momentum", base.Model, func(s *Shape) {
			s.Checkpointing, s.Loss, s.Optimizer, s.LossChunks = FullCheckpointing, ChunkedLoss, SGDMomentum, 5
		}},
		{"fused-loss-accumulation", base.Model, func(s *Shape) { s.Loss, s.Accumulation = FusedLoss, 4 }},
		{"infer", base.Model, func(s *Shape) { s.Mode, s.MaxTokens = Infer, 100_000 }},
		{"infer-fp32-plain", plain, func(s *Shape) { s.Mode, s.Precision = Infer, FP32 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := base.Shape
			c.f(&s)
			p, err := Predict(c.m, s)
			if err != nil {
				t.Fatal(err)
			}
			parts := append([]Part{}, p.Layer.Parts...)
			for _, term := range p.Terms {
				parts = append(parts, term.Parts...)
			}
			for _, pt := range parts {
				if want, ok := opsBytes(pt.Kind, pt.Ops); ok && pt.Bytes != want {
					t.Errorf("part %d %+v: %d B, its operands make %d", pt.Kind, pt.Ops, pt.Bytes, want)
				}
				if pt.Kind <= 0 || pt.Kind >= shareKinds {
					t.Errorf("part of kind %d, want a part kind", pt.Kind)
				}
			}
			for _, ph := range p.Phases {
				if ph.Moment.Kind == 0 {
					t.Errorf("%s peak has no moment", ph.Phase)
				}
				for _, sh := range ph.Shares {
					if sh.Kind <= 0 || sh.Kind >= numPartKinds || sh.Kind == shareKinds {
						t.Errorf("%s share %+v of no kind", ph.Phase, sh)
					}
				}
			}
		})
	}
}
