package budget

// PartKind says which tensors a Part or a Share holds; package report
// names each kind and writes its formula from the Operands. The kinds up to
// PartLayerPlainMLP are the terms' parts (and are also shares); the Share
// kinds after them appear only in a phase peak's shares.
type PartKind int

const (
	// Model states. Weights, gradients and the master copy are
	// Params × Elem, the optimizer state Params × Count × Elem, the last
	// two divided over Ranks.
	PartWeights          PartKind = iota + 1
	PartGrads                     // gradients, Params × Elem
	PartMaster                    // fp32 master weights, Params × Elem / Ranks
	PartAdamWMoments              // exp_avg and exp_avg_sq: Params × Count × Elem / Ranks
	PartMomentumBuffer            // SGD's momentum buffer: Params × Count × Elem / Ranks
	PartNoOptimizerState          // SGD keeps none: Params × Count (0) × Elem
	PartStepInPlace               // no step temporaries: Optimizer updates in place
	PartStepFused                 // no step temporaries: the fused kernel updates in place
	PartStepLargest               // the for-loop step's Temps for the largest tensor: Params × Elem
	PartStepForeach               // the foreach step's Temps for every parameter: Params × Elem / Ranks

	// Overhead.
	PartWorkspaces // cuBLAS workspaces of Count threads
	PartOutside    // CUDA context, kernels and libraries outside the allocator

	// Activations.
	PartTokenIDs            // Tokens × 8 B
	PartInferResiduals      // inference: Count (4) × Tokens × Hidden × Elem
	PartInferMLP            // inference: Count × Tokens × Intermediate × Elem
	PartWeightCopiesCache   // autocast's cached weight copies: Params (matmul) × Elem
	PartLayers              // Layers × LayerBytes, LayerBytes = Tokens × PerToken
	PartLayersFullCkpt      // Layers × (Tokens × Hidden × Elem): each layer's input
	PartLayersSelectiveCkpt // Layers × LayerBytes
	PartEmbedOut            // Tokens × Hidden × Elem
	PartRope                // 2 × Positions × HeadDim × Elem
	PartFinalNorm           // Tokens × (hidden × 4 B + 4 B), or with bf16 residuals (Elem 2) Tokens × (hidden × 6 B + 4 B): the fp32 normalized input beside the bf16 one
	PartFinalHidden         // Tokens × Hidden × Elem
	PartLMInputCast         // Tokens × Hidden × Elem
	PartWeightCopies        // autocast's weight copies: Params (matmul) × Elem
	PartBackwardGrads       // Tokens × Count × Intermediate × Elem + one weight gradient

	// Logits and loss: Tokens × Vocab × Elem unless said.
	PartLogits
	PartLogSoftmax
	PartLogitsFP32
	PartLogSoftmaxGrad
	PartLogitsGradFP32
	PartLogitsGrad
	PartChunkLogSoftmax // of all Count chunks
	PartChunkLogits
	PartChunkFP32
	PartChunkGrads
	PartChunkLogitsGrad
	PartFusedChunkLogits // one chunk of Tokens
	PartFusedHiddenGrad  // Tokens × Hidden × Elem
	PartFusedHeadGrad    // Vocab × Hidden × Elem
	PartLastLogits       // Sequences × Vocab × Elem
	PartLastLogitsFP32   // Sequences × Vocab × Elem (4)

	// KV cache.
	PartNoKVCache // none in training
	PartKVCache   // Tokens × 2 × Layers × KVHeads × HeadDim × Elem = Tokens × PerToken

	// One layer's saved activations (Layer.Parts): Tokens × what each says.
	PartLayerResidual    // 2 × Hidden × Elem
	PartLayerNormsFP32   // 2 × (Hidden × 4 B + 4 B)
	PartLayerNormsBF16   // 2 × (Hidden × (4 + 2) B + 4 B)
	PartLayerNormCasts   // Count projections × Hidden × Elem
	PartLayerNormOutputs // 2 × Hidden × Elem
	PartLayerQKVRepeated // 3 × QWidth × Elem
	PartLayerQKV         // (QWidth + 2 × KVWidth) × Elem
	PartLayerAttnOut     // QWidth × Elem
	PartLayerProbs       // Heads × Positions × Elem
	PartLayerLogsumexp   // Heads × 4 B
	PartLayerGatedMLP    // 4 × Intermediate × Elem
	PartLayerPlainMLP    // 2 × Intermediate × Elem
	shareKinds           // the kinds below are shares only

	ShareLayersSaved             // the saved activations of Layers layers
	SharePositionIDs             // a checkpointed layer's position ids
	ShareFinalHiddenHead         // final hidden states, saved as lm_head's input
	ShareFinalHiddenHeld         // final hidden states, held until the loss returns
	ShareLastLayerActs           // the last layer's activations, recomputed in backward
	ShareLayerCopiesCache        // the layers' weight copies in autocast's cache
	ShareThisLayerSaved          // the saved activations of the layer in backward
	ShareCopiesBelow             // weight copies of the layer in backward and those below
	ShareThisLayerRecomputed     // the layer's activations, recomputed
	ShareThisLayerCopyRecomputed // the layer's weight copies, recomputed
	ShareLayerBackwardGrads      // the gradients inside the layer's backward
	ShareEmbeddingGrad           // a tied embedding's dense gradient
	ShareSavedCopies             // the weight copies saved for backward
	ShareSavedHeadCopy           // lm_head's weight copy saved for backward
	ShareGradsSoFar              // the gradients backward has made
	ShareEmbedHeld               // inference: the embedding output, held
	ShareRopePositions           // inference: rotary tables and position ids
	ShareInferResiduals          // inference: layer input, residual, MLP input
	ShareInferMLP                // inference: Count intermediate-width tensors
	numPartKinds
)

