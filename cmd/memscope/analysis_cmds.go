package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/internal/flagvalue"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/trace"
)

// analysisOptions are the flags every analysis command shares.
type analysisOptions struct {
	json          bool
	device        int
	focus, ignore string
	top           int
	allocSizes    bool // keep each alloc's block size (pprof)
	noModel       bool // leave out the allocator model's verdicts (diff, peak, leaks and pprof print none)
}

// define defines them in fs; withTop adds --top, for the commands that
// list the largest sites.
func (o *analysisOptions) define(fs *pflag.FlagSet, withTop bool) {
	fs.BoolVar(&o.json, "json", false, "write JSON instead of text; sizes are raw bytes")
	flagvalue.Device(fs, &o.device, "analyse only CUDA device `N`; -1 for every device")
	o.top = -1
	if withTop {
		fs.IntVar(&o.top, "top", 15, "list the `N` largest sites")
	}
	filterFlags(fs, &o.focus, &o.ignore)
	memoryFlag(fs)
}

// filterFlags defines --focus and --ignore, which every command that
// names sites takes: see help/sites.txt.
func filterFlags(fs *pflag.FlagSet, focus, ignore *string) {
	fs.StringVar(focus, "focus", "", "count only frames whose file matches `REGEXP` when choosing sites (the rest fold as plumbing does)")
	fs.StringVar(ignore, "ignore", "", "fold frames whose file matches `REGEXP` instead of the default plumbing (torch, the standard library, generated code, memscope's harness, the HF Trainer, accelerate, Lightning; C++ always folds)")
}

// analyze opens and analyses one snapshot.
func (o *analysisOptions) analyze(cc *cmdContext, path string) (*attribution.Analysis, error) {
	f, err := attribution.NewFilter(o.ignore, o.focus)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return analyzeSnapshot(cc, path, attribution.Options{Filter: f, Device: o.device, AllocSizes: o.allocSizes, NoModel: o.noModel})
}

// analyzePair opens and analyses two snapshots at once, one on each core
// (diff waits for the slower, not for their sum); the same file named
// twice is read and analysed once.
func (o *analysisOptions) analyzePair(cc *cmdContext, pa, pb string) (a, b *attribution.Analysis, err error) {
	f, err := attribution.NewFilter(o.ignore, o.focus)
	if err != nil {
		return nil, nil, usageErrorf("%v", err)
	}
	opt := attribution.Options{Filter: f, Device: o.device, AllocSizes: o.allocSizes, NoModel: o.noModel}
	paths := []string{pa, pb}
	if sameFile(pa, pb) {
		paths = paths[:1]
	}
	snaps, err := openSnapshots(cc, paths)
	if err != nil {
		return nil, nil, err
	}
	for i, s := range snaps {
		if err := checkAgainst(cc, paths[i], s, opt); err != nil {
			return nil, nil, err
		}
	}
	if len(snaps) == 1 {
		a = attribution.Analyze(snaps[0], opt)
		return a, a, nil
	}
	done := make(chan struct{})
	go func() { b = attribution.Analyze(snaps[1], opt); close(done) }()
	a = attribution.Analyze(snaps[0], opt)
	<-done
	return a, b, nil
}

// sameFile reports whether two paths name one existing file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// format is the output format the flags chose.
func (o *analysisOptions) format() report.Format { return formatOf(o.json) }

// eachFile analyses every path and writes the result fn makes of each
// analysis, as one output.
func (o *analysisOptions) eachFile(cc *cmdContext, paths []string, fn func(path string, an *attribution.Analysis) (report.Result, error)) error {
	paths, err := snapshotPaths(paths)
	if err != nil {
		return err
	}
	rw := report.NewWriter(cc.stdout, o.format())
	for _, p := range paths {
		an, err := o.analyze(cc, p)
		if err != nil {
			return err
		}
		r, err := fn(cc.shown(p), an)
		if err != nil {
			return err
		}
		if err := rw.Write(r); err != nil {
			return err
		}
	}
	return rw.Close()
}

func peakFlags(fs *pflag.FlagSet) runFunc {
	var o analysisOptions
	o.define(fs, true)
	o.noModel = true // the moment's sites, categories and phases hold no model verdict
	at := fs.String("at", "peak", "the `MOMENT`: peak, end, oom, oom:N, event:N, step:N:PHASE (that phase's peak; with gradient accumulation the highest micro-batch's, as the phase table shows), step:N:PHASE:M (micro-batch M, from 0), or a time after the first event such as 1.5s")
	tree := fs.Bool("tree", false, "print the call tree of the live blocks instead of the tables")
	tracePath := fs.String("trace", "", "join with the torch.profiler `TRACE` of the same run and group by operator too, or by category for an export_memory_timeline file")
	return func(cc *cmdContext, paths []string) error {
		paths, err := snapshotPaths(paths)
		if err != nil {
			return err
		}
		var prof trace.Profile
		if *tracePath != "" {
			if prof, err = openProfile(cc, *tracePath); err != nil {
				return badInput(err)
			}
		}
		tr, tl := prof.Trace, prof.Timeline
		return o.eachFile(cc, paths, func(path string, an *attribution.Analysis) (report.Result, error) {
			r := &report.Peak{Source: path, Analysis: an, Top: o.top, Tree: *tree, Phases: *at == "peak", Trace: *tracePath}
			switch {
			case tr != nil:
				r.JoinedBy = "ops"
			case tl != nil:
				r.JoinedBy = "timeline"
			}
			if r.Devices, err = an.At(*at, tr, tl); err != nil {
				return nil, usageErrorf("--at: %v", err)
			}
			return r, nil
		})
	}
}

