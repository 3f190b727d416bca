package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/report"
)

// budgetOptions are the flags of 'memscope budget'.
type budgetOptions struct {
	config                  string
	model                   budget.Model // overrides, applied when their flag is set
	mlp, attention          string
	shape                   budget.Shape
	precision, optimizer    string
	optimizerImpl, ckpt     string
	loss, mode              string
	gpu                     budget.GPU
	ranks                   int64
	snapshot, truth, runDir string
	device                  int
	json                    bool
}

func budgetFlags(fs *pflag.FlagSet) runFunc {
	var o budgetOptions
	m, s := &o.model, &o.shape
	fs.StringVar(&o.config, "config", "", "the model's Hugging Face `config.json`")
	fs.Int64Var(&m.Vocab, "vocab", 0, "vocabulary size `N` (overrides the config)")
	fs.Int64Var(&m.Hidden, "hidden", 0, "hidden size `N`")
	fs.Int64Var(&m.Layers, "layers", 0, "decoder layers `N`")
	fs.Int64Var(&m.Heads, "heads", 0, "attention heads `N`")
	fs.Int64Var(&m.KVHeads, "kv-heads", 0, "key/value heads `N` (default: --heads)")
	fs.Int64Var(&m.HeadDim, "head-dim", 0, "head dimension `N` (default: hidden / heads)")
	fs.Int64Var(&m.Intermediate, "intermediate", 0, "MLP intermediate size `N`")
	fs.BoolVar(&m.TiedEmbeddings, "tied", false, "the output projection shares the embedding matrix")
	fs.StringVar(&o.mlp, "mlp", "gated", "MLP `KIND`: gated (gate, up, down: Llama) or plain (up, down: GPT-2)")
	fs.StringVar(&o.attention, "attention", "sdpa", "attention `KIND`: sdpa (flash/efficient: no s×s saved) or eager")
	fs.Int64Var(&s.Batch, "batch", 1, "micro-batch: `N` sequences")
	fs.Int64Var(&s.Seq, "seq", 0, "sequence length: `N` tokens")
	fs.StringVar(&o.precision, "precision", string(budget.BF16Autocast), "`P`: "+strings.Join(budget.Precisions, ", "))
	fs.StringVar(&o.optimizer, "optimizer", string(budget.AdamW), "`OPT`: "+strings.Join(budget.Optimizers, ", "))
	fs.StringVar(&o.optimizerImpl, "optimizer-impl", string(budget.Foreach), "optimizer `IMPL`: "+strings.Join(budget.OptimizerImpls, ", "))
	fs.StringVar(&o.ckpt, "checkpointing", string(budget.NoCheckpointing), "activation checkpointing `C`: "+strings.Join(budget.Checkpointings, ", "))
	fs.StringVar(&o.loss, "loss", string(budget.PlainLoss), "cross-entropy `L`: plain (fp32 logits), chunked, fused (Liger)")
	fs.Int64Var(&s.LossChunks, "loss-chunks", 8, "`N` slices of the chunked loss")
	fs.StringVar(&o.mode, "mode", string(budget.Train), "`MODE`: train, or infer (forward with a KV cache)")
	fs.Int64Var(&s.MaxTokens, "max-tokens", 0, "inference: `N` tokens in the KV cache over all sequences (default: batch × seq)")
	fs.Int64Var(&s.Accumulation, "accumulation", 1, "`N` micro-batches per optimizer step (gradients then live through the forward)")
	fs.Int64Var(&s.ShardRanks, "shard-ranks", 1, "shard optimizer state over `N` data-parallel ranks (ZeRO-1)")
	s.Workspace, s.Outside = -1, -1
	sizeFlag(fs, &s.Workspace, "workspace", false, "", "cuBLAS workspace `SIZE` in the allocator (default: 32 MiB per matmul thread on Hopper, 8.1 MiB on older GPUs)")
	sizeFlag(fs, &s.Outside, "overhead", false, "", "memory outside the allocator, `SIZE` (CUDA context, libraries, NCCL; default 768 MiB)")
	gpuFlag(fs, &o.gpu, "hold the budget against a device of `SIZE` or a GPU name: ")
	fs.Int64Var(&o.ranks, "ranks", budget.DefaultRanks, "data-parallel `N` ranks to suggest optimizer-state sharding over")
	fs.StringVar(&o.snapshot, "snapshot", "", "compare with the phases measured in `SNAP` (also the positional argument)")
	fs.StringVar(&o.truth, "truth", "", "compare with the phase peaks torch measured, a capture's `truth.json`")
	fs.StringVar(&o.runDir, "run", "", "compare with `DIR`'s snapshot.pickle and truth.json (a fixture, or harness.py scenario output)")
	deviceFlag(fs, &o.device, "the snapshot's CUDA device `N` (default: the first with recorded events)")
	fs.BoolVar(&o.json, "json", false, "write JSON instead of text; sizes are raw bytes")
	memoryFlag(fs)
	return func(cc *cmdContext, args []string) error {
		if len(args) > 0 {
			if o.snapshot != "" {
				return usageErrorf("give the snapshot once: as SNAP or with --snapshot")
			}
			o.snapshot = args[0]
		}
		return runBudget(cc, fs, &o)
	}
}

