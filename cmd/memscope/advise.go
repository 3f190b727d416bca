package main

import (
	"github.com/spf13/pflag"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/flagvalue"
	"github.com/memscope/memscope/report"
)

func adviseFlags(fs *pflag.FlagSet) runFunc {
	// Advise names no sites, so it takes no --focus or --ignore.
	o := analysisOptions{top: -1, allocSizes: true}
	fs.BoolVar(&o.json, "json", false, "write JSON instead of text; sizes are raw bytes")
	flagvalue.Device(fs, &o.device, "advise on CUDA device `N` only; -1 for every device")
	memoryFlag(fs)
	var gpu budget.GPU
	flagvalue.GPU(fs, &gpu, "hold each fix against a device of `SIZE` or a GPU name: ")
	ranks := fs.Int64("ranks", budget.DefaultRanks, "data-parallel `N` ranks to suggest optimizer-state sharding over")
	chunks := fs.Int64("loss-chunks", 8, "slices `N` of the chunked cross-entropy suggested")
	frontier := fs.Bool("frontier", false, "the files are one job at two or more batches (b1/, b2/ … in their names): carry the fixes along memscope fit's curve, the largest batch that fits --device-memory with each")
	return func(cc *cmdContext, paths []string) error {
		if *frontier {
			if gpu.Memory <= 0 {
				return usageErrorf("--frontier: give the device the batch must fit: --device-memory SIZE or a GPU name")
			}
			if fs.Changed("ranks") || fs.Changed("loss-chunks") {
				return usageErrorf("--frontier carries advise's fixes as fit does (8 ranks, 8 loss chunks); --ranks and --loss-chunks do not apply")
			}
			fo := fitDefaults()
			fo.json, fo.device, fo.gpu, fo.advise = o.json, o.device, gpu, true
			return runFit(cc, fo, paths)
		}
		opt := attribution.AdviseOptions{Ranks: *ranks, LossChunks: *chunks, Settings: true, DeviceName: gpu.Name, DeviceMemory: gpu.Memory}
		if *ranks < 2 {
			return usageErrorf("--ranks %d: want 2 or more", *ranks)
		}
		if *chunks < 2 {
			return usageErrorf("--loss-chunks %d: want 2 or more", *chunks)
		}
		return o.eachFile(cc, paths, func(path string, an *attribution.Analysis) (report.Result, error) {
			return &report.Advice{Source: cc.shown(path), Devices: an.Advise(opt)}, nil
		})
	}
}