func leaksFlags(fs *pflag.FlagSet) runFunc {
	var o analysisOptions
	o.define(fs, false)
	o.noModel = true // the leak verdict holds no model verdict
	return func(cc *cmdContext, paths []string) error {
		return o.eachFile(cc, paths, func(path string, an *attribution.Analysis) (report.Result, error) {
			return &report.Leaks{Source: path, Analysis: an}, nil
		})
	}
}

func fragFlags(fs *pflag.FlagSet) runFunc {
	var o analysisOptions
	o.define(fs, false)
	simulate := fs.Bool("simulate", false, "also run the recorded requests under other allocator settings (expandable_segments, max_split_size_mb, garbage_collection_threshold) and say which lower the reserved peak (see memscope whatif)")
	return func(cc *cmdContext, paths []string) error {
		return o.eachFile(cc, paths, func(path string, an *attribution.Analysis) (report.Result, error) {
			r := &report.Frag{Source: path, Analysis: an}
			if *simulate {
				for _, d := range an.Devices {
					r.Settings = append(r.Settings, d.SimulateSettings())
					r.SettingsWhy = append(r.SettingsWhy, d.SimulateSettingsWhy())
				}
			}
			return r, nil
		})
	}
}

func oomFlags(fs *pflag.FlagSet) runFunc {
	var o analysisOptions
	o.define(fs, true)
	return func(cc *cmdContext, paths []string) error {
		return o.eachFile(cc, paths, func(path string, an *attribution.Analysis) (report.Result, error) {
			return &report.OOMs{Source: path, Analysis: an, Top: o.top}, nil
		})
	}
}

func diffFlags(fs *pflag.FlagSet) runFunc {
	var o analysisOptions
	o.define(fs, true)
	o.noModel = true // the diff holds no fragmentation or OOM verdict
	return func(cc *cmdContext, paths []string) error {
		pa, sweepA, err := capture.DiffPath(paths[0])
		if err != nil {
			return badInput(err)
		}
		pb, sweepB, err := capture.DiffPath(paths[1])
		if err != nil {
			return badInput(err)
		}
		switch {
		case sweepA && sweepB:
			return runDiffSweeps(cc, &o, paths[0], paths[1])
		case sweepA || sweepB:
			return usageErrorf("diff compares two sweep runs, or two snapshots (files or capture run directories), not one of each")
		}
		a, b, err := o.analyzePair(cc, pa, pb)
		if err != nil {
			return err
		}
		return report.Write(cc.stdout, o.format(), &report.Diff{A: cc.shown(paths[0]), B: cc.shown(paths[1]), Diff: attribution.Compare(a, b), Top: o.top})
	}
}

// checkOptions are the limits of 'memscope check'.
type checkOptions struct {
	analysisOptions
	lim attribution.Limits
}

func checkFlags(fs *pflag.FlagSet) runFunc {
	o := checkOptions{lim: attribution.NoLimits}
	fs.BoolVar(&o.json, "json", false, "write the verdict as JSON")
	flagvalue.Device(fs, &o.device, "check only CUDA device `N`; -1 for every device")
	filterFlags(fs, &o.focus, &o.ignore)
	flagvalue.Size(fs, &o.lim.MaxPeak, "max-peak", false, "", "fail when peak allocated exceeds `SIZE` (e.g. 40GiB)")
	flagvalue.Size(fs, &o.lim.MaxReserved, "max-reserved", false, "", "fail when peak reserved exceeds `SIZE`")
	flagvalue.Size(fs, &o.lim.MaxLeak, "max-leak", false, "", "fail when a leak grows by more than `SIZE` per step (0: any leak fails)")
	fs.Float64Var(&o.lim.MaxFrag, "max-frag", -1, "fail when more than `FRACTION` (0–1) of reserved memory is free at the peak")
	fs.BoolVar(&o.lim.AllowOOM, "allow-oom", false, "do not fail on a recorded out-of-memory event")
	fs.BoolVar(&o.lim.AllowUnjudged, "allow-unjudged", false, "pass a limit the recording cannot judge (--max-leak with too few steps or no allocation history, --max-frag with nothing reserved) instead of failing on it")
	memoryFlag(fs)
	return func(cc *cmdContext, paths []string) error {
		lim := o.lim
		if lim.MaxFrag > 1 {
			return usageErrorf("--max-frag %g: a fraction of reserved memory, from 0 to 1 (0.25 for 25%%)", lim.MaxFrag)
		}
		if !lim.Any() {
			return usageErrorf("nothing to check: --allow-oom and no limit given; set --max-peak, --max-reserved, --max-leak or --max-frag")
		}
		snaps, err := snapshotPaths(paths)
		if err != nil {
			return err
		}
		var res report.Check
		for _, p := range snaps {
			an, err := o.analyze(cc, p)
			if err != nil {
				return err
			}
			res.Files = append(res.Files, report.CheckFile{Source: cc.shown(p), Truncated: an.Snapshot.Salvaged(), Breaches: an.Check(lim)})
		}
		if err := report.Write(cc.stdout, o.format(), &res); err != nil {
			return err
		}
		if broken := res.Broken(); len(broken) > 0 { // broken in the valid part: broken whatever was lost
			return checkFailedf("%s", strings.Join(broken, "; "))
		}
		if cut := res.Truncated(); len(cut) > 0 { // the gate cannot vouch for what it could not read
			return badInput(fmt.Errorf("%s: cut short: every limit holds on the part read, but the part lost was not checked", strings.Join(cut, ", ")))
		}
		return nil
	}
}
