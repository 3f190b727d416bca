package main

import (
	"github.com/spf13/pflag"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/report"
)

// adviseLong is 'memscope advise's help.
const adviseLong = `Advise reads each allocator snapshot of a training run and says what holds
the peak of allocated bytes, by term: model states (parameters, gradients,
optimizer state), saved activations, logits and loss, temporaries, a leak,
the rest, and, on top of the peak, fragmentation (reserved but not
allocated). Then it lists the fixes that lower the peak, cheapest first,
each with the bytes it removes computed from the snapshot's own blocks: the
fp32 logits and their gradients for a fused or chunked cross-entropy; each
layer's saved activations but its input for full checkpointing, given back
while the layer is recomputed; the optimizer's moments halved for bf16
moments, a quarter for 8-bit ones, or 1/N for sharding over --ranks; the
foreach optimizer's temporaries (made under torch/optim inside
Optimizer.step and freed in it) for a fused step; a leak's piled-up blocks;
the batch's tensors halved, with the gradients there from the start, for
half the micro-batch. Each fix's new peak is the highest the peak's step
would reach with it, event by event, so a fix that moves the peak elsewhere
is predicted where the peak goes. With --device-memory GPU|SIZE every fix
says whether it fits, and when none fits alone, the cheapest run of them
that does: fixes added cheapest first, their changes to each block
composed (two that shrink the logits do not remove them twice).

On a run that ran out of memory inside a step, that step is the one
advised, held against the memory it had: --device-memory when given, else
the per-process cap the OOM brackets (between the most reserved and that
plus the segment refused), else the device. Its need is what was live at
the OOM plus what it still had to allocate: the failed request, or at an
Adam-family optimizer's first step the rest of its two moments per
parameter (then an optimizer with no state and the state on the CPU are
offered too). Each fix says the step's peak with it, at least, and
"fits", "tight", "cannot tell" (inside the cap's bracket) or "does not
fit"; those that fit come first, and when none fits alone, the cheapest
run of them that does, or that none does. A step cut short in its forward
(no backward recorded) gets the forward's fixes.

The fixes use the words of 'memscope budget', which predicts from a
config. A recording with no backward (inference) that did not run out of
memory in a forward is reported as such: advise covers training peaks and
generate()-style inference.`

func adviseFlags(fs *pflag.FlagSet) runFunc {
	// Advise names no sites, so it takes no --focus or --ignore.
	o := analysisOptions{top: -1, allocSizes: true}
	fs.BoolVar(&o.json, "json", false, "write JSON instead of text; sizes are raw bytes")
	deviceFlag(fs, &o.device, "advise on CUDA device `N` only; -1 for every device")
	memoryFlag(fs)
	var gpu budget.GPU
	gpuFlag(fs, &gpu, "hold each fix against a device of `SIZE` or a GPU name: ")
	ranks := fs.Int64("ranks", budget.DefaultRanks, "data-parallel `N` ranks to suggest optimizer-state sharding over")
	chunks := fs.Int64("loss-chunks", 8, "slices `N` of the chunked cross-entropy suggested")
	return func(cc *cmdContext, paths []string) error {
		opt := attribution.AdviseOptions{Ranks: *ranks, LossChunks: *chunks, Settings: true, DeviceName: gpu.Name, DeviceMemory: gpu.Memory}
		if *ranks < 2 {
			return usageErrorf("--ranks %d: want 2 or more", *ranks)
		}
		if *chunks < 2 {
			return usageErrorf("--loss-chunks %d: want 2 or more", *chunks)
		}
		return o.eachFile(cc, paths, func(path string, an *attribution.Analysis) (report.Result, error) {
			r := &report.Advice{Source: path}
			for _, d := range an.Devices {
				if len(d.Timeline.Events) == 0 && len(an.Devices) > 1 {
					continue
				}
				r.Devices = append(r.Devices, report.AdviceDevice{Device: d.Device, Advice: d.Advise(opt), Timeline: d.Timeline})
			}
			return r, nil
		})
	}
}
