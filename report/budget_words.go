package report

import (
	"fmt"

	"github.com/memscope/memscope/budget"
)

// partWord is how a kind of budget part reads: its name and the formula of
// its bytes, each from the part's operands. A nil formula writes none.
type partWord struct {
	name    func(o budget.Operands) string
	formula func(o budget.Operands) string
}

// named is a name that needs no operands.
func named(s string) func(budget.Operands) string { return func(budget.Operands) string { return s } }

// tokensOf is "16,384 tokens".
func tokensOf(n int64) string { return commas(n) + " tokens" }

// vocabFormula is the formula of a vocabulary-sized tensor.
func vocabFormula(o budget.Operands) string {
	return fmt.Sprintf("%s × %s vocab × %d B", tokensOf(o.Tokens), commas(o.Vocab), o.Elem)
}

// paramsFormula is params × bytes, over the ranks the state is sharded on.
func paramsFormula(o budget.Operands) string {
	return fmt.Sprintf("%s params × %d B%s", commas(o.Params), o.Elem, overRanks(o.Ranks))
}

func overRanks(ranks int64) string {
	if ranks <= 1 {
		return ""
	}
	return fmt.Sprintf(" / %d ranks", ranks)
}

// layerFormula is a per-token formula of one layer's saved tensor.
func layerFormula(f func(o budget.Operands) string) func(budget.Operands) string {
	return func(o budget.Operands) string { return tokensOf(o.Tokens) + " × " + f(o) }
}

// tokensHiddenFormula is tokens × hidden × bytes.
func tokensHiddenFormula(o budget.Operands) string {
	return fmt.Sprintf("%s × %d × %d B", tokensOf(o.Tokens), o.Hidden, o.Elem)
}

func matmulCopiesFormula(o budget.Operands) string {
	return fmt.Sprintf("%s matmul params × %d B", commas(o.Params), o.Elem)
}

// stepTempsText is what the optimizer step's temporaries are.
func stepTempsText(t budget.StepTemps) string {
	what := ""
	if t&budget.TempSqrtMoments != 0 {
		what = "sqrt(exp_avg_sq)"
	}
	if t&budget.TempFP32Grads != 0 {
		if what != "" {
			what += " and "
		}
		what += "fp32 gradients"
	}
	return what
}

// dtypeName is a dtype by its bytes per element.
func dtypeName(bytes int64) string {
	switch bytes {
	case 2:
		return "bf16"
	case 4:
		return "fp32"
	}
	return fmt.Sprintf("%d B", bytes)
}

