package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/internal/flagvalue"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/sweep"
	"github.com/spf13/pflag"
)

// sweepOptions are the flags of 'memscope sweep'.
type sweepOptions struct {
	cfg       capture.SweepConfig
	snapshots []string
	noBisect  bool
	json      bool
	fs        *pflag.FlagSet
}

func sweepFlags(fs *pflag.FlagSet) runFunc {
	o := &sweepOptions{fs: fs}
	c := &o.cfg
	fs.StringVarP(&c.Out, "out", "o", "memscope-sweep", "write the run into directory `DIR`")
	fs.StringVar(&c.Python, "python", "python3", "the `PYTHON` with torch")
	fs.StringVar(&c.Workload, "model", "mlp", "the workload `NAME`: mlp, llama, vit, or pkg.module:factory (factory(device) returns model, make_batch(n), loss_fn)")
	fs.StringVar(&c.Workload, "workload", "mlp", "the same as --model `NAME`")
	fs.IntSliceVar(&c.Batches, "batch", []int{1, 2, 4, 8, 16, 32, 64}, "the batch ladder, `B,B,...` ascending")
	fs.StringSliceVar(&c.Precisions, "precision", []string{"fp32", "bf16"}, "`PRECISIONS` to measure, comma-separated: fp32, bf16 (autocast), fp16-amp (autocast + GradScaler)")
	fs.StringVar(&c.Mode, "mode", "train", "`MODE`: train (forward, backward, optimizer) or infer (forward under inference_mode)")
	fs.StringVar(&c.Optimizer, "optimizer", "adamw", "`OPT`: adamw or sgd (momentum 0.9)")
	fs.IntVar(&c.MicroBatch, "micro-batch", 0, "gradient accumulation: micro-batches of at most `N` samples (0: none)")
	fs.IntVar(&c.Warmup, "warmup", 1, "`N` warm-up steps per point, not measured")
	fs.IntVar(&c.Steps, "steps", 3, "`N` measured steps per point")
	fs.Float64Var(&c.MemoryFraction, "memory-fraction", 0, "cap each process at fraction `F` of the device (set_per_process_memory_fraction)")
	flagvalue.Size(fs, &c.MemoryLimit, "memory-limit", true, "24GiB", "cap each process at `SIZE` (e.g. 24GiB), as a memory fraction")
	fs.BoolVar(&o.noBisect, "no-bisect", false, "stop at the ladder's first OOM without bisecting")
	fs.StringSliceVar(&o.snapshots, "snapshots", []string{"all"}, "`PRECISIONS` whose safe, largest-fit and first-fail points get snapshots: all, none, or a list")
	fs.IntVar(&c.SnapshotSteps, "snapshot-steps", 0, "`N` measured steps at the snapshot points (0: as many as --steps, so that a late OOM recurs)")
	fs.BoolVar(&c.Profile, "profile", false, "also record a profiler trace at the snapshot points")
	fs.IntVar(&c.MaxEntries, "max-entries", 1_000_000, "allocator history ring buffer at the snapshot points, `N` entries")
	fs.BoolVar(&c.NeutralPaths, "neutral-paths", false, "rewrite frame paths in snapshots and traces to <repo>/, <site-packages>/…")
	fs.StringVar(&c.Parallel, "parallel", "ddp", "with --nproc, the `PARALLEL` wrapper: ddp, fsdp (FSDP2 fully_shard) or none")
	fs.IntVar(&c.Torchrun.Nproc, "nproc", 0, "run each point as `N` processes under torchrun, one per GPU")
	fs.BoolVar(&o.json, "json", false, "print the summary as JSON")
	for _, f := range capture.WorkloadFlags {
		switch f.Kind {
		case "int":
			fs.Int(f.Name, 0, f.Usage)
		case "string":
			fs.String(f.Name, "", f.Usage)
		case "bool":
			fs.Bool(f.Name, false, f.Usage)
		}
	}
	c.Torchrun.NodeRank = -1
	return func(cc *cmdContext, args []string) error {
		if err := o.check(); err != nil {
			return err
		}
		return runSweep(cc, o)
	}
}

// check maps the options onto the sweep's configuration and checks it.
func (o *sweepOptions) check() error {
	c := &o.cfg
	c.Bisect = !o.noBisect
	c.SetSnapshots(o.snapshots)
	set := map[string]string{}
	o.fs.Visit(func(f *pflag.Flag) { set[f.Name] = f.Value.String() })
	c.SetWorkloadArgs(set)
	c.Command = append([]string{"memscope", "sweep"}, os.Args[min(2, len(os.Args)):]...)
	if err := c.Check(); err != nil {
		return usageErrorf("%v", err)
	}
	if c.Torchrun.Nproc <= 1 {
		c.Parallel = "none"
	}
	return nil
}

// runSweep is the sweep command; a variable for tests.
var runSweep = sweepRun

func sweepRun(cc *cmdContext, o *sweepOptions) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := capture.Sweep(ctx, o.cfg, report.Progress{W: cc.stderr})
	if ue, ok := errors.AsType[*capture.UsageError](err); ok {
		return usageErrorf("%v", ue.Err)
	}
	if err != nil {
		if res != nil && len(res.Points) > 0 {
			cc.warnf("the sweep stopped early; %s holds the %d points measured", o.cfg.Out, len(res.Points))
		}
		return err
	}
	fmt.Fprintf(cc.stderr, "memscope: sweep: wrote %s (memscope summary --run %s)\n\n", o.cfg.Out, o.cfg.Out)
	return report.Write(cc.stdout, formatOf(o.json), &report.Sweep{Analysis: sweep.Analyze(o.cfg.Out, res)})
}
