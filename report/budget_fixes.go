package report

import (
	"fmt"

	"github.com/memscope/memscope/budget"
)

// budgetFixWords are a fix in words: its name, the memscope budget flags
// that model it, and what it costs in compute, throughput or set-up.
type budgetFixWords struct{ name, change, cost string }

// budgetFixText words fix f, taking its numbers from the run with the fix.
func budgetFixText(f budget.Fix) budgetFixWords {
	s := f.Shape
	switch f.Kind {
	case budget.FixBF16Weights:
		return budgetFixWords{"bf16 weights (model.to(torch.bfloat16))", "--precision bf16",
			"none for serving; outputs differ slightly from fp32"}
	case budget.FixHalfKVCache:
		return budgetFixWords{"half the KV cache: fewer concurrent tokens", fmt.Sprintf("--max-tokens %d", s.MaxTokens),
			"half the concurrent sequences or context"}
	case budget.FixFusedLoss:
		return budgetFixWords{"fused linear cross-entropy (Liger Kernel)", "--loss fused",
			"a kernel swap; no extra compute: the full logits never exist"}
	case budget.FixChunkedLoss:
		chunks := s.LossChunks
		if chunks == 0 {
			chunks = 8
		}
		return budgetFixWords{fmt.Sprintf("chunked cross-entropy (%d chunks, upcast per chunk)", chunks), "--loss chunked",
			"a loss-function swap; no extra compute"}
	case budget.FixSelectiveCkpt:
		return budgetFixWords{"selective activation checkpointing (keep matmul and attention outputs)", "--checkpointing selective",
			"recomputes norms, activations and casts in backward: a few percent more compute"}
	case budget.FixFullCkpt:
		return budgetFixWords{"full activation checkpointing (keep each layer's input)", "--checkpointing full",
			"one more forward per step: about a third more compute"}
	case budget.FixFusedAdamW:
		return budgetFixWords{"fused AdamW (torch.optim.AdamW(..., fused=True))", "--optimizer-impl fused",
			"none: the step's temporaries go away"}
	case budget.FixBF16Autocast:
		return budgetFixWords{"bf16 autocast (torch.autocast('cuda', dtype=torch.bfloat16))", "--precision bf16-autocast",
			"none in speed (faster matmuls); check the loss curve"}
	case budget.FixBF16Mixed:
		return budgetFixWords{"bf16 weights with an fp32 master copy (FSDP/DeepSpeed mixed precision)", "--precision bf16-mixed",
			"a master-weight optimizer set-up; no per-call weight casts"}
	case budget.FixShardOptimizer:
		return budgetFixWords{fmt.Sprintf("shard optimizer state over %d data-parallel ranks (ZeRO-1, FSDP)", s.ShardRanks),
			fmt.Sprintf("--shard-ranks %d", s.ShardRanks),
			fmt.Sprintf("needs %d ranks; a reduce-scatter and an all-gather per step instead of an all-reduce", s.ShardRanks)}
	case budget.FixMicroBatch:
		const cost = "smaller kernels, lower throughput; the same tokens per optimizer step"
		if s.Batch == 0 {
			// advise: the run's batch is not in the snapshot.
			return budgetFixWords{"half the micro-batch with twice the gradient accumulation", "--batch B/2 --accumulation 2A", cost}
		}
		return budgetFixWords{fmt.Sprintf("micro-batch %d with %d-step gradient accumulation", s.Batch, s.Accumulation),
			fmt.Sprintf("--batch %d --accumulation %d", s.Batch, s.Accumulation), cost}
	case budget.FixBF16Moments:
		return budgetFixWords{"AdamW with its two moments in bf16 (exp_avg, exp_avg_sq)", "",
			"no extra compute; small updates lose precision: check the loss curve"}
	case budget.FixEightBitMoments:
		return budgetFixWords{"AdamW with its two moments in 8 bits (bitsandbytes.optim.AdamW8bit)", "",
			"a library swap; block-wise quantised moments: check the loss curve"}
	case budget.FixStatelessOptimizer:
		return budgetFixWords{"an optimizer that keeps no state (SGD without momentum)", "",
			"another optimizer: convergence changes; retune the learning rate"}
	case budget.FixOffloadOptimizer:
		return budgetFixWords{"optimizer state and step on the CPU (DeepSpeed offload_optimizer, torchao CPUOffloadOptimizer)", "",
			"the step runs on the CPU, with the gradients and updates over PCIe each step: slower steps"}
	case budget.FixReleaseLeak:
		return budgetFixWords{"drop the references that keep the leaked tensors (see memscope leaks)", "",
			"none: a bug fix (loss.item() for logging, clear the hook's store)"}
	}
	k := fmt.Sprintf("fix of kind %d", int(f.Kind))
	return budgetFixWords{k, "", ""}
}

// BudgetFixJSON is one fix in the budget document: the fix in words, the
// term it shrinks, the run with it and its predicted peak.
type BudgetFixJSON struct {
	Name     string         `json:"name"`
	Change   string         `json:"change"` // the memscope budget flags that model it
	Term     budget.TermKey `json:"term"`
	Cost     string         `json:"cost"`
	Shape    budget.Shape   `json:"shape"`
	NewPeak  int64          `json:"new_peak"`
	NewPhase string         `json:"new_phase"`
	Saves    int64          `json:"saves"`
	CostRank int            `json:"cost_rank"`
}

// budgetFixesJSON is the fixes of the document (null for none, as before).
func budgetFixesJSON(fs []budget.Fix) []BudgetFixJSON {
	if fs == nil {
		return nil
	}
	out := make([]BudgetFixJSON, len(fs))
	for i, f := range fs {
		w := budgetFixText(f)
		out[i] = BudgetFixJSON{Name: w.name, Change: w.change, Term: f.Term, Cost: w.cost, Shape: f.Shape,
			NewPeak: f.NewPeak, NewPhase: f.NewPhase, Saves: f.Saves, CostRank: f.CostRank}
	}
	return out
}
