package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/trace"
)

func opsFlags(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "write JSON instead of text; sizes are raw bytes")
	sortBy := fs.String("sort", "self", "sort rows by `KEY`: self (bytes allocated by the op itself, or freed when it freed more: a backward op freeing saved tensors), alloc (bytes allocated by the op itself, frees ignored), total (with the ops nested in it), peak (bytes still live at the peak), net (|allocated − freed|)")
	by := fs.String("by", "op", "group by `WHAT`: op, or module (nn.Module)")
	top := fs.Int("top", 30, "print the first `N` rows (-1: all)")
	noSplit := fs.Bool("no-backward-labels", false, "merge backward ops with their forward namesakes instead of labelling them \"(backward of …)\"")
	perInstance := fs.Bool("per-instance", false, "one backward row per module instance (\"(backward of aten::linear in nn.Module: Linear_3)\") instead of one per operator")
	cpu := fs.Bool("cpu", false, "also list CPU memory (by default only GPU devices, unless the trace has CPU memory only)")
	device := new(int)
	deviceFlag(fs, device, "list only GPU device `N`; -1 for every device")
	memoryFlag(fs)
	return func(cc *cmdContext, paths []string) error {
		keys := map[string]trace.SortKey{"self": trace.BySelf, "alloc": trace.BySelfAlloc, "total": trace.ByTotal, "peak": trace.ByPeakLive, "net": trace.BySelfNet}
		key, ok := keys[*sortBy]
		if !ok {
			return usageErrorf("--sort %q: want self, alloc, total, peak or net", *sortBy)
		}
		if *noSplit && *perInstance {
			return usageErrorf("--per-instance splits backward rows by module instance and --no-backward-labels merges them: give one")
		}
		if *by != "op" && *by != "module" {
			return usageErrorf("--by %q: want op or module", *by)
		}
		format := report.Text
		if *jsonOut {
			format = report.JSON
		}
		rw := report.NewWriter(cc.stdout, format)
		for _, p := range paths {
			prof, err := openProfile(cc, p)
			if errors.Is(err, trace.ErrPickle) {
				return badInput(fmt.Errorf("%w: ops reads profiler traces; memscope summary, peak, diff and pprof read snapshots", err))
			}
			if err != nil {
				return badInput(err)
			}
			if ct := prof.Timeline; ct != nil {
				if err := rw.Write(&report.MemoryTimeline{Source: p, Timeline: ct}); err != nil {
					return err
				}
				continue
			}
			tr := prof.Trace
			for _, w := range tr.Warnings {
				cc.warnf("%s: %s", p, w.Message)
			}
			devs := tr.Devices()
			if len(devs) == 0 {
				return badInput(fmt.Errorf("%s: no [memory] events: record the trace with torch.profiler.profile(profile_memory=True)", p))
			}
			// A trace of a model run on the CPU has CPU memory only: its
			// tables are the answer, shown without --cpu.
			cpuOnly := !slices.ContainsFunc(devs, func(d trace.Device) bool { return !d.CPU() })
			shown := 0
			var present []string
			for _, dev := range devs {
				if !dev.CPU() {
					present = append(present, dev.String())
				}
				if dev.CPU() && !*cpu && !cpuOnly || *device >= 0 && (dev.CPU() || int(dev.ID) != *device) {
					continue
				}
				shown++
				var tb *trace.Table
				if *by == "module" {
					tb = tr.ModuleTable(dev)
				} else {
					rows := trace.BackwardByOp
					switch {
					case *noSplit:
						rows = trace.MergeBackward
					case *perInstance:
						rows = trace.BackwardByInstance
					}
					tb = tr.OpTableRows(dev, rows)
				}
				tb.Sort(key)
				if err := rw.Write(&report.Ops{Source: p, Table: tb, Top: *top, CPUOnly: cpuOnly}); err != nil {
					return err
				}
			}
			if shown == 0 {
				return badInput(fmt.Errorf("--device %d: %s has no memory events of that device; it has %s", *device, p, orNone(present)))
			}
		}
		return rw.Close()
	}
}

// orNone joins names, or says there are none.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none on a GPU"
	}
	return strings.Join(names, ", ")
}
