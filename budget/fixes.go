package budget

import (
	"fmt"
	"sort"
)

// Fix is one change to the run that lowers the predicted peak.
type Fix struct {
	Name   string `json:"name"`
	Change string `json:"change"` // the memscope budget flags that model it
	// Term is the term it shrinks; Cost what it costs in compute,
	// throughput or set-up, in words.
	Term TermKey `json:"term"`
	Cost string  `json:"cost"`
	// Shape is the run with the fix; NewPeak its predicted peak (allocated
	// bytes) in phase NewPhase, and Saves the old peak minus NewPeak.
	Shape    Shape  `json:"shape"`
	NewPeak  int64  `json:"new_peak"`
	NewPhase string `json:"new_phase"`
	Saves    int64  `json:"saves"`
	// CostRank orders fixes by what they cost: 0 nothing (a kernel or
	// library swap), 1 a little recompute, 2 set-up (another precision
	// scheme, more ranks), 3 substantial recompute, 4 throughput.
	CostRank int `json:"cost_rank"`
}

// DefaultRanks is the number of data-parallel ranks optimizer-state
// sharding is suggested over when the caller does not say.
const DefaultRanks = 8

// Suggest predicts the run with each applicable fix and returns those that
// lower the peak by at least 1%, ranked by cost and then by bytes saved:
// the cheapest fix that targets the term that is too big comes first, and
// the smaller micro-batch with gradient accumulation comes last, since it
// costs throughput and leaves that term as it was. ranks is the data-parallel
// ranks available for sharding the optimizer state (0: DefaultRanks).
func Suggest(p *Prediction, ranks int64) []Fix {
	if ranks <= 1 {
		ranks = DefaultRanks
	}
	s := p.Shape
	var cands []Fix
	add := func(f Fix, shape Shape) {
		f.Shape = shape
		cands = append(cands, f)
	}
	if s.Mode == Infer {
		if s.Precision == FP32 || s.Precision == BF16Autocast {
			t := s
			t.Precision = BF16
			add(Fix{Name: "bf16 weights (model.to(torch.bfloat16))", Change: "--precision bf16", Term: ModelStates,
				Cost: "none for serving; outputs differ slightly from fp32"}, t)
		}
		t := s
		t.MaxTokens = max(1, p.calc.s.MaxTokens/2)
		add(Fix{Name: "half the KV cache: fewer concurrent tokens", Change: fmt.Sprintf("--max-tokens %d", t.MaxTokens),
			Term: KVCache, Cost: "half the concurrent sequences or context", CostRank: 4}, t)
		return rank(p, cands)
	}
	if s.Loss != FusedLoss {
		t := s
		t.Loss = FusedLoss
		add(Fix{Name: "fused linear cross-entropy (Liger Kernel)", Change: "--loss fused", Term: LogitsLoss,
			Cost: "a kernel swap; no extra compute: the full logits never exist"}, t)
	}
	if s.Loss == PlainLoss {
		t := s
		t.Loss = ChunkedLoss
		add(Fix{Name: "chunked cross-entropy (8 chunks, upcast per chunk)", Change: "--loss chunked", Term: LogitsLoss,
			Cost: "a loss-function swap; no extra compute"}, t)
	}
	if s.Checkpointing == NoCheckpointing {
		t := s
		t.Checkpointing = SelectiveCheckpointing
		add(Fix{Name: "selective activation checkpointing (keep matmul and attention outputs)", Change: "--checkpointing selective",
			Term: Activations, Cost: "recomputes norms, activations and casts in backward: a few percent more compute", CostRank: 1}, t)
	}
	if s.Checkpointing != FullCheckpointing {
		t := s
		t.Checkpointing = FullCheckpointing
		add(Fix{Name: "full activation checkpointing (keep each layer's input)", Change: "--checkpointing full",
			Term: Activations, Cost: "one more forward per step: about a third more compute", CostRank: 3}, t)
	}
	if s.Optimizer == AdamW && s.OptimizerImpl != Fused {
		t := s
		t.OptimizerImpl = Fused
		add(Fix{Name: "fused AdamW (torch.optim.AdamW(..., fused=True))", Change: "--optimizer-impl fused",
			Term: ModelStates, Cost: "none: the step's temporaries go away"}, t)
	}
	switch s.Precision {
	case FP32:
		t := s
		t.Precision = BF16Autocast
		add(Fix{Name: "bf16 autocast (torch.autocast('cuda', dtype=torch.bfloat16))", Change: "--precision bf16-autocast",
			Term: Activations, Cost: "none in speed (faster matmuls); check the loss curve"}, t)
	case BF16Autocast:
		t := s
		t.Precision = BF16Mixed
		add(Fix{Name: "bf16 weights with an fp32 master copy (FSDP/DeepSpeed mixed precision)", Change: "--precision bf16-mixed",
			Term: Activations, Cost: "a master-weight optimizer set-up; no per-call weight casts", CostRank: 2}, t)
	}
	if s.ShardRanks <= 1 && (p.calc.moments() > 0 || p.calc.d.master > 0) {
		t := s
		t.ShardRanks = ranks
		add(Fix{Name: fmt.Sprintf("shard optimizer state over %d data-parallel ranks (ZeRO-1, FSDP)", ranks),
			Change: fmt.Sprintf("--shard-ranks %d", ranks), Term: ModelStates,
			Cost: fmt.Sprintf("needs %d ranks; a reduce-scatter and an all-gather per step instead of an all-reduce", ranks), CostRank: 2}, t)
	}
	if s.Batch > 1 {
		t := s
		t.Batch = s.Batch / 2
		acc := max(s.Accumulation, 1) * 2
		t.Accumulation = acc
		add(Fix{Name: fmt.Sprintf("micro-batch %d with %d-step gradient accumulation", t.Batch, acc),
			Change: fmt.Sprintf("--batch %d --accumulation %d", t.Batch, acc), Term: Activations,
			Cost: "smaller kernels, lower throughput; the same tokens per optimizer step", CostRank: 4}, t)
	}
	return rank(p, cands)
}

// rank predicts each candidate, keeps those that lower the peak by 1% or
// more and sorts them by cost, then by bytes saved.
func rank(p *Prediction, cands []Fix) []Fix {
	var out []Fix
	for _, f := range cands {
		np, err := Predict(p.Model, f.Shape)
		if err != nil {
			continue
		}
		f.NewPeak, f.NewPhase = np.PeakBytes(), np.Phases[np.Peak].Phase
		f.Saves = p.PeakBytes() - f.NewPeak
		f.Shape = np.Shape
		if f.Saves*100 >= p.PeakBytes() {
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].CostRank != out[j].CostRank {
			return out[i].CostRank < out[j].CostRank
		}
		return out[i].Saves > out[j].Saves
	})
	return out
}
