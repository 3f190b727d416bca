package main

import (
	"github.com/spf13/pflag"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/flagvalue"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/trace"
)

// runSummary runs 'memscope summary'. It is a variable so that tests can see
// what the command line turned into without decoding a snapshot.
var runSummary = summary

// summary prints, for each snapshot in paths, the summary described in the
// command's usage, as text or (opts.json) JSON, to cc.stdout.
func summary(cc *cmdContext, opts summaryOptions, paths []string) error {
	var prof trace.Profile
	if opts.trace != "" {
		var err error
		if prof, err = openProfile(cc, opts.trace); err != nil {
			return badInput(err)
		}
	}
	filter, err := attribution.NewFilter(opts.ignore, opts.focus)
	if err != nil {
		return usageErrorf("%v", err)
	}
	paths, err = snapshotPaths(paths)
	if err != nil {
		return err
	}
	rw := report.NewWriter(cc.stdout, formatOf(opts.json))
	for _, path := range paths {
		an, err := analyzeSnapshot(cc, path, attribution.Options{Filter: filter, Device: opts.device})
		if err != nil {
			return err
		}
		sum := attribution.Summarize(an, opts.top)
		sum.JoinProfile(an, opts.trace, prof, opts.top)
		sum.AddDeviceUsed(path)
		if err := rw.Write(&report.Summary{Sum: sum, Stacks: opts.stacks, AllFrames: opts.allFrames}); err != nil {
			return err
		}
	}
	return rw.Close()
}

// summaryOptions are the flags of 'memscope summary'.
type summaryOptions struct {
	json   bool   // JSON instead of text
	top    int    // allocation sites to list
	device int    // CUDA device to report; -1 for all
	stacks bool   // print each top site's full stack
	run    string // a capture or sweep run directory to summarize
	trace  string // a profiler trace of the same run, joined by operator
	// focus and ignore choose the frames sites are charged to
	// (attribution.NewFilter).
	focus, ignore string
	// allFrames prints the stacks' native frames (C++, CPython, libc) too.
	allFrames bool
}

func summaryFlags(fs *pflag.FlagSet) runFunc {
	var o summaryOptions
	fs.BoolVar(&o.json, "json", false, "write JSON instead of text; sizes are raw bytes")
	fs.IntVar(&o.top, "top", 10, "list the `N` sites holding the most memory at the peak")
	flagvalue.Device(fs, &o.device, "report only CUDA device `N`; -1 for every device")
	fs.BoolVar(&o.stacks, "stacks", false, "print the Python stack of each top site, native frames counted (JSON always has every frame)")
	fs.BoolVar(&o.allFrames, "all-frames", false, "with --stacks, print the native frames too (C++, CPython, libc: a stacks=\"all\" recording)")
	fs.StringVar(&o.run, "run", "", "summarize the capture or sweep run directory `DIR` (memscope capture, sweep)")
	fs.StringVar(&o.trace, "trace", "", "join with the torch.profiler `TRACE` of the same run: the peak by operator, or by category for an export_memory_timeline file")
	filterFlags(fs, &o.focus, &o.ignore)
	memoryFlag(fs)
	return func(cc *cmdContext, paths []string) error {
		if o.run != "" {
			return runSummaryRun(cc, o, paths)
		}
		if len(paths) == 0 {
			return usageErrorf("missing SNAP argument")
		}
		if o.top < 0 {
			return usageErrorf("--top %d: want 0 or more", o.top)
		}
		return runSummary(cc, o, paths)
	}
}
