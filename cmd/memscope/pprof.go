package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/internal/flagvalue"
	"github.com/memscope/memscope/internal/memlimit"
	"github.com/memscope/memscope/report"
)

func pprofFlags(fs *pflag.FlagSet) runFunc {
	var o analysisOptions
	flagvalue.Device(fs, &o.device, "profile CUDA device `N`; -1: the only device, or the first with recorded events")
	filterFlags(fs, &o.focus, &o.ignore)
	at := fs.String("at", "peak", "the `MOMENT` for inuse_*: peak, end, oom, oom:N, event:N, step:N:PHASE[:M], or a time such as 1.5s")
	out := fs.StringP("output", "o", "mem.pb.gz", "write the profile to `FILE`")
	memoryFlag(fs)
	o.allocSizes = true // every allocation is profiled: one replay, not two
	o.noModel = true    // a profile holds no model verdict
	return func(cc *cmdContext, paths []string) error {
		snaps, err := snapshotPaths(paths)
		if err != nil {
			return err
		}
		if len(snaps) > 1 {
			return usageErrorf("%s holds %d snapshots (one per rank); profile one: %s", paths[0], len(snaps), strings.Join(snaps, ", "))
		}
		if err := refuseOverInput(*out, snaps[0]); err != nil {
			return err
		}
		an, err := o.analyze(cc, snaps[0])
		if err != nil {
			return err
		}
		memlimit.Churn() // building and encoding the profile makes garbage on top of the snapshot
		d := an.Primary()
		if d == nil {
			return badInput(fmt.Errorf("%s: no device has segments or recorded events", snaps[0]))
		}
		m, err := d.Moment(*at)
		if err != nil {
			return usageErrorf("--at: %v", err)
		}
		if _, err := writeFile(*out, func(w io.Writer) error {
			return report.Write(w, report.PProf, &report.Profile{Analysis: an, Device: d, Moment: m, Allocs: d.EachAllocation()})
		}); err != nil {
			return err
		}
		fmt.Fprintf(cc.stderr, "wrote %s (device %d, inuse at %s); explore it with: go tool pprof -http=: %s\n", *out, d.Device, m.Label, *out)
		return nil
	}
}
