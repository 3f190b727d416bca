package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report"
)

const reportLong = `Report writes one self-contained HTML page about the snapshots: per device,
the four numbers at the peak and the findings in words; memory over time
(allocated, active, reserved, and requested on demand) with the training
phases shaded and zoom; allocated bytes stacked by category and by the
peak's top sites; the peak's call tree as a treemap (click to drill) and the
top sites with their stacks; the per-step phase table; the leak staircase
and its sites; fragmentation (each segment's fill at the peak, the end and
each OOM, and the free holes by size) with its verdict; and every OOM's
post-mortem. Several snapshots make one page with a section per device.
With --run, the page adds a run directory of 'memscope sweep' (peak against
batch size per precision with the fitted line, the OOM frontier and step
time, and the points as a table) or of 'memscope capture' (a row and a bar
per rank); with --run alone the page holds just that. With --trace, it adds
the per-operator memory table of a torch.profiler trace (or, alone, shows
just that).

Sites, stacks and the call tree follow the rule of 'memscope help peak'
(user and library code kept, plumbing folded; --focus, --ignore).

The page stays under 3 MB (without the charting library) whatever the
input: timelines are downsampled so that every peak and valley is kept, and
every list is cut to its largest entries.

Charts use ECharts ` + report.EChartsVersion + `. When memscope finds that build locally it is
inlined and the page works offline. It looks, in order, at --echarts PATH;
$MEMSCOPE_ECHARTS; the cache
DIR=${XDG_CACHE_HOME:-$HOME/.cache}/` + report.EChartsCacheDir + `,
which .ci/run fills, as does
  npm install --prefix DIR` + report.EChartsInstallArgs + `
(the file is DIR/` + report.EChartsFile + `);
then ` + report.EChartsFile + ` in the working
directory and each directory above it; then next to the memscope
executable. Otherwise the page loads it from
` + report.EChartsURL + `
and says so at the top, and memscope prints the npm command in one line;
with --offline, memscope fails instead (exit 2) and writes no page.`