func runBudget(cc *cmdContext, fs *pflag.FlagSet, o *budgetOptions) error {
	if o.runDir != "" {
		for _, f := range []struct {
			dst  *string
			name string
		}{{&o.snapshot, "snapshot.pickle"}, {&o.truth, "truth.json"}} {
			p := filepath.Join(o.runDir, f.name)
			if _, err := os.Stat(p); err == nil && *f.dst == "" {
				*f.dst = p
			}
		}
		if o.snapshot == "" && o.truth == "" {
			return badInput(fmt.Errorf("--run %s: no snapshot.pickle or truth.json in it", o.runDir))
		}
	}
	var tr *budget.Truth
	if o.truth != "" {
		var err error
		if tr, err = budget.ReadTruth(o.truth); err != nil {
			return badInput(err)
		}
	}
	r := &report.Budget{Snapshot: o.snapshot, Truth: o.truth}
	m, err := o.resolveModel(fs, tr, r)
	if err != nil {
		return err
	}
	s, gpu, err := o.resolveShape(fs, tr)
	if err != nil {
		return err
	}
	p, err := budget.Predict(m, s)
	if err != nil {
		return usageErrorf("%v", err)
	}
	r.Prediction, r.Fixes = p, budget.Suggest(p, o.ranks)
	switch {
	case gpu.Memory > 0:
		f := p.FitOn(gpu.Name, gpu.Memory)
		r.Fit = &f
	case tr != nil && tr.DeviceTotal > 0:
		f := p.FitOn(tr.DeviceName, tr.DeviceTotal)
		r.Fit = &f
	}
	if r.Fit != nil {
		r.Combination = budget.Combine(p, r.Fixes, *r.Fit)
	}
	if o.snapshot != "" || tr != nil {
		var ms []budget.Measured
		if o.snapshot != "" {
			d, err := o.snapshotDevice(cc)
			if err != nil {
				return err
			}
			var notes []budget.Note
			ms, notes = attribution.MeasureBudget(d, p)
			r.Notes = append(r.Notes, notes...)
			// Advise's fixes of the same run, from the snapshot's blocks,
			// over the ranks and chunks the predicted fixes use.
			r.Advice = d.Advise(attribution.AdviseOptions{Ranks: o.ranks, LossChunks: p.Shape.LossChunks})
		}
		if tr != nil {
			var notes []budget.Note
			ms, notes = budget.MergeTruth(ms, tr)
			r.Notes = append(r.Notes, notes...)
		}
		r.Measured = budget.Compare(p, ms)
		r.Notes = append(r.Notes, budget.CompareNotes(r.Measured, ms)...)
	}
	return report.Write(cc.stdout, o.format(), r)
}

func (o *budgetOptions) format() report.Format {
	if o.json {
		return report.JSON
	}
	return report.Text
}

// snapshotDevice opens and analyses the snapshot and picks the device:
// --device, else the first with recorded events.
func (o *budgetOptions) snapshotDevice(cc *cmdContext) (*attribution.Device, error) {
	s, err := openSnapshot(cc, o.snapshot)
	if err != nil {
		return nil, err
	}
	if err := checkDevice(o.snapshot, s, o.device); err != nil {
		return nil, err
	}
	d := attribution.Analyze(s, attribution.Options{Device: o.device}).Primary()
	if d == nil || o.device < 0 && len(d.Timeline.Events) == 0 {
		return nil, badInput(fmt.Errorf("%s: no device has recorded events (it has %s, none with a trace); record with torch.cuda.memory._record_memory_history", o.snapshot, deviceList(s.Devices())))
	}
	return d, nil
}