// partWords words every kind of part and share.
var partWords = [budget.NumPartKinds]partWord{
	budget.PartWeights:          {func(o budget.Operands) string { return "weights (" + dtypeName(o.Elem) + ")" }, paramsFormula},
	budget.PartGrads:            {func(o budget.Operands) string { return "gradients (" + dtypeName(o.Elem) + ")" }, paramsFormula},
	budget.PartMaster:           {named("fp32 master weights"), paramsFormula},
	budget.PartAdamWMoments:     {named("AdamW moments (exp_avg, exp_avg_sq)"), optimizerStateFormula},
	budget.PartMomentumBuffer:   {named("SGD momentum buffer"), optimizerStateFormula},
	budget.PartNoOptimizerState: {named("none (SGD keeps no state)"), optimizerStateFormula},
	budget.PartStepInPlace: {named("optimizer step temporaries"), func(o budget.Operands) string {
		return "none: " + string(o.Optimizer) + " updates in place"
	}},
	budget.PartStepFused: {named("optimizer step temporaries"), func(budget.Operands) string {
		return "none: the fused kernel updates in place"
	}},
	budget.PartStepLargest: {named("optimizer step temporaries"), func(o budget.Operands) string {
		return fmt.Sprintf("%s of the largest tensor: %s params × %d B", stepTempsText(o.Temps), commas(o.Params), o.Elem)
	}},
	budget.PartStepForeach: {named("optimizer step temporaries"), func(o budget.Operands) string {
		return fmt.Sprintf("%s of every parameter at once (foreach): %s params × %d B%s", stepTempsText(o.Temps), commas(o.Params), o.Elem, overRanks(o.Ranks))
	}},
	budget.PartWorkspaces: {named("cuBLAS workspaces (in the allocator)"), func(o budget.Operands) string {
		threads := "2 threads (forward, autograd)"
		if o.Count != 2 {
			threads = nouns(int(o.Count), "thread")
		}
		return threads + "; set with --workspace"
	}},
	budget.PartOutside: {named("CUDA context, kernels, libraries (outside the allocator)"), func(budget.Operands) string {
		return "measured 766.8 MiB on H200, torch 2.11, no NCCL; set with --overhead"
	}},

	budget.PartTokenIDs: {named("token ids (int64)"), func(o budget.Operands) string { return tokensOf(o.Tokens) + " × 8 B" }},
	budget.PartInferResiduals: {named("embedding output, layer input, post-attention residual, MLP input"), func(o budget.Operands) string {
		return fmt.Sprintf("%d × %s × %d × %d B", o.Count, tokensOf(o.Tokens), o.Hidden, o.Elem)
	}},
	budget.PartInferMLP: {func(o budget.Operands) string {
		if o.Count == 2 { // a plain MLP: up, activation, down
			return "MLP intermediates: up output, activation"
		}
		return "MLP intermediates: activation, up output, product"
	}, func(o budget.Operands) string {
		return fmt.Sprintf("%d × %s × %d × %d B", o.Count, tokensOf(o.Tokens), o.Intermediate, o.Elem)
	}},
	budget.PartWeightCopiesCache: {named("bf16 weight copies (autocast cache)"), matmulCopiesFormula},
	budget.PartLayers: {func(o budget.Operands) string { return fmt.Sprintf("%d layers, no checkpointing", o.Layers) }, func(o budget.Operands) string {
		return fmt.Sprintf("%d layers × %s B (%s × %s B per token; per-layer table)", o.Layers, commas(o.LayerBytes), tokensOf(o.Tokens), commas(o.PerToken))
	}},
	budget.PartLayersFullCkpt: {func(o budget.Operands) string { return fmt.Sprintf("%d layers, full checkpointing", o.Layers) }, func(o budget.Operands) string {
		return fmt.Sprintf("%d layers × (%s × %d hidden × %d B): each layer's input", o.Layers, tokensOf(o.Tokens), o.Hidden, o.Elem)
	}},
	budget.PartLayersSelectiveCkpt: {func(o budget.Operands) string { return fmt.Sprintf("%d layers, selective checkpointing", o.Layers) }, func(o budget.Operands) string {
		return fmt.Sprintf("%d layers × %s (input, matmul and attention outputs)", o.Layers, commas(o.LayerBytes))
	}},
	budget.PartEmbedOut: {named("embedding output (first layer's input)"), tokensHiddenFormula},
	budget.PartRope: {named("rotary cos and sin"), func(o budget.Operands) string {
		return fmt.Sprintf("2 × %d positions × %d dim × %d B", o.Positions, o.HeadDim, o.Elem)
	}},
	budget.PartFinalNorm: {named("final norm: normalized input and 1/rms"), func(o budget.Operands) string {
		if o.Elem == 2 { // bf16 residuals: the fp32 input norm computes on, and the bf16 one
			return tokensOf(o.Tokens) + " × (hidden × 6 B + 4 B)"
		}
		return tokensOf(o.Tokens) + " × (hidden × 4 B + 4 B)"
	}},
	budget.PartFinalHidden:  {named("final hidden states"), tokensHiddenFormula},
	budget.PartLMInputCast:  {named("bf16 copy of lm_head's input (autocast)"), tokensHiddenFormula},
	budget.PartWeightCopies: {named("bf16 weight copies (autocast)"), matmulCopiesFormula},
	budget.PartBackwardGrads: {named("gradients inside one layer's backward"), func(o budget.Operands) string {
		return fmt.Sprintf("%s × %d × intermediate %d × %d B + one weight gradient", tokensOf(o.Tokens), o.Count, o.Intermediate, o.Elem)
	}},

	budget.PartLogits:         {func(o budget.Operands) string { return "logits (" + dtypeName(o.Elem) + ")" }, vocabFormula},
	budget.PartLogSoftmax:     {named("log-softmax output, fp32 (saved)"), vocabFormula},
	budget.PartLogitsFP32:     {named("fp32 copy of the logits (.float())"), vocabFormula},
	budget.PartLogSoftmaxGrad: {named("gradient of the log-softmax output"), vocabFormula},
	budget.PartLogitsGradFP32: {named("gradient of the logits, fp32"), vocabFormula},
	budget.PartLogitsGrad:     {func(o budget.Operands) string { return "gradient of the logits (" + dtypeName(o.Elem) + ")" }, vocabFormula},
	budget.PartChunkLogSoftmax: {func(o budget.Operands) string {
		return fmt.Sprintf("log-softmax output of all %d chunks, fp32 (saved)", o.Count)
	}, vocabFormula},
	budget.PartChunkLogits:     {func(o budget.Operands) string { return "logits of all chunks (" + dtypeName(o.Elem) + ")" }, vocabFormula},
	budget.PartChunkFP32:       {named("fp32 copy of one chunk"), vocabFormula},
	budget.PartChunkGrads:      {named("gradients of one chunk's log-softmax and logits, fp32"), vocabFormula},
	budget.PartChunkLogitsGrad: {named("gradient of one chunk's logits"), vocabFormula},
	budget.PartFusedChunkLogits: {func(o budget.Operands) string {
		return fmt.Sprintf("logits of one %s-token chunk (%s)", commas(o.Tokens), dtypeName(o.Elem))
	}, vocabFormula},
	budget.PartFusedHiddenGrad: {named("gradient of the hidden states, computed in the forward"), func(o budget.Operands) string {
		return fmt.Sprintf("%s × %d hidden × %d B", tokensOf(o.Tokens), o.Hidden, o.Elem)
	}},
	budget.PartFusedHeadGrad: {named("gradient of the output projection, computed in the forward"), func(o budget.Operands) string {
		return fmt.Sprintf("%s vocab × %d hidden × %d B", commas(o.Vocab), o.Hidden, o.Elem)
	}},
	budget.PartLastLogits:     {named("logits of the last position of each sequence"), sequencesFormula},
	budget.PartLastLogitsFP32: {named("their fp32 copy"), sequencesFormula},

	budget.PartNoKVCache: {named("none in training (use_cache off)"), nil},
	budget.PartKVCache: {named("keys and values of every layer"), func(o budget.Operands) string {
		return fmt.Sprintf("%s × 2 × %d layers × %d KV heads × %d dim × %d B = %s × %s B",
			tokensOf(o.Tokens), o.Layers, o.KVHeads, o.HeadDim, o.Elem, tokensOf(o.Tokens), commas(o.PerToken))
	}},

	budget.PartLayerResidual: {named("residual stream: attention output and layer output"), layerFormula(func(o budget.Operands) string {
		return fmt.Sprintf("2 × %d hidden × %d B", o.Hidden, o.Elem)
	})},
	budget.PartLayerNormsFP32: {named("2 RMSNorms: normalized input (fp32) and 1/rms"), layerFormula(func(o budget.Operands) string {
		return fmt.Sprintf("2 × (%d × 4 B + 4 B)", o.Hidden)
	})},
	budget.PartLayerNormsBF16: {named("2 RMSNorms: fp32 upcast, 1/rms, normalized bf16"), layerFormula(func(o budget.Operands) string {
		return fmt.Sprintf("2 × (%d × (4 + 2) B + 4 B)", o.Hidden)
	})},
	budget.PartLayerNormCasts: {named("bf16 copies of the norm outputs, one per projection (autocast)"), layerFormula(func(o budget.Operands) string {
		return fmt.Sprintf("%d projections × %d × %d B", o.Count, o.Hidden, o.Elem)
	})},
	budget.PartLayerNormOutputs: {named("norm outputs (the projections' input)"), layerFormula(func(o budget.Operands) string {
		return fmt.Sprintf("2 × %d × %d B", o.Hidden, o.Elem)
	})},
	budget.PartLayerQKVRepeated: {named("q, k, v (k and v repeated to every head)"), layerFormula(func(o budget.Operands) string {
		return fmt.Sprintf("3 × %d × %d B", o.QWidth, o.Elem)
	})},
	budget.PartLayerQKV: {named("q, k, v after rotary embedding, saved by SDPA"), layerFormula(func(o budget.Operands) string {
		return fmt.Sprintf("(%d + 2 × %d) × %d B", o.QWidth, o.KVWidth, o.Elem)
	})},
	budget.PartLayerAttnOut: {named("attention output (o_proj's input)"), layerFormula(func(o budget.Operands) string {
		return fmt.Sprintf("%d × %d B", o.QWidth, o.Elem)
	})},
	budget.PartLayerProbs: {named("attention probabilities: fp32 softmax and its copy"), layerFormula(func(o budget.Operands) string {
		return fmt.Sprintf("%d heads × %d keys × %d B", o.Heads, o.Positions, o.Elem)
	})},
	budget.PartLayerLogsumexp: {named("SDPA logsumexp (fp32)"), layerFormula(func(o budget.Operands) string {
		return fmt.Sprintf("%d heads × 4 B", o.Heads)
	})},
	budget.PartLayerGatedMLP: {named("MLP: gate output, activation, up output, product"), layerFormula(func(o budget.Operands) string {
		return fmt.Sprintf("4 × %d × %d B", o.Intermediate, o.Elem)
	})},
	budget.PartLayerPlainMLP: {named("MLP: up output, activation"), layerFormula(func(o budget.Operands) string {
		return fmt.Sprintf("2 × %d × %d B", o.Intermediate, o.Elem)
	})},

	budget.ShareLayersSaved: {func(o budget.Operands) string {
		return fmt.Sprintf("saved activations of %d layers", o.Layers)
	}, nil},
	budget.SharePositionIDs:             {named("position ids (a checkpointed layer's argument)"), nil},
	budget.ShareFinalHiddenHead:         {named("final hidden states (lm_head's input)"), nil},
	budget.ShareFinalHiddenHeld:         {named("final hidden states (held until the loss returns)"), nil},
	budget.ShareLastLayerActs:           {named("the last layer's activations (recomputed in backward)"), nil},
	budget.ShareLayerCopiesCache:        {named("bf16 weight copies of the layers (autocast cache)"), nil},
	budget.ShareThisLayerSaved:          {named("this layer's saved activations"), nil},
	budget.ShareCopiesBelow:             {named("bf16 weight copies of this layer and those below (autocast)"), nil},
	budget.ShareThisLayerRecomputed:     {named("this layer's activations, recomputed"), nil},
	budget.ShareThisLayerCopyRecomputed: {named("bf16 weight copies of this layer, recomputed (autocast)"), nil},
	budget.ShareLayerBackwardGrads:      {named("gradients inside the layer's backward (MLP)"), nil},
	budget.ShareEmbeddingGrad:           {named("embedding's dense gradient, before it is added to lm_head's"), nil},
	budget.ShareSavedCopies:             {named("bf16 weight copies saved for backward (autocast)"), nil},
	budget.ShareSavedHeadCopy:           {named("bf16 copy of lm_head's weight saved for backward (autocast)"), nil},
	budget.ShareGradsSoFar:              {named("gradients made so far"), nil},
	budget.ShareEmbedHeld:               {named("embedding output (held until the forward returns)"), nil},
	budget.ShareRopePositions:           {named("rotary cos and sin, position ids"), nil},
	budget.ShareInferResiduals:          {named("layer input, post-attention residual, MLP input"), nil},
	budget.ShareInferMLP: {func(o budget.Operands) string {
		return fmt.Sprintf("MLP intermediates (%d × intermediate)", o.Count)
	}, nil},
}

