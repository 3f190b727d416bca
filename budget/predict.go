package budget

import (
	"errors"
	"strconv"
)

// TermKey names one of the five terms of the budget.
type TermKey int

const (
	ModelStates TermKey = iota // weights, gradients, master copy, optimizer moments and step temporaries
	Activations                // tensors autograd saves for backward, and the forward's working copies
	LogitsLoss                 // vocabulary-sized logits, their fp32 copies and gradients
	KVCache                    // keys and values kept for generation
	Overhead                   // cuBLAS workspaces in the allocator; CUDA context outside it
	NumTerms
)

var termNames = [NumTerms]string{"model states", "saved activations", "logits and loss", "KV cache", "overhead"}

func (t TermKey) String() string {
	if t < 0 || t >= NumTerms {
		return "term " + strconv.Itoa(int(t))
	}
	return termNames[t]
}

// MarshalText writes the term's name in JSON.
func (t TermKey) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// Part is one line of a term: a kind of tensor, its bytes and the numbers
// they were computed from; package report names the kind and writes the
// formula from the operands.
type Part struct {
	Kind  PartKind
	Ops   Operands
	Bytes int64
	// PerParam is the bytes per parameter for model states (0 otherwise).
	PerParam int64
	// Live says when the tensors exist; package report words it.
	Live Lifetime
}

// Lifetime is when a part's tensors exist in the step.
type Lifetime int

const (
	LiveWholeStep           Lifetime = iota + 1 // from before the forward to after the optimizer
	LiveAccumulated                             // the whole step: gradients accumulated over micro-batches
	LiveForward                                 // during the forward only
	LiveForwardToBackward                       // saved in the forward, freed in the backward
	LiveCopiesRecomputed                        // autocast's weight copies under checkpointing: the forward, lm_head's to the backward, a layer's again while it is recomputed
	LiveBackwardStart                           // at the start of the backward (the loss gradients)
	LiveBackward                                // during the backward
	LiveBackwardToOptimizer                     // made in the backward, freed after the optimizer
	LiveOptimizerStep                           // inside optimizer.step()
	LiveOutside                                 // outside the caching allocator
)

// Term is one of the five terms: its parts and its size.
type Term struct {
	Key TermKey `json:"term"`
	// Bytes is the most the term holds at any predicted phase peak (its
	// parts are not all live at once, so this is not their sum). For
	// Overhead it includes the memory outside the allocator.
	Bytes int64  `json:"bytes"`
	Parts []Part `json:"parts"`
}

// Share is what one term holds at one phase's peak, in the category
// memscope's attribution should find it under (parameter, optimizer state,
// gradient, activation, input, temporary, kv cache, unknown).
// Kind and Ops say which tensors, as for a Part.
type Share struct {
	Term     TermKey
	Kind     PartKind
	Ops      Operands
	Bytes    int64
	Category string
}

// PhasePeak is the predicted peak of allocated bytes (max_memory_allocated)
// in one phase of the step and what is live then.
type PhasePeak struct {
	Phase  string // forward, backward, optimizer
	Bytes  int64
	Moment Moment // when in the phase the peak falls
	Shares []Share
}

// ByTerm sums the peak's shares by term.
func (p PhasePeak) ByTerm() [NumTerms]int64 {
	var t [NumTerms]int64
	for _, s := range p.Shares {
		t[s.Term] += s.Bytes
	}
	return t
}

// ByCategory sums the peak's shares by allocator category.
func (p PhasePeak) ByCategory() map[string]int64 {
	c := map[string]int64{}
	for _, s := range p.Shares {
		c[s.Category] += s.Bytes
	}
	return c
}

// Dominant is the term holding the most bytes at the peak.
func (p PhasePeak) Dominant() TermKey { return largest(p.ByTerm()) }

func largest(t [NumTerms]int64) TermKey {
	best := TermKey(0)
	for k := range NumTerms {
		if t[k] > t[best] {
			best = k
		}
	}
	return best
}

// Layer is the saved activations of one decoder layer: derived from the
// architecture, and the rule of thumb beside it.
type Layer struct {
	// Parts are the tensors one layer saves for backward without
	// checkpointing; Full is their sum and PerToken the bytes per token.
	Parts    []Part
	Full     int64
	PerToken int64
	// Saved is what the layer keeps under the run's checkpointing.
	Saved int64
	// Rule is Korthikanti et al.'s s·b·h·(34 + 5·a·s/h) bytes for 16-bit
	// activations, without the s² term for SDPA (flash attention saves no
	// score matrix); RuleOps are the numbers it multiplies.
	Rule    int64
	RuleOps RuleOperands
}

