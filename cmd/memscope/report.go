package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/flagvalue"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/sweep"
)

// reportOptions are the flags of 'memscope report'.
type reportOptions struct {
	out           string
	title         string
	offline       bool
	trace         string
	run           string
	ops           int
	device        int
	focus, ignore string
}

func reportFlags(fs *pflag.FlagSet) runFunc {
	var o reportOptions
	fs.StringVarP(&o.out, "output", "o", "report.html", "write the page to `FILE`")
	fs.StringVar(&o.title, "title", "", "the page's `TITLE` (default: the snapshots' names)")
	// --offline once refused a page that would load ECharts from a CDN.
	fs.BoolVar(&o.offline, "offline", false, "changes nothing: every page works offline (kept for older scripts)")
	fs.StringVar(&o.run, "run", "", "add the sweep or capture run directory `DIR` (memscope sweep, memscope capture)")
	fs.StringVar(&o.trace, "trace", "", "add the per-operator memory table of the torch.profiler trace `T` (.json or .json.gz), or the chart of an export_memory_timeline file")
	fs.IntVar(&o.ops, "ops", 40, "list the `N` operators that allocate the most (with --trace)")
	flagvalue.Device(fs, &o.device, "show only CUDA device `N`; -1 for every device")
	filterFlags(fs, &o.focus, &o.ignore)
	memoryFlag(fs)
	return func(cc *cmdContext, paths []string) error {
		if o.ops < 1 {
			return usageErrorf("--ops %d: want 1 or more", o.ops)
		}
		if len(paths) == 0 && o.run == "" && o.trace == "" {
			return usageErrorf("missing SNAP argument: give snapshots, a run directory with --run, or a profiler trace with --trace")
		}
		return runReport(cc, o, paths)
	}
}

func runReport(cc *cmdContext, o reportOptions, paths []string) error {
	filter, paths, err := filteredPaths(o.ignore, o.focus, paths)
	if err != nil {
		return err
	}
	if err := refuseOverInput(o.out, append([]string{o.trace, o.run}, paths...)...); err != nil {
		return err
	}
	var page attribution.Page
	for _, p := range paths {
		s, err := openSnapshot(cc, p)
		if err != nil {
			return err
		}
		if err := checkAgainst(cc, p, s, attribution.Options{Filter: filter, Device: o.device}); err != nil {
			return err
		}
		page.Add(s, attribution.Options{Filter: filter, Device: o.device})
		if page.Sections() > attribution.MaxViewSections {
			return usageErrorf("the snapshots hold more than %d devices; one page shows at most %d (pick one with --device, or fewer files)",
				attribution.MaxViewSections, attribution.MaxViewSections)
		}
	}
	opt := report.HTMLOptions{Title: o.title, Version: version()}
	if o.run != "" {
		if opt.Run, err = runView(o.run); err != nil {
			return err
		}
	}
	if o.trace != "" {
		if opt.Ops, opt.Timeline, err = opsView(cc, o.trace, o.ops); err != nil {
			return err
		}
	}
	n, err := writeFile(o.out, func(w io.Writer) error {
		return report.Write(w, report.HTML, &report.Page{Views: page.Views(), Options: opt})
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(cc.stderr, "wrote %s: %s without the ECharts library, %s with ECharts %s inlined: it works offline\n",
		o.out, units.Bytes(n-int64(report.EChartsSize())), units.Bytes(n), report.EChartsVersion)
	return nil
}

// runView reads a sweep or capture run directory.
func runView(dir string) (*report.RunView, error) {
	a, run, err := sweep.ReadDir(dir)
	if err != nil {
		return nil, badInput(err)
	}
	return &report.RunView{Sweep: a, Capture: run}, nil
}

// opsView reads a profiler trace or an export_memory_timeline file for
// the page (report.ProfileViews).
func opsView(cc *cmdContext, path string, top int) (*report.OpsView, *report.TimelineView, error) {
	prof, err := openProfile(cc, path)
	if err != nil {
		return nil, nil, badInput(err)
	}
	ov, tv := report.ProfileViews(cc.shown(path), prof, top)
	return ov, tv, nil
}