func optimizerStateFormula(o budget.Operands) string {
	return fmt.Sprintf("%s params × %d × %d B%s", commas(o.Params), o.Count, o.Elem, overRanks(o.Ranks))
}

func sequencesFormula(o budget.Operands) string {
	return fmt.Sprintf("%d sequences × %s vocab × %d B", o.Sequences, commas(o.Vocab), o.Elem)
}

// partName is the name of a part or share of kind k.
func partName(k budget.PartKind, o budget.Operands) string {
	if k <= 0 || int(k) >= len(partWords) || partWords[k].name == nil {
		return fmt.Sprintf("part of kind %d", int(k))
	}
	return partWords[k].name(o)
}

// partFormula is the arithmetic of a part's bytes, with its numbers; ""
// for a kind without one.
func partFormula(k budget.PartKind, o budget.Operands) string {
	if k <= 0 || int(k) >= len(partWords) || partWords[k].formula == nil {
		return ""
	}
	return partWords[k].formula(o)
}

// budgetMomentText says when in its phase a peak falls.
func budgetMomentText(m budget.Moment) string {
	switch m.Kind {
	case budget.MomentForwardEnd:
		return "end of forward: the loss computed, every layer's activations saved"
	case budget.MomentLastLayer:
		return "inside the last layer: its activations exist until it returns"
	case budget.MomentBackwardStart:
		return "start of backward: the loss gradients on top of everything saved"
	case budget.MomentLMHeadBackward:
		return "lm_head's backward: the logits' gradient, lm_head's weight gradient"
	case budget.MomentLayerBackward:
		return fmt.Sprintf("backward of layer %d: layers below still saved, gradients above made", m.Layer)
	case budget.MomentBackwardEnd:
		return "end of backward: every gradient made"
	case budget.MomentOptimizerStep:
		return "inside optimizer.step(): every gradient and the step's temporaries"
	case budget.MomentPrefillMLP:
		return "prefill, inside the last layer's MLP, with the KV cache filled"
	case budget.MomentPrefillOutput:
		return "prefill, the output projection of the last positions"
	}
	return fmt.Sprintf("moment of kind %d", int(m.Kind))
}

// ruleText is the rule of thumb's arithmetic: "34 × s 4096 × b 4 × h 2048",
// with " + 5 × a 32 × s² × b" when attention saves its scores.
func ruleText(r budget.RuleOperands) string {
	s := fmt.Sprintf("34 × s %d × b %d × h %d", r.Seq, r.Batch, r.Hidden)
	if r.Heads > 0 {
		s += fmt.Sprintf(" + 5 × a %d × s² × b", r.Heads)
	}
	return s
}
