package budget

import "sort"

// FixKind names a change to the run; package report words each kind (its
// name, the memscope budget flags that model it, and what it costs).
type FixKind int

const (
	FixBF16Weights        FixKind = iota + 1 // inference: bf16 weights (--precision bf16)
	FixHalfKVCache                           // inference: half the KV cache's tokens (--max-tokens)
	FixFusedLoss                             // fused linear cross-entropy (--loss fused)
	FixChunkedLoss                           // chunked cross-entropy (--loss chunked)
	FixSelectiveCkpt                         // selective activation checkpointing
	FixFullCkpt                              // full activation checkpointing
	FixFusedAdamW                            // AdamW with fused=True (--optimizer-impl fused)
	FixBF16Autocast                          // bf16 autocast over fp32 (--precision bf16-autocast)
	FixBF16Mixed                             // bf16 weights, fp32 master copy (--precision bf16-mixed)
	FixShardOptimizer                        // optimizer state over Shape.ShardRanks ranks (--shard-ranks)
	FixMicroBatch                            // half the micro-batch, twice the accumulation (--batch, --accumulation)
	FixBF16Moments                           // AdamW's two moments kept in bf16 (memscope advise; budget has no flag)
	FixReleaseLeak                           // drop the references that keep a leak's tensors (memscope advise)
	FixEightBitMoments                       // AdamW's two moments kept in 8 bits (bitsandbytes; memscope advise)
	FixStatelessOptimizer                    // an optimizer that keeps no state (SGD without momentum; memscope advise)
	FixOffloadOptimizer                      // the optimizer state and its step on the CPU (memscope advise)
)

// CostRank orders fix kinds by what they cost (see Fix.CostRank).
func (k FixKind) CostRank() int {
	switch k {
	case FixSelectiveCkpt:
		return 1
	case FixBF16Mixed, FixShardOptimizer, FixBF16Moments, FixEightBitMoments:
		return 2
	case FixFullCkpt:
		return 3
	case FixHalfKVCache, FixMicroBatch, FixOffloadOptimizer, FixStatelessOptimizer:
		return 4
	}
	return 0
}

// Fix is one change to the run that lowers the predicted peak.
type Fix struct {
	Kind FixKind `json:"-"`
	// Term is the term it shrinks most at the peak: the largest of the
	// old peak's bytes by term minus the new peak's.
	Term TermKey `json:"term"`
	// Shape is the run with the fix; NewPeak its predicted peak (allocated
	// bytes) in phase NewPhase, and Saves the old peak minus NewPeak.
	Shape    Shape  `json:"shape"`
	NewPeak  int64  `json:"new_peak"`
	NewPhase string `json:"new_phase"`
	Saves    int64  `json:"saves"`
	// CostRank orders fixes by what they cost: 0 nothing (a kernel or
	// library swap), 1 a little recompute, 2 set-up (another precision
	// scheme, more ranks), 3 substantial recompute, 4 throughput (or,
	// for another optimizer, convergence).
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
		f.Shape, f.CostRank = shape, f.Kind.CostRank()
		cands = append(cands, f)
	}
	if s.Mode == Infer {
		if s.Precision == FP32 || s.Precision == BF16Autocast {
			t := s
			t.Precision = BF16
			add(Fix{Kind: FixBF16Weights}, t)
		}
		t := s
		t.MaxTokens = max(1, p.calc.s.MaxTokens/2)
		add(Fix{Kind: FixHalfKVCache}, t)
		return rank(p, cands)
	}
	if s.Loss != FusedLoss {
		t := s
		t.Loss = FusedLoss
		add(Fix{Kind: FixFusedLoss}, t)
	}
	if s.Loss == PlainLoss {
		t := s
		t.Loss = ChunkedLoss
		add(Fix{Kind: FixChunkedLoss}, t)
	}
	if s.Checkpointing == NoCheckpointing {
		t := s
		t.Checkpointing = SelectiveCheckpointing
		add(Fix{Kind: FixSelectiveCkpt}, t)
	}
	if s.Checkpointing != FullCheckpointing {
		t := s
		t.Checkpointing = FullCheckpointing
		add(Fix{Kind: FixFullCkpt}, t)
	}
	if s.Optimizer == AdamW && s.OptimizerImpl != Fused {
		t := s
		t.OptimizerImpl = Fused
		add(Fix{Kind: FixFusedAdamW}, t)
	}
	switch s.Precision {
	case FP32:
		t := s
		t.Precision = BF16Autocast
		add(Fix{Kind: FixBF16Autocast}, t)
	case BF16Autocast:
		t := s
		t.Precision = BF16Mixed
		add(Fix{Kind: FixBF16Mixed}, t)
	}
	if s.ShardRanks <= 1 && (p.calc.moments() > 0 || p.calc.d.master > 0) {
		t := s
		t.ShardRanks = ranks
		add(Fix{Kind: FixShardOptimizer}, t)
	}
	if s.Batch > 1 {
		t := s
		t.Batch = s.Batch / 2
		acc := max(s.Accumulation, 1) * 2
		t.Accumulation = acc
		add(Fix{Kind: FixMicroBatch}, t)
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
		f.Term = savedMost(p, np)
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

// savedMost is the term that loses the most bytes at the peak from p to np.
func savedMost(p, np *Prediction) TermKey {
	before, after := p.Phases[p.Peak].ByTerm(), np.Phases[np.Peak].ByTerm()
	var saved [NumTerms]int64
	for k := range NumTerms {
		saved[k] = before[k] - after[k]
	}
	return largest(saved)
}
