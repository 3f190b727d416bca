package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/flagvalue"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/snapshot"
)

// budgetOptions are the flags of 'memscope budget'.
type budgetOptions struct {
	config                  string
	ask                     budget.Ask
	ranks                   int64
	snapshot, truth, runDir string
	device                  int
	json                    bool
}

func budgetFlags(fs *pflag.FlagSet) runFunc {
	var o budgetOptions
	a := &o.ask
	m, s := &a.Model, &a.Shape
	fs.StringVar(&o.config, "config", "", "the model's Hugging Face `config.json`")
	fs.Int64Var(&m.Vocab, "vocab", 0, "vocabulary size `N` (overrides the config)")
	fs.Int64Var(&m.Hidden, "hidden", 0, "hidden size `N`")
	fs.Int64Var(&m.Layers, "layers", 0, "decoder layers `N`")
	fs.Int64Var(&m.Heads, "heads", 0, "attention heads `N`")
	fs.Int64Var(&m.KVHeads, "kv-heads", 0, "key/value heads `N` (default: --heads)")
	fs.Int64Var(&m.HeadDim, "head-dim", 0, "head dimension `N` (default: hidden / heads)")
	fs.Int64Var(&m.Intermediate, "intermediate", 0, "MLP intermediate size `N`")
	fs.BoolVar(&m.TiedEmbeddings, "tied", false, "the output projection shares the embedding matrix")
	fs.StringVar(&a.MLP, "mlp", "gated", "MLP `KIND`: gated (gate, up, down: Llama) or plain (up, down: GPT-2)")
	fs.StringVar(&a.Attention, "attention", "sdpa", "attention `KIND`: sdpa (flash/efficient: no s×s saved) or eager")
	fs.Int64Var(&s.Batch, "batch", 1, "micro-batch: `N` sequences")
	fs.Int64Var(&s.Seq, "seq", 0, "sequence length: `N` tokens")
	fs.StringVar(&a.Precision, "precision", string(budget.BF16Autocast), "`P`: "+strings.Join(budget.Precisions, ", "))
	fs.StringVar(&a.Optimizer, "optimizer", string(budget.AdamW), "`OPT`: "+strings.Join(budget.Optimizers, ", "))
	fs.StringVar(&a.OptimizerImpl, "optimizer-impl", string(budget.Foreach), "optimizer `IMPL`: "+strings.Join(budget.OptimizerImpls, ", "))
	fs.StringVar(&a.Checkpointing, "checkpointing", string(budget.NoCheckpointing), "activation checkpointing `C`: "+strings.Join(budget.Checkpointings, ", "))
	fs.StringVar(&a.Loss, "loss", string(budget.PlainLoss), "cross-entropy `L`: plain (fp32 logits), chunked, fused (Liger)")
	fs.Int64Var(&s.LossChunks, "loss-chunks", 8, "`N` slices of the chunked loss")
	fs.StringVar(&a.Mode, "mode", string(budget.Train), "`MODE`: train, or infer (forward with a KV cache)")
	fs.Int64Var(&s.MaxTokens, "max-tokens", 0, "inference: `N` tokens in the KV cache over all sequences (default: batch × seq)")
	fs.Int64Var(&s.Accumulation, "accumulation", 1, "`N` micro-batches per optimizer step (gradients then live through the forward)")
	fs.Int64Var(&s.ShardRanks, "shard-ranks", 1, "shard optimizer state over `N` data-parallel ranks (ZeRO-1)")
	s.Workspace, s.Outside = -1, -1
	flagvalue.Size(fs, &s.Workspace, "workspace", false, "", "cuBLAS workspace `SIZE` in the allocator (default: 32 MiB per matmul thread on Hopper, 8.1 MiB on older GPUs)")
	flagvalue.Size(fs, &s.Outside, "overhead", false, "", "memory outside the allocator, `SIZE` (CUDA context, libraries, NCCL; default 768 MiB)")
	flagvalue.GPU(fs, &a.GPU, "hold the budget against a device of `SIZE` or a GPU name: ")
	fs.Int64Var(&o.ranks, "ranks", budget.DefaultRanks, "data-parallel `N` ranks to suggest optimizer-state sharding over")
	fs.StringVar(&o.snapshot, "snapshot", "", "compare with the phases measured in `SNAP` (also the positional argument)")
	fs.StringVar(&o.truth, "truth", "", "compare with the phase peaks torch measured, a capture's `truth.json`")
	fs.StringVar(&o.runDir, "run", "", "compare with `DIR`'s snapshot.pickle and truth.json (a fixture, or harness.py scenario output)")
	flagvalue.Device(fs, &o.device, "the snapshot's CUDA device `N` (default: the first with recorded events)")
	fs.BoolVar(&o.json, "json", false, "write JSON instead of text; sizes are raw bytes")
	memoryFlag(fs)
	a.Set = fs.Changed
	return func(cc *cmdContext, args []string) error {
		if len(args) >= 2 {
			return budgetFromRecordings(cc, &o, fs, args)
		}
		if len(args) > 0 {
			if o.snapshot != "" {
				return usageErrorf("give the snapshot once: as SNAP or with --snapshot")
			}
			o.snapshot = args[0]
		}
		return runBudget(cc, &o)
	}
}

