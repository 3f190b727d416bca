package budget

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Precision is how weights, gradients and activations are stored.
type Precision string

const (
	// FP32: everything in fp32.
	FP32 Precision = "fp32"
	// BF16Autocast: fp32 weights, gradients and optimizer state; matmuls
	// run in bf16 under torch.autocast, which casts each weight to bf16
	// (cached for the forward, saved for backward) and each fp32 input on
	// every call. The residual stream stays fp32 (the embedding is not
	// autocast and adding bf16 to fp32 gives fp32).
	BF16Autocast Precision = "bf16-autocast"
	// BF16Mixed: bf16 weights, gradients and activations, with an fp32
	// master copy of the weights inside the optimizer (Megatron, DeepSpeed).
	BF16Mixed Precision = "bf16-mixed"
	// BF16: pure bf16, the optimizer's moments too (model.to(bfloat16)).
	BF16 Precision = "bf16"
)

// Optimizer is the optimizer and so the state it keeps per parameter.
type Optimizer string

const (
	AdamW       Optimizer = "adamw"        // two moments
	SGD         Optimizer = "sgd"          // no state
	SGDMomentum Optimizer = "sgd-momentum" // one momentum buffer
)

// OptimizerImpl is how torch.optim runs the step, which decides its
// temporaries.
type OptimizerImpl string

const (
	// Foreach: torch's default on CUDA; AdamW makes one parameter-sized
	// temporary (the denominator, sqrt of the second moment) for the whole
	// parameter list at once.
	Foreach OptimizerImpl = "foreach"
	Fused   OptimizerImpl = "fused"   // one kernel; no temporaries
	ForLoop OptimizerImpl = "forloop" // one tensor at a time: temporaries of the largest tensor
)

// Checkpointing is activation checkpointing of the decoder layers.
type Checkpointing string

const (
	NoCheckpointing Checkpointing = "none"
	// FullCheckpointing saves only each layer's input and recomputes the
	// layer in backward (one extra forward: about a third more compute).
	FullCheckpointing Checkpointing = "full"
	// SelectiveCheckpointing saves the outputs of matmuls and attention and
	// recomputes the cheap element-wise ops, norms and casts (an op policy
	// like torchtitan's selective AC).
	SelectiveCheckpointing Checkpointing = "selective"
)

// Loss is how the cross-entropy over the vocabulary is computed.
type Loss string

const (
	// PlainLoss: logits = lm_head(h); F.cross_entropy(logits.float(), y):
	// the logits, an fp32 copy and the fp32 log-softmax exist at once, and
	// backward makes two more fp32 tensors of that size.
	PlainLoss Loss = "plain"
	// ChunkedLoss: the output projection and the loss run over LossChunks
	// slices of the tokens, each upcast separately (torchtune's
	// CEWithChunkedOutputLoss): no full fp32 copy, but the log-softmax of
	// every chunk is still saved.
	ChunkedLoss Loss = "chunked"
	// FusedLoss: a fused linear cross-entropy (Liger Kernel) that computes
	// the loss and its gradients chunk by chunk in the forward: only one
	// chunk of logits exists, and the gradients of the hidden states and of
	// the output projection are kept for backward.
	FusedLoss Loss = "fused"
)

// Mode is training or inference.
type Mode string

const (
	Train Mode = "train"
	Infer Mode = "infer" // forward only, no grad, KV cache for MaxTokens
)

// Shape is how a model is run: one micro-batch of one step.
type Shape struct {
	Batch int64 `json:"batch"` // sequences per micro-batch
	Seq   int64 `json:"seq"`   // tokens per sequence

	Precision     Precision     `json:"precision"`
	Optimizer     Optimizer     `json:"optimizer"`
	OptimizerImpl OptimizerImpl `json:"optimizer_impl"`
	Checkpointing Checkpointing `json:"checkpointing"`
	Loss          Loss          `json:"loss"`
	// LossChunks is the number of slices of a chunked loss (0: 8, as in
	// torchtune).
	LossChunks int64 `json:"loss_chunks,omitempty"`
	Mode       Mode  `json:"mode"`
	// MaxTokens is the number of tokens the KV cache holds in inference,
	// over all concurrent sequences (0: Batch × Seq).
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// Accumulation is the number of micro-batches per optimizer step (0 or
	// 1: none). With more, gradients live through the forward too.
	Accumulation int64 `json:"accumulation,omitempty"`
	// ShardRanks shards the optimizer state (moments and master weights)
	// over this many data-parallel ranks (ZeRO stage 1; 0 or 1: none).
	ShardRanks int64 `json:"shard_ranks,omitempty"`

	// Workspace is the memory the caching allocator gives to cuBLAS
	// workspaces (-1: the default, see DefaultWorkspace).
	Workspace int64 `json:"workspace"`
	// Outside is the memory the process uses outside the caching
	// allocator: CUDA context, kernels, libraries, NCCL (-1: the default,
	// DefaultOutside).
	Outside int64 `json:"outside"`
}