// Prediction is the budget of one step.
type Prediction struct {
	Model  Model  `json:"model"` // as given, with HeadDim derived when it was 0
	Shape  Shape  `json:"shape"`
	Params Params `json:"params"`
	// PerParam is the model states' bytes per parameter: weights,
	// gradients, master copy and optimizer moments (step temporaries not
	// included), before sharding.
	PerParam int64          `json:"bytes_per_param"`
	Layer    Layer          `json:"layer"`
	Terms    [NumTerms]Term `json:"terms"`
	Phases   []PhasePeak    `json:"phases"`
	Peak     int            `json:"peak_phase"` // index into Phases
	Outside  int64          `json:"outside"`    // bytes outside the caching allocator
	Warnings []Warning      `json:"-"`          // worded by package report

	calc *calc // for Classify
}

// TermPerParam is what term k holds at its largest (Terms[k].Bytes) per
// parameter of the model.
func (p *Prediction) TermPerParam(k TermKey) float64 {
	return float64(p.Terms[k].Bytes) / float64(p.Params.Total)
}

// PeakBytes is the predicted peak of allocated bytes over the step.
func (p *Prediction) PeakBytes() int64 { return p.Phases[p.Peak].Bytes }

// DeviceBytes is what the device must hold at the peak: the allocated
// peak plus the memory outside the allocator.
func (p *Prediction) DeviceBytes() int64 { return p.PeakBytes() + p.Outside }

// Predict computes the budget of running m with shape s.
func Predict(m Model, s Shape) (*Prediction, error) {
	if err := errors.Join(m.Check(), s.Check()); err != nil {
		return nil, err
	}
	c := newCalc(m, s)
	m.HeadDim = m.headDim() // derived when not given: the value used
	p := &Prediction{Model: m, Shape: c.s, Params: c.p, PerParam: c.perParam(), Layer: c.layer(),
		Outside: c.s.Outside, calc: c}
	if s.Mode == Infer {
		p.Phases = []PhasePeak{c.inferPhase()}
	} else {
		p.Phases = []PhasePeak{c.forwardPhase(), c.backwardPhase(), c.optimizerPhase()}
	}
	for i, ph := range p.Phases {
		if ph.Bytes > p.Phases[p.Peak].Bytes {
			p.Peak = i
		}
	}
	p.Terms = c.terms(p.Phases)
	p.Warnings = append(p.Warnings, c.warnings()...)
	return p, nil
}

// calc holds a model and shape with the quantities every term uses.
type calc struct {
	m Model
	s Shape
	d dtypes
	p Params

	T, S, B        int64 // tokens, sequence, batch
	h, I, Q, K, nh int64 // hidden, intermediate, query width, key/value width, heads
	V, L           int64
	shard          int64 // ranks the optimizer state is sharded over (≥ 1)
}

func newCalc(m Model, s Shape) *calc {
	if s.LossChunks == 0 {
		s.LossChunks = 8
	}
	if s.Accumulation == 0 {
		s.Accumulation = 1
	}
	if s.ShardRanks == 0 {
		s.ShardRanks = 1
	}
	if s.MaxTokens == 0 {
		s.MaxTokens = s.Tokens()
	}
	c := &calc{m: m, s: s, d: dtypesOf(s.Precision), p: m.Params(),
		T: s.Tokens(), S: s.Seq, B: s.Batch,
		h: m.Hidden, I: m.Intermediate, Q: m.q(), K: m.kv(), nh: m.Heads,
		V: m.Vocab, L: m.Layers, shard: s.ShardRanks}
	if c.s.Workspace < 0 {
		c.s.Workspace = DefaultWorkspace(s.Mode)
	}
	if c.s.Outside < 0 {
		c.s.Outside = DefaultOutside
	}
	return c
}

// Warning is a doubt about a prediction's run shape; package report words
// each.
type Warning int

const (
	// WarnBF16Moments: pure bf16 training keeps AdamW's moments in bf16
	// (8 bytes per parameter), losing updates below bf16's resolution.
	WarnBF16Moments Warning = iota + 1
	// WarnCheckpointingInfer: activation checkpointing does nothing in
	// inference.
	WarnCheckpointingInfer
)

func (c *calc) warnings() []Warning {
	var w []Warning
	if c.s.Mode == Train && c.s.Optimizer == AdamW && c.s.Precision == BF16 {
		w = append(w, WarnBF16Moments)
	}
	if c.s.Mode == Infer && c.s.Checkpointing != NoCheckpointing {
		w = append(w, WarnCheckpointingInfer)
	}
	return w
}