// reportOptions are the flags of 'memscope report'.
type reportOptions struct {
	out           string
	title         string
	echarts       string
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
	fs.StringVar(&o.echarts, "echarts", "", "inline the echarts.min.js build at `PATH` (default: $MEMSCOPE_ECHARTS, the cache, a node_modules nearby)")
	fs.BoolVar(&o.offline, "offline", false, "fail rather than write a page that loads ECharts from the network")
	fs.StringVar(&o.run, "run", "", "add the sweep or capture run directory `DIR` (memscope sweep, memscope capture)")
	fs.StringVar(&o.trace, "trace", "", "add the per-operator memory table of the torch.profiler trace `T` (.json or .json.gz), or the chart of an export_memory_timeline file")
	fs.IntVar(&o.ops, "ops", 40, "list the `N` operators that allocate the most (with --trace)")
	fs.IntVar(&o.device, "device", -1, "show only CUDA device `N`; -1 for every device")
	filterFlags(fs, &o.focus, &o.ignore)
	memoryFlag(fs)
	return func(cc *cmdContext, paths []string) error {
		if o.device < -1 {
			return usageErrorf("--device %d: want a device number, or -1 for all", o.device)
		}
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
	filter, err := attribution.NewFilter(o.ignore, o.focus)
	if err != nil {
		return usageErrorf("%v", err)
	}
	lib, from, err := findECharts(cc, o.echarts, localECharts())
	if err != nil {
		return err
	}
	if lib == nil && o.offline {
		return fmt.Errorf("--offline: no echarts %s build found, so the page would load it from the network; %s",
			report.EChartsVersion, echartsHint())
	}
	paths, err = snapshotPaths(paths)
	if err != nil {
		return err
	}
	if err := refuseOverInput(o.out, append([]string{o.trace, o.run}, paths...)...); err != nil {
		return err
	}
	var analyses []*attribution.Analysis
	sections := 0
	for _, p := range paths {
		s, err := openSnapshot(cc, p)
		if err != nil {
			return err
		}
		if err := checkAgainst(cc, p, s, attribution.Options{Filter: filter, Device: o.device}); err != nil {
			return err
		}
		// The timeline's points, as the page will split them if no later
		// file adds devices: the analysis keeps them from its own replay.
		devs := len(s.Devices())
		if o.device >= 0 {
			devs = 1
		}
		points := attribution.ViewOptionsFor(sections + devs).Series.MaxPoints
		an := attribution.Analyze(s, attribution.Options{Filter: filter, Device: o.device, SeriesPoints: points})
		sections += len(an.Devices)
		if sections > attribution.MaxViewSections {
			return usageErrorf("the snapshots hold more than %d devices; one page shows at most %d (pick one with --device, or fewer files)",
				attribution.MaxViewSections, attribution.MaxViewSections)
		}
		analyses = append(analyses, an)
	}
	vo := attribution.ViewOptionsFor(sections)
	var views []*attribution.View
	for _, an := range analyses {
		views = append(views, attribution.NewView(an, vo))
	}
	opt := report.HTMLOptions{Title: o.title, Version: version(), ECharts: lib, EChartsFrom: from}
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
	n, err := writeFile(o.out, func(w io.Writer) error { return report.Write(w, report.HTML, &report.Page{Views: views, Options: opt}) })
	if err != nil {
		return err
	}
	how := "inlined from " + from + ": it works offline"
	if lib == nil {
		how = "loaded from " + report.EChartsURL + ": the charts need network; " + echartsHint()
	} else {
		n -= int64(len(lib))
	}
	fmt.Fprintf(cc.stderr, "wrote %s: %s without the ECharts library, which is %s\n", o.out, units.Bytes(n), how)
	return nil
}

// echartsPlace is a place report looks for the echarts build: how names
// it in messages ("" for a place found by looking, which is quietly
// skipped when it holds no file).
type echartsPlace struct{ path, how string }

// localECharts lists where report looks for the build when --echarts is
// not given: $MEMSCOPE_ECHARTS, the user's cache, node_modules in the
// working directory and each one above it, node_modules next to the
// executable.
func localECharts() []echartsPlace {
	cache, _ := os.UserCacheDir()
	wd, _ := os.Getwd()
	exe, _ := os.Executable()
	return echartsPlaces(os.Getenv("MEMSCOPE_ECHARTS"), cache, wd, exe)
}

// echartsPlaces is localECharts for the given environment; empty
// arguments add no place.
func echartsPlaces(env, cacheDir, wd, exe string) []echartsPlace {
	var out []echartsPlace
	add := func(path, how string) {
		for _, p := range out {
			if p.path == path {
				return
			}
		}
		out = append(out, echartsPlace{path, how})
	}
	if env != "" {
		add(env, "$MEMSCOPE_ECHARTS")
	}
	file := filepath.FromSlash(report.EChartsFile)
	if cacheDir != "" {
		add(filepath.Join(cacheDir, filepath.FromSlash(report.EChartsCacheDir), file), "")
	}
	if wd != "" {
		for dir := filepath.Clean(wd); ; {
			add(filepath.Join(dir, file), "")
			up := filepath.Dir(dir)
			if up == dir {
				break
			}
			dir = up
		}
	}
	if exe != "" {
		add(filepath.Join(filepath.Dir(exe), file), "")
	}
	return out
}

// echartsHint says in one clause how to get the build where report finds
// it: the npm command that fills the cache, or $MEMSCOPE_ECHARTS.
func echartsHint() string {
	dir := "~/.cache/" + report.EChartsCacheDir
	if cache, err := os.UserCacheDir(); err == nil {
		dir = filepath.Join(cache, filepath.FromSlash(report.EChartsCacheDir))
	}
	return fmt.Sprintf("to inline it, run '%s' or set MEMSCOPE_ECHARTS to an echarts.min.js of version %s",
		report.EChartsInstallAt(dir), report.EChartsVersion)
}

// findECharts returns the pinned echarts build to inline and where it came
// from: the --echarts flag, else the first usable file of places. A flag
// that names an unusable file is an error; an unusable file found in
// places is a warning and the next place is tried; with none, the page
// references the library instead (nil).
func findECharts(cc *cmdContext, flag string, places []echartsPlace) ([]byte, string, error) {
	if flag != "" {
		b, err := readECharts(flag)
		if err != nil {
			return nil, "", usageErrorf("--echarts: %v", err)
		}
		return b, flag, nil
	}
	for _, c := range places {
		b, err := readECharts(c.path)
		switch {
		case err == nil:
			return b, c.path, nil
		case c.how == "" && errors.Is(err, fs.ErrNotExist):
			// not installed here: nothing to say
		default:
			cc.warnf("%s%v; looking further", prefix(c.how), err)
		}
	}
	return nil, "", nil
}

func prefix(how string) string {
	if how == "" {
		return ""
	}
	return how + ": "
}

func readECharts(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := report.CheckECharts(b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// runView reads a sweep or capture run directory.
func runView(dir string) (*report.RunView, error) {
	r, err := readRunDir(dir)
	if err != nil {
		return nil, err
	}
	switch r := r.(type) {
	case *report.Sweep:
		return &report.RunView{Sweep: r.Analysis}, nil
	case *report.Run:
		return &report.RunView{Capture: r.Summary}, nil
	}
	panic(fmt.Sprintf("invariant violation: readRunDir returned a %T", r))
}

// opsView reads a profiler trace and tabulates its operators on the device
// with the highest allocated peak; an export_memory_timeline file instead
// becomes the category chart.
func opsView(cc *cmdContext, path string, top int) (*report.OpsView, *report.TimelineView, error) {
	prof, err := openProfile(cc, path)
	if err != nil {
		return nil, nil, badInput(err)
	}
	if prof.Timeline != nil {
		return nil, &report.TimelineView{Source: path, Timeline: prof.Timeline}, nil
	}
	t := prof.Trace
	tb := t.OpTable(t.PeakDevice(), false)
	ov := &report.OpsView{Source: path, Table: tb, Top: top}
	for _, w := range t.Warnings {
		ov.Warnings = append(ov.Warnings, w.String())
	}
	return ov, nil, nil
}