// NumPartKinds bounds the kinds, for tables indexed by kind.
const NumPartKinds = int(numPartKinds)

// Operands are the numbers a part's formula multiplies. Each kind sets
// those its formula names (see PartKind) and leaves the rest zero.
type Operands struct {
	Params       int64 // parameters
	Tokens       int64
	Sequences    int64
	Positions    int64 // sequence positions (rotary tables; the keys of attention)
	Vocab        int64
	Hidden       int64
	Intermediate int64
	QWidth       int64 // query width: heads × head dimension
	KVWidth      int64 // key/value width: KV heads × head dimension
	Heads        int64
	KVHeads      int64
	HeadDim      int64
	Layers       int64
	Count        int64 // how many: moments, tensors, projections, chunks, threads
	Elem         int64 // bytes per element
	Ranks        int64 // the optimizer state is sharded over (≤ 1: not sharded)
	LayerBytes   int64 // one layer's bytes
	PerToken     int64 // bytes per token
	Temps        StepTemps
	Optimizer    Optimizer
}

// StepTemps says what a foreach or for-loop optimizer step allocates.
type StepTemps int

const (
	TempSqrtMoments StepTemps = 1 << iota // AdamW's sqrt(exp_avg_sq)
	TempFP32Grads                         // the gradients upcast for the fp32 master update
)

// MomentKind says when in a phase its peak falls; package report words it.
type MomentKind int

const (
	MomentForwardEnd     MomentKind = iota + 1 // the loss computed, every layer's activations saved
	MomentLastLayer                            // inside the last layer under checkpointing
	MomentBackwardStart                        // the loss gradients on top of everything saved
	MomentLMHeadBackward                       // lm_head's backward
	MomentLayerBackward                        // the backward of layer Moment.Layer
	MomentBackwardEnd                          // every gradient made
	MomentOptimizerStep                        // inside optimizer.step()
	MomentPrefillMLP                           // inference: inside the last layer's MLP
	MomentPrefillOutput                        // inference: the output projection of the last positions
)

// Moment is when a phase peaks: a kind, and the layer for
// MomentLayerBackward.
type Moment struct {
	Kind  MomentKind
	Layer int64
}

// RuleOperands are the numbers of Korthikanti et al.'s rule of thumb for a
// layer's 16-bit activations: 34·s·b·h, plus 5·a·s²·b when attention saves
// its scores (Heads > 0; 0 leaves the term out).
type RuleOperands struct {
	Seq, Batch, Hidden int64
	Heads              int64
}