// terms lists the five terms with their parts; each term's size is the most
// it holds at any of the phase peaks.
func (c *calc) terms(phases []PhasePeak) [NumTerms]Term {
	var ts [NumTerms]Term
	for k := range NumTerms {
		ts[k].Key = k
		for _, ph := range phases {
			ts[k].Bytes = max(ts[k].Bytes, ph.ByTerm()[k])
		}
	}
	ts[Overhead].Bytes += c.s.Outside

	if c.s.Mode == Train {
		ts[ModelStates].Parts = []Part{c.weights(), c.grads()}
		if c.d.master > 0 {
			ts[ModelStates].Parts = append(ts[ModelStates].Parts, c.master())
		}
		ts[ModelStates].Parts = append(ts[ModelStates].Parts, c.optimizerState(), c.stepTemporaries())
	} else {
		ts[ModelStates].Parts = []Part{c.weights()}
	}
	ts[Activations].Parts = c.activationParts()
	ts[LogitsLoss].Parts = c.logitsParts()
	ts[KVCache].Parts = []Part{c.kvCache()}
	ts[Overhead].Parts = []Part{c.workspace(), c.outsidePart()}
	return ts
}

// activationParts lists the saved activations and the forward's working
// copies.
func (c *calc) activationParts() []Part {
	fwdBwd := LiveForwardToBackward
	tokenIDs := Part{Kind: PartTokenIDs, Ops: Operands{Tokens: c.T}, Bytes: c.inputs(), Live: LiveWholeStep}
	if c.s.Mode == Infer {
		k := int64(3)
		if c.m.MLP == PlainMLP {
			k = 2
		}
		ps := []Part{
			tokenIDs,
			{Kind: PartInferResiduals, Ops: Operands{Count: 4, Tokens: c.T, Hidden: c.h, Elem: c.d.resid},
				Bytes: 4 * c.d.resid * c.h * c.T, Live: LiveForward},
			{Kind: PartInferMLP, Ops: Operands{Count: k, Tokens: c.T, Intermediate: c.I, Elem: c.d.act},
				Bytes: k * c.d.act * c.I * c.T, Live: LiveForward},
		}
		if c.d.cast > 0 {
			ps = append(ps, c.weightCopiesCache(LiveForward))
		}
		return ps
	}
	l := c.layer()
	layers := Part{Bytes: c.L * l.Saved, Live: fwdBwd}
	switch c.s.Checkpointing {
	case FullCheckpointing:
		layers.Kind, layers.Ops = PartLayersFullCkpt, Operands{Layers: c.L, Tokens: c.T, Hidden: c.h, Elem: c.d.resid}
	case SelectiveCheckpointing:
		layers.Kind, layers.Ops = PartLayersSelectiveCkpt, Operands{Layers: c.L, LayerBytes: l.Saved}
	default:
		layers.Kind, layers.Ops = PartLayers, Operands{Layers: c.L, LayerBytes: l.Full, Tokens: c.T, PerToken: l.PerToken}
	}
	ps := []Part{
		layers,
		c.embedOutPart(),
		c.ropePart(),
		c.finalNormPart(),
		c.finalHiddenPart(),
	}
	if c.d.cast > 0 && c.s.Loss != FusedLoss {
		ps = append(ps, c.lmInputCastPart())
	}
	if c.d.cast > 0 {
		live := fwdBwd
		if c.s.Checkpointing != NoCheckpointing {
			live = LiveCopiesRecomputed
		}
		ps = append(ps, Part{Kind: PartWeightCopies, Ops: Operands{Params: c.p.Matmul, Elem: c.d.cast},
			Bytes: c.weightCopies(), PerParam: 2, Live: live})
	}
	k := int64(3)
	if c.m.MLP == PlainMLP {
		k = 2
	}
	ps = append(ps, tokenIDs,
		Part{Kind: PartBackwardGrads, Ops: Operands{Tokens: c.T, Count: k, Intermediate: c.I, Elem: c.d.act},
			Bytes: c.bwdWorkingSet(), Live: LiveBackward})
	return ps
}

// logitsParts lists the vocabulary-sized tensors, each once.
func (c *calc) logitsParts() []Part {
	if c.s.Mode == Infer {
		return c.inferLogits()
	}
	l := c.loss()
	var ps []Part
	seen := map[PartKind]bool{}
	for _, group := range [][]Part{l.forward, l.saved, l.spike, l.lmBwd} {
		for _, p := range group {
			if !seen[p.Kind] {
				seen[p.Kind] = true
				ps = append(ps, p)
			}
		}
	}
	return ps
}
