package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/allocator"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/fit"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report"
)

const fitLong = `Fit answers "what is the largest batch that fits?" from two or more
snapshots of the same job recorded the ordinary way at small batch sizes
(say 1, 2 and 4), without the card in hand. Each request of the recording
at the largest batch (the template) is paired with the others' (the same
stack at the same place in the request stream, found by a diff of the
streams, so a batch that takes other code paths still pairs) and its size
is fitted exactly: constant, a + b × batch, or with three recordings a +
b·batch + c·batch². The template's requests at any batch N, sizes
scaled and frees at their places, then drive the allocator model under
the cap and the settings, and a bisection finds the largest N that fits:
its peak allocated and reserved, the margin left, the batch above it and
where that one dies (step, phase, request, site), and the curve (fixed +
per sample, allocated and reserved). A request freed before the next one
is made (a library's workspace) may fail and the run goes on, as cuDNN's
convolutions fall back to an algorithm that needs less.

The batch of each file comes from --batches (in the files' order) or from
its name (b8, bs8, batch8). With --dim seq the recordings differ in
sequence length instead (--batches gives the lengths), and the answer is
the longest sequence that fits. The cap is --memory-limit, or --device-memory
(a size or a GPU by name) less --overhead for what lives outside the
allocator (CUDA context, kernels, NCCL). Each --conf adds a frontier under
that PYTORCH_CUDA_ALLOC_CONF beside the recorded settings'. Requests whose
sizes follow no exact line, and requests only one recording makes, are
named; recordings of different programs are refused.`

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
}

func fitFlags(fs *pflag.FlagSet) runFunc {
	o := fitOptions{overhead: budget.DefaultOutside}
	fs.BoolVar(&o.json, "json", false, "write JSON instead of text; sizes are raw bytes")
	deviceFlag(fs, &o.device, "fit CUDA device `N` (default: the first with recorded events)")
	fs.StringVar(&o.batches, "batches", "", "the batch `B,B,...` each file was recorded at, in the files' order (default: read from the names: b8, bs8, batch8)")
	fs.StringArrayVar(&o.confs, "conf", nil, "also search under the PYTORCH_CUDA_ALLOC_CONF `STRING`; repeat for several")
	sizeFlag(fs, &o.memoryLimit, "memory-limit", true, "24GiB", "the cap the batch must fit under, `SIZE` (e.g. 24GiB), as set_per_process_memory_fraction sets one")
	gpuFlag(fs, &o.gpu, "or the device it must fit on, a `SIZE` or a GPU name (less --overhead): ")
	sizeFlag(fs, &o.overhead, "overhead", false, "", "memory outside the allocator on that device, `SIZE` (CUDA context, libraries, NCCL; default 768 MiB)")
	fs.IntVar(&o.maxBatch, "max-batch", 65536, "search batches up to `N`")
	fs.IntVar(&o.top, "top", 5, "name `N` stacks per kind")
	fs.StringVar(&o.dim, "dim", "batch", "what the recordings' sizes scale, `DIM`: batch (samples per step) or seq (tokens per sample; --batches then gives the lengths)")
	memoryFlag(fs)
	return func(cc *cmdContext, paths []string) error {
		if len(paths) < 2 {
			return usageErrorf("fit needs two or more snapshots of the job at different batch sizes")
		}
		if o.dim != "batch" && o.dim != "seq" {
			return usageErrorf("--dim %q: batch or seq", o.dim)
		}
		if o.maxBatch < 1 {
			return usageErrorf("--max-batch %d: want 1 or more", o.maxBatch)
		}
		var batches []int
		if o.batches != "" {
			for _, f := range strings.Split(o.batches, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || n < 1 {
					return usageErrorf("--batches %q: want batch sizes of 1 or more, comma-separated", o.batches)
				}
				batches = append(batches, n)
			}
			if len(batches) != len(paths) {
				return usageErrorf("--batches names %d batches for %d files", len(batches), len(paths))
			}
		}
		capacity, capFrom := o.memoryLimit, "--memory-limit"
		switch {
		case o.memoryLimit > 0 && o.gpu.Memory > 0:
			return usageErrorf("give --memory-limit or --device-memory, not both")
		case o.gpu.Memory > 0:
			capacity = o.gpu.Memory - o.overhead
			name := o.gpu.Name
			if name == "" {
				name = units.Bytes(o.gpu.Memory)
			}
			capFrom = fmt.Sprintf("%s less %s outside the allocator (--overhead)", name, units.Bytes(o.overhead))
			if capacity <= 0 {
				return usageErrorf("--device-memory %s less --overhead %s leaves nothing", units.Bytes(o.gpu.Memory), units.Bytes(o.overhead))
			}
		case o.memoryLimit == 0:
			return usageErrorf("fit needs the cap the batch must fit under: --memory-limit SIZE or --device-memory GPU")
		}
		sets := []fit.Setting{{}}
		for _, c := range o.confs {
			s, err := allocator.ParseConf(c)
			if err != nil {
				return usageErrorf("--conf %q: %v", c, err)
			}
			sets = append(sets, fit.Setting{Conf: c, Settings: s})
		}
		var ins []fit.Input
		for i, p := range paths {
			s, err := openSnapshot(cc, p)
			if err != nil {
				return err
			}
			in := fit.Input{Path: p, Snap: s}
			if batches != nil {
				in.Batch = batches[i]
			}
			ins = append(ins, in)
		}
		dev := o.device
		if dev < 0 {
			dev = 0
			for d, evs := range ins[0].Snap.Traces {
				if len(evs) > 0 {
					dev = d
					break
				}
			}
		}
		m, err := fit.New(ins, dev, fit.Options{MemoryLimit: capacity})
		if err != nil {
			return badInput(err)
		}
		rec := m.RecordedSettings()
		sets[0].Settings = rec
		res, err := m.Run(sets, capacity, o.maxBatch)
		if err != nil {
			return badInput(err)
		}
		f := report.Text
		if o.json {
			f = report.JSON
		}
		return report.Write(cc.stdout, f, &report.Fit{Result: res, CapFrom: capFrom, Top: o.top, Dim: o.dim})
	}
}
