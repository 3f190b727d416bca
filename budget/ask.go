package budget

import (
	"errors"
	"strings"
)

// Ask is a budget as a command line asks for it ('memscope budget'): the
// model of a config or of a capture's truth.json, the model and shape
// flags over it, and the device. Resolve turns it into the Model and Shape
// Predict takes.
type Ask struct {
	// Config is the model LoadConfig read (HasConfig true), the base the
	// flags override; without one, Truth's harness model is, and without
	// that the flags alone describe the model.
	Config    Model
	HasConfig bool
	// Truth is the capture's truth.json, or nil; TruthName names it. Its
	// harness arguments give the model (without a config), the
	// micro-batch, the sequence and the checkpointing their flags leave
	// unset.
	Truth     *Truth
	TruthName string

	// Model holds the model flags' values, MLP and Attention the kinds
	// named (an MLPKind, an AttentionKind); each applies when Set says its
	// flag was given ("vocab", "hidden", "layers", "heads", "kv-heads",
	// "head-dim", "intermediate", "tied", "mlp", "attention").
	Model          Model
	MLP, Attention string
	// Shape holds the shape flags' values; the kinds are named as the
	// flags give them. "batch", "seq" and "checkpointing" are asked of Set.
	Shape                               Shape
	Precision, Optimizer, OptimizerImpl string
	Checkpointing, Loss, Mode           string
	// GPU is the device the budget is held against (Memory 0: none); its
	// workspace is the default of a Shape.Workspace below 0.
	GPU GPU
	// Set reports whether the flag of that name was given (pflag's
	// FlagSet.Changed).
	Set func(flag string) bool
}

// Resolve returns the model and shape asked for, and the notes on how the
// model was found (NoteHarnessModel: from the truth's harness arguments).
// Its errors are the command line's: a model or shape that does not hold,
// worded for the flags.
func (a *Ask) Resolve() (Model, Shape, []Note, error) {
	m, notes, err := a.model()
	if err != nil {
		return m, Shape{}, nil, err
	}
	s, err := a.shape()
	return m, s, notes, err
}

// model builds the model from the config, else from the truth's harness
// arguments, then applies every model flag that was set.
func (a *Ask) model() (Model, []Note, error) {
	var m Model
	var notes []Note
	fromTruth := false
	if a.Truth != nil {
		m, fromTruth = TruthModel(a.Truth, a.TruthName)
	}
	switch {
	case a.HasConfig:
		m = a.Config
	case fromTruth:
		notes = append(notes, Note{Kind: NoteHarnessModel})
	default:
		m = Model{Name: "flags", MLP: GatedMLP, Attention: SDPA}
	}
	f := a.Model
	for _, v := range []struct {
		flag     string
		dst, src *int64
	}{
		{"vocab", &m.Vocab, &f.Vocab}, {"hidden", &m.Hidden, &f.Hidden}, {"layers", &m.Layers, &f.Layers},
		{"heads", &m.Heads, &f.Heads}, {"kv-heads", &m.KVHeads, &f.KVHeads}, {"head-dim", &m.HeadDim, &f.HeadDim},
		{"intermediate", &m.Intermediate, &f.Intermediate},
	} {
		if a.Set(v.flag) {
			*v.dst = *v.src
		}
	}
	if a.Set("tied") {
		m.TiedEmbeddings = f.TiedEmbeddings
	}
	if a.Set("mlp") || !a.HasConfig && m.Name == "flags" {
		m.MLP = MLPKind(a.MLP)
	}
	if a.Set("attention") {
		m.Attention = AttentionKind(a.Attention)
	}
	if m.KVHeads == 0 {
		m.KVHeads = m.Heads
	}
	if err := m.Check(); err != nil {
		if !a.HasConfig && a.Truth == nil && m.Vocab == 0 && m.Hidden == 0 && m.Layers == 0 && m.Heads == 0 && m.Intermediate == 0 {
			return m, nil, errors.New("no model: give --config config.json, or --vocab, --hidden, --layers, --heads and --intermediate")
		}
		return m, nil, errors.New(strings.ReplaceAll(err.Error(), "\n", "; ")) // errors.Join's lines, on one
	}
	return m, notes, nil
}

// shape builds the run shape from the flags, taking the micro-batch,
// sequence and checkpointing from the truth's harness arguments when their
// flags are not set.
func (a *Ask) shape() (Shape, error) {
	s := a.Shape
	s.Precision, s.Optimizer = Precision(a.Precision), Optimizer(a.Optimizer)
	s.OptimizerImpl, s.Checkpointing = OptimizerImpl(a.OptimizerImpl), Checkpointing(a.Checkpointing)
	s.Loss, s.Mode = Loss(a.Loss), Mode(a.Mode)
	if tr := a.Truth; tr != nil {
		if !a.Set("batch") && tr.Args.Batch > 0 {
			s.Batch = tr.Args.Batch
		}
		if !a.Set("seq") && tr.Args.Seq > 0 {
			s.Seq = tr.Args.Seq
		}
		if !a.Set("checkpointing") && tr.Args.Checkpointed() {
			s.Checkpointing = FullCheckpointing
		}
	}
	if s.Seq == 0 {
		return s, errors.New("--seq is required: the tokens per sequence")
	}
	if s.Workspace < 0 { // not given
		s.Workspace = a.GPU.WorkspaceIn(s.Mode)
	}
	if err := s.Check(); err != nil {
		return s, err
	}
	return s, nil
}

// Plan is a prediction's fixes (Suggest, sharding over ranks) and, on a
// device, its fit there and the cheapest run of fixes that fits when no
// one fix does (Combine).
type Plan struct {
	Fixes       []Fix
	Fit         *Fit // nil: no device to hold it against
	Combination *Combination
}

// PlanFor plans p over ranks on the device gpu, else (gpu.Memory 0) on
// the truth's device when it names one (tr may be nil).
func PlanFor(p *Prediction, ranks int64, gpu GPU, tr *Truth) Plan {
	pl := Plan{Fixes: Suggest(p, ranks)}
	switch {
	case gpu.Memory > 0:
		f := p.FitOn(gpu.Name, gpu.Memory)
		pl.Fit = &f
	case tr != nil && tr.DeviceTotal > 0:
		f := p.FitOn(tr.DeviceName, tr.DeviceTotal)
		pl.Fit = &f
	}
	if pl.Fit != nil {
		pl.Combination = Combine(p, pl.Fixes, *pl.Fit)
	}
	return pl
}