func runBudget(cc *cmdContext, o *budgetOptions) error {
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
	a := &o.ask
	r := &report.Budget{Snapshot: cc.shown(o.snapshot), Truth: cc.shown(o.truth)}
	var err error
	if o.truth != "" {
		if a.Truth, err = budget.ReadTruth(o.truth); err != nil {
			return badInput(err)
		}
		a.TruthName = o.truth
	}
	if o.config != "" {
		if a.Config, r.ConfigWarnings, err = budget.LoadConfig(o.config); err != nil {
			return badInput(err)
		}
		a.HasConfig = true
	}
	m, s, notes, err := a.Resolve()
	if err != nil {
		return usageErrorf("%v", err)
	}
	r.Notes = notes
	p, err := budget.Predict(m, s)
	if err != nil {
		return usageErrorf("%v", err)
	}
	pl := budget.PlanFor(p, o.ranks, a.GPU, a.Truth)
	r.Prediction, r.Fixes, r.Fit, r.Combination = p, pl.Fixes, pl.Fit, pl.Combination
	if o.snapshot != "" || a.Truth != nil {
		var d *attribution.Device
		if o.snapshot != "" {
			if d, err = o.snapshotDevice(cc); err != nil {
				return err
			}
		}
		var more []budget.Note
		r.Measured, more, r.Advice = attribution.HoldBudget(p, d, a.Truth, o.ranks)
		r.Notes = append(r.Notes, more...)
	}
	return report.Write(cc.stdout, formatOf(o.json), r)
}

// snapshotDevice opens and analyses the snapshot and picks the device:
// --device, else the first with recorded events.
func (o *budgetOptions) snapshotDevice(cc *cmdContext) (*attribution.Device, error) {
	s, err := openSnapshot(cc, o.snapshot)
	if err != nil {
		return nil, err
	}
	if err := checkDevice(s, o.device); err != nil {
		return nil, err
	}
	d := attribution.Analyze(s, attribution.Options{Device: o.device}).Primary()
	if d == nil || o.device < 0 && len(d.Timeline.Events) == 0 {
		return nil, badInput(fmt.Errorf("%s: no device has recorded events (it has %s, none with a trace); record with torch.cuda.memory._record_memory_history", o.snapshot, snapshot.DeviceList(s.Devices())))
	}
	return d, nil
}

// budgetFromRecordings is 'memscope budget --batch N A B …': two or more
// snapshots of the job at other batches give the step's need at N from
// memscope fit's curve (the model's run at N, allocator-exact, with no
// cap), held against --device-memory with advise's fixes along the curve.
func budgetFromRecordings(cc *cmdContext, o *budgetOptions, fs *pflag.FlagSet, paths []string) error {
	for _, name := range []string{"config", "vocab", "hidden", "layers", "heads", "kv-heads", "head-dim", "intermediate", "seq",
		"snapshot", "truth", "run", "mode", "precision", "optimizer", "loss", "checkpointing", "accumulation", "shard-ranks"} {
		if fs.Changed(name) {
			return usageErrorf("--%s: with two or more snapshots budget reads the step from them (memscope fit's curve), not from a model's shape; give --batch N (and --device-memory)", name)
		}
	}
	if !fs.Changed("batch") {
		return usageErrorf("with two or more snapshots, give the batch to budget at: --batch N (the snapshots' own batches come from their names, b8/… or bs16…; memscope fit --batches gives them otherwise)")
	}
	if o.ask.GPU.Memory <= 0 {
		return usageErrorf("with two or more snapshots, give the device to hold the step against: --device-memory SIZE or a GPU name (A100-80GB, H100, …)")
	}
	fo := fitDefaults()
	fo.json, fo.device, fo.gpu, fo.at, fo.advise = o.json, o.device, o.ask.GPU, int(o.ask.Shape.Batch), true
	if o.ask.Shape.Outside >= 0 {
		fo.overhead = o.ask.Shape.Outside
	}
	return runFit(cc, fo, paths)
}