// DefaultShape is micro-batch 1 × 2048 tokens of bf16-autocast AdamW
// training with the defaults of torch: foreach optimizer, no checkpointing,
// plain loss, default overheads.
func DefaultShape() Shape {
	return Shape{Batch: 1, Seq: 2048, Precision: BF16Autocast, Optimizer: AdamW,
		OptimizerImpl: Foreach, Checkpointing: NoCheckpointing, Loss: PlainLoss, Mode: Train,
		Workspace: -1, Outside: -1}
}

// Tokens is the number of tokens in one micro-batch.
func (s Shape) Tokens() int64 { return s.Batch * s.Seq }

// Check reports what makes s unusable.
func (s Shape) Check() error {
	var errs []error
	if s.Batch <= 0 || s.Seq <= 0 {
		errs = append(errs, fmt.Errorf("micro-batch %d × sequence %d: want both > 0", s.Batch, s.Seq))
	}
	for _, e := range []struct {
		what, got string
		ok        []string
	}{
		{"precision", string(s.Precision), Precisions},
		{"optimizer", string(s.Optimizer), Optimizers},
		{"optimizer implementation", string(s.OptimizerImpl), OptimizerImpls},
		{"checkpointing", string(s.Checkpointing), Checkpointings},
		{"loss", string(s.Loss), Losses},
		{"mode", string(s.Mode), Modes},
	} {
		if !slices.Contains(e.ok, e.got) {
			errs = append(errs, fmt.Errorf("%s %q: want one of %s", e.what, e.got, strings.Join(e.ok, ", ")))
		}
	}
	for _, n := range []struct {
		what string
		v    int64
	}{{"max tokens", s.MaxTokens}, {"accumulation", s.Accumulation}, {"shard ranks", s.ShardRanks}, {"loss chunks", s.LossChunks}} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("%s %d: want 0 or more", n.what, n.v))
		}
	}
	return errors.Join(errs...)
}

// The accepted names of each option, for flags and messages.
var (
	Precisions     = []string{string(FP32), string(BF16Autocast), string(BF16Mixed), string(BF16)}
	Optimizers     = []string{string(AdamW), string(SGD), string(SGDMomentum)}
	OptimizerImpls = []string{string(Foreach), string(Fused), string(ForLoop)}
	Checkpointings = []string{string(NoCheckpointing), string(FullCheckpointing), string(SelectiveCheckpointing)}
	Losses         = []string{string(PlainLoss), string(ChunkedLoss), string(FusedLoss)}
	Modes          = []string{string(Train), string(Infer)}
)

// dtypes are the bytes per element of each kind of tensor under a precision.
type dtypes struct {
	weight, grad int64 // parameters and their gradients
	master       int64 // fp32 master copy in the optimizer; 0 when none
	state        int64 // optimizer moments and step temporaries
	act          int64 // matmul outputs and attention tensors
	resid        int64 // the residual stream, norms' outputs, embedding output
	cast         int64 // autocast's per-call copies of weights and fp32 inputs; 0 when none
}

func dtypesOf(p Precision) dtypes {
	switch p {
	case FP32:
		return dtypes{weight: 4, grad: 4, state: 4, act: 4, resid: 4}
	case BF16Autocast:
		return dtypes{weight: 4, grad: 4, state: 4, act: 2, resid: 4, cast: 2}
	case BF16Mixed:
		return dtypes{weight: 2, grad: 2, master: 4, state: 4, act: 2, resid: 2}
	case BF16:
		return dtypes{weight: 2, grad: 2, state: 2, act: 2, resid: 2}
	}
	panic("invariant violation: precision " + string(p) + " passed Check")
}
