package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/internal/flagvalue"
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
	flagvalue.Device(fs, device, "list only GPU device `N`; -1 for every device")
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
		opt := trace.TablesOptions{ByModule: *by == "module", Rows: trace.BackwardByOp, Sort: key, CPU: *cpu, Device: *device}
		switch {
		case *noSplit:
			opt.Rows = trace.MergeBackward
		case *perInstance:
			opt.Rows = trace.BackwardByInstance
		}
		rw := report.NewWriter(cc.stdout, formatOf(*jsonOut))
		for _, p := range paths {
			prof, err := openProfile(cc, p)
			if errors.Is(err, trace.ErrPickle) {
				return badInput(fmt.Errorf("%w: ops reads profiler traces; memscope summary, peak, diff and pprof read snapshots", err))
			}
			if err != nil {
				return badInput(err)
			}
			if ct := prof.Timeline; ct != nil {
				if err := rw.Write(&report.MemoryTimeline{Source: cc.shown(p), Timeline: ct}); err != nil {
					return err
				}
				continue
			}
			for _, w := range prof.Trace.Warnings {
				cc.warnf("%s: %s", p, w.Message)
			}
			opt.Source = cc.shown(p)
			tables, cpuOnly, err := prof.Trace.Tables(opt)
			if err != nil {
				return badInput(err)
			}
			for _, tb := range tables {
				if err := rw.Write(&report.Ops{Source: cc.shown(p), Table: tb, Top: *top, CPUOnly: cpuOnly}); err != nil {
					return err
				}
			}
		}
		return rw.Close()
	}
}
