package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/fit"
	"github.com/memscope/memscope/internal/flagvalue"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report"
)

type fitOptions struct {
	json        bool
	device      int
	batches     string
	confs       []string
	memoryLimit int64
	gpu         budget.GPU
	overhead    int64
	maxBatch    int
	top         int
	dim         string
	html        string
	compare     []string
	at          int  // --at: the step's need at that batch (0: none)
	advise      bool // --advise: advise's fixes along the curve
}

// fitDefaults are fit's options as its flags default them: budget and
// advise --frontier, which run fit with flags of their own, start there.
func fitDefaults() fitOptions {
	return fitOptions{device: -1, overhead: budget.DefaultOutside, maxBatch: 65536, top: 5, dim: "batch"}
}

func fitFlags(fs *pflag.FlagSet) runFunc {
	o := fitDefaults()
	fs.BoolVar(&o.json, "json", false, "write JSON instead of text; sizes are raw bytes")
	flagvalue.Device(fs, &o.device, "fit CUDA device `N`; -1: the first with recorded events")
	fs.StringVar(&o.batches, "batches", "", "the batch `B,B,...` each file was recorded at, in the files' order (default: read from the names: b8, bs8, batch8)")
	fs.StringArrayVar(&o.confs, "conf", nil, "also search under the PYTORCH_CUDA_ALLOC_CONF `STRING`; repeat for several")
	flagvalue.Size(fs, &o.memoryLimit, "memory-limit", true, "24GiB", "the cap the batch must fit under, `SIZE` (e.g. 24GiB), as set_per_process_memory_fraction sets one")
	flagvalue.GPU(fs, &o.gpu, "or the device it must fit on, a `SIZE` or a GPU name (less --overhead): ")
	flagvalue.Size(fs, &o.overhead, "overhead", false, "", "memory outside the allocator on that device, `SIZE` (CUDA context, libraries, NCCL; default 768 MiB)")
	fs.IntVar(&o.maxBatch, "max-batch", o.maxBatch, "search batches up to `N`")
	fs.IntVar(&o.top, "top", o.top, "name `N` stacks per kind")
	fs.StringArrayVar(&o.compare, "compare", nil, "hold the prediction at a recording's batch against that recording, `SNAP` (its batch from its name, or SNAP@N): which requests the small recordings did not foresee; repeat for several")
	fs.StringVar(&o.html, "html", "", "also write the chart and tables as a self-contained page to `FILE` (offline)")
	fs.StringVar(&o.dim, "dim", o.dim, "what the recordings' sizes scale, `DIM`: batch (samples per step) or seq (tokens per sample; --batches then gives the lengths)")
	fs.IntVar(&o.at, "at", 0, "also say what the step needs at `N` (its peaks with no cap, and whether it fits the cap)")
	fs.BoolVar(&o.advise, "advise", false, "also carry advise's fixes along the curve: the largest batch that fits with each, its requests made smaller through the allocator model")
	memoryFlag(fs)
	return func(cc *cmdContext, paths []string) error { return runFit(cc, o, paths) }
}

// runFit is 'memscope fit', and 'memscope budget' given two or more
// snapshots: the curve, the frontiers, and what was asked of them.
func runFit(cc *cmdContext, o fitOptions, paths []string) error {
	if len(paths) < 2 {
		return usageErrorf("fit needs two or more snapshots of the job at different batch sizes")
	}
	if o.at < 0 {
		return usageErrorf("--at %d: want a batch of 1 or more", o.at)
	}
	if o.dim != "batch" && o.dim != "seq" {
		return usageErrorf("--dim %q: batch or seq", o.dim)
	}
	if o.maxBatch < 1 {
		return usageErrorf("--max-batch %d: want 1 or more", o.maxBatch)
	}
	var batches []int
	var err error
	if o.batches != "" {
		if batches, err = fit.ParseBatches(o.batches, len(paths)); err != nil {
			return usageErrorf("%v", err)
		}
	}
	capacity, capFrom, err := fit.Cap(o.memoryLimit, o.gpu, o.overhead)
	if err != nil {
		return usageErrorf("%v", err)
	}
	sets, err := fit.Settings(o.confs)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if o.html != "" {
		if err := refuseOverInput(o.html, paths...); err != nil {
			return err
		}
	}
	snaps, err := openSnapshots(cc, paths)
	if err != nil {
		return err
	}
	var ins []fit.Input
	for i, p := range paths {
		in := fit.Input{Path: cc.shown(p), Snap: snaps[i]}
		if batches != nil {
			in.Batch = batches[i]
		}
		ins = append(ins, in)
	}
	m, err := fit.New(ins, fit.FirstDevice(ins[0].Snap, o.device), fit.Options{MemoryLimit: capacity})
	if err != nil {
		return badInput(err)
	}
	sets[0].Settings = m.RecordedSettings()
	res, err := m.Run(sets, capacity, o.maxBatch)
	if err != nil {
		return badInput(err)
	}
	r := &report.Fit{Result: res, CapFrom: capFrom, Top: o.top, Dim: o.dim, Version: version()}
	if o.at > 0 {
		if r.Need, err = m.Need(o.at, capacity); err != nil {
			return badInput(err)
		}
	}
	if o.advise {
		if r.Fixes, err = m.Fixes(capacity, o.maxBatch); err != nil {
			return badInput(err)
		}
		r.Advised = true
	}
	for _, c := range o.compare {
		path, batch, err := fit.ParseCompare(c)
		if err != nil {
			return usageErrorf("%v", err)
		}
		s, err := openSnapshot(cc, path)
		if err != nil {
			return err
		}
		cmp, err := m.Compare(fit.Input{Path: cc.shown(path), Snap: s, Batch: batch})
		if err != nil {
			return badInput(err)
		}
		r.Comparisons = append(r.Comparisons, cmp)
	}
	if o.html != "" {
		n, err := writeFile(o.html, func(w io.Writer) error { return report.Write(w, report.HTML, r) })
		if err != nil {
			return err
		}
		fmt.Fprintf(cc.stderr, "wrote %s (%s): it works offline\n", o.html, units.Bytes(n))
	}
	return report.Write(cc.stdout, formatOf(o.json), r)
}