// resolveModel builds the model from --config, else from the truth's
// harness arguments, then applies every model flag that was set. It adds
// the config's warnings, or the note that the harness's model was taken,
// to r.
func (o *budgetOptions) resolveModel(fs *pflag.FlagSet, tr *budget.Truth, r *report.Budget) (budget.Model, error) {
	var m budget.Model
	var fromTruth bool
	if tr != nil {
		m, fromTruth = budget.TruthModel(tr, o.truth)
	}
	switch {
	case o.config != "":
		var err error
		if m, r.ConfigWarnings, err = budget.LoadConfig(o.config); err != nil {
			return m, badInput(err)
		}
	case fromTruth:
		r.Notes = append(r.Notes, budget.Note{Kind: budget.NoteHarnessModel})
	default:
		m = budget.Model{Name: "flags", MLP: budget.GatedMLP, Attention: budget.SDPA}
	}
	f := o.model
	for _, v := range []struct {
		flag     string
		dst, src *int64
	}{
		{"vocab", &m.Vocab, &f.Vocab}, {"hidden", &m.Hidden, &f.Hidden}, {"layers", &m.Layers, &f.Layers},
		{"heads", &m.Heads, &f.Heads}, {"kv-heads", &m.KVHeads, &f.KVHeads}, {"head-dim", &m.HeadDim, &f.HeadDim},
		{"intermediate", &m.Intermediate, &f.Intermediate},
	} {
		if fs.Changed(v.flag) {
			*v.dst = *v.src
		}
	}
	if fs.Changed("tied") {
		m.TiedEmbeddings = f.TiedEmbeddings
	}
	if fs.Changed("mlp") || o.config == "" && m.Name == "flags" {
		m.MLP = budget.MLPKind(o.mlp)
	}
	if fs.Changed("attention") {
		m.Attention = budget.AttentionKind(o.attention)
	}
	if m.KVHeads == 0 {
		m.KVHeads = m.Heads
	}
	if err := m.Check(); err != nil {
		if o.config == "" && tr == nil && m.Vocab == 0 && m.Hidden == 0 && m.Layers == 0 && m.Heads == 0 && m.Intermediate == 0 {
			return m, usageErrorf("no model: give --config config.json, or --vocab, --hidden, --layers, --heads and --intermediate")
		}
		return m, usageErrorf("%s", strings.ReplaceAll(err.Error(), "\n", "; ")) // errors.Join's lines, on one
	}
	return m, nil
}

// resolveShape builds the run shape from the flags, taking the micro-batch,
// sequence and checkpointing from the truth's harness arguments when their
// flags are not set. It returns the named GPU of --device-memory, if any.
func (o *budgetOptions) resolveShape(fs *pflag.FlagSet, tr *budget.Truth) (budget.Shape, budget.GPU, error) {
	s := o.shape
	s.Precision, s.Optimizer = budget.Precision(o.precision), budget.Optimizer(o.optimizer)
	s.OptimizerImpl, s.Checkpointing = budget.OptimizerImpl(o.optimizerImpl), budget.Checkpointing(o.ckpt)
	s.Loss, s.Mode = budget.Loss(o.loss), budget.Mode(o.mode)
	if tr != nil {
		if !fs.Changed("batch") && tr.Args.Batch > 0 {
			s.Batch = tr.Args.Batch
		}
		if !fs.Changed("seq") && tr.Args.Seq > 0 {
			s.Seq = tr.Args.Seq
		}
		if !fs.Changed("checkpointing") && tr.Args.Checkpointed() {
			s.Checkpointing = budget.FullCheckpointing
		}
	}
	if s.Seq == 0 {
		return s, budget.GPU{}, usageErrorf("--seq is required: the tokens per sequence")
	}
	gpu := o.gpu
	if s.Workspace < 0 { // not given
		s.Workspace = gpu.WorkspaceIn(s.Mode)
	}
	if err := s.Check(); err != nil {
		return s, gpu, usageErrorf("%v", err)
	}
	return s, gpu, nil
}
