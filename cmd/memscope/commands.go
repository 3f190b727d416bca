package main

import (
	"embed"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/report"
)

// command is one entry of the command table. The overview, each command's
// help and the checking of its arguments are all generated from these fields,
// so the help cannot disagree with what the command accepts.
type command struct {
	name  string // what the user types: memscope NAME
	short string // one line for the overview, lower case, no final period
	// args are the positional arguments as the synopsis shows them, and say
	// how many the command takes: "SNAP..." is one or more, "[COMMAND]" at
	// most one, "A B" exactly two, "" none. See parseArgs.
	args string
	// long is the help after the synopsis: paragraphs, wrapped at 80 columns.
	long string

	// flags defines the command's flags in fs, a fresh set for this one
	// command line, and returns the function that runs the command. That
	// function reads the flag values, so it is called only after fs.Parse:
	// typically flags declares an options struct, binds its fields to flags
	// and returns a closure over it.
	flags func(fs *pflag.FlagSet) runFunc
}

// runFunc runs a command on its positional arguments, whose count run has
// already checked against command.args.
type runFunc func(cc *cmdContext, args []string) error

// cmdContext is what a running command gets besides its flags and arguments.
type cmdContext struct {
	stdout io.Writer // results: text, JSON
	stderr io.Writer // warnings and diagnostics
	// maxMemory is --max-memory, for the commands that take it: the
	// decoding budget in bytes; 0 for the default.
	maxMemory int64
}

// commands is the command table, in the order the overview lists them. It is
// filled in init because the help command reads it.
var commands []*command

func init() {
	commands = []*command{
		{
			name:  "summary",
			short: "the four memory numbers at peak and at end, top sites, findings",
			args:  "[SNAP...]",
			long:  helpText("summary"),
			flags: summaryFlags,
		},
		{
			name:  "peak",
			short: "what was live at the peak (or another moment) by site, category and stream",
			args:  "SNAP...",
			long:  helpText("peak"),
			flags: peakFlags,
		},
		{
			name:  "leaks",
			short: "step-over-step growth: the floor after each step and the sites that keep memory",
			args:  "SNAP...",
			long:  helpText("leaks"),
			flags: leaksFlags,
		},
		{
			name:  "frag",
			short: "free memory inside reserved segments at the peak, the end and each OOM",
			args:  "SNAP...",
			long:  helpText("frag"),
			flags: fragFlags,
		},
		{
			name:  "oom",
			short: "post-mortem of each out-of-memory event: capacity or fragmentation",
			args:  "SNAP...",
			long:  helpText("oom"),
			flags: oomFlags,
		},
		{
			name:  "whatif",
			short: "the recorded requests under other allocator settings: peak reserved, segments, OOM",
			args:  "SNAP",
			long:  helpText("whatif"),
			flags: whatifFlags,
		},
		{
			name:  "fit",
			short: "the largest batch that fits a cap, from snapshots at two or more small batches",
			args:  "SNAP SNAP...",
			long:  helpText("fit"),
			flags: fitFlags,
		},
		{
			name:  "ranks",
			short: "a job's ranks compared: peaks, the median, outliers and what differs by site",
			args:  "PATH...",
			long:  helpText("ranks"),
			flags: ranksFlags,
		},
		{
			name:  "diff",
			short: "what grew between two snapshots, by site, category and phase",
			args:  "A B",
			long:  helpText("diff"),
			flags: diffFlags,
		},
		{
			name:  "check",
			short: "CI gate: exit 1 on a recorded OOM or a broken limit (peak, reserved, leak, fragmentation)",
			args:  "SNAP...",
			long:  helpText("check"),
			flags: checkFlags,
		},
		{
			name:  "ops",
			short: "per-operator memory from a torch.profiler trace, like key_averages",
			args:  "TRACE...",
			long:  helpText("ops"),
			flags: opsFlags,
		},
		{
			name:  "pprof",
			short: "a pprof profile: memory live at a moment and every allocation, by Python frame",
			args:  "SNAP",
			long:  helpText("pprof"),
			flags: pprofFlags,
		},
		{
			name:  "budget",
			short: "predict a step's memory from a model config, and hold it against a capture",
			args:  "[SNAP]",
			long:  helpText("budget"),
			flags: budgetFlags,
		},
		{
			name:  "advise",
			short: "what holds the peak, by term, and the fixes that lower it, cheapest first, each with its new peak",
			args:  "SNAP...",
			long:  helpText("advise"),
			flags: adviseFlags,
		},
		{
			name:  "capture",
			short: "run a training script under capture: phase peaks, per-step stats, snapshot at exit and at OOM",
			args:  "COMMAND...",
			long:  helpText("capture"),
			flags: captureFlags,
		},
		{
			name:  "sweep",
			short: "the batch-size sweep: one fresh process per point, the fit, the OOM frontier, bf16 vs fp32",
			args:  "",
			long:  helpText("sweep"),
			flags: sweepFlags,
		},
		{
			name:  "report",
			short: "one self-contained HTML page: timeline, peak breakdown, steps, leak, fragmentation, OOM",
			args:  "[SNAP...]",
			long:  helpText("report"),
			flags: reportFlags,
		},
		{
			name:  "serve",
			short: "a local web UI: allocation timeline with stacks, allocator state at any moment, sites, steps, leaks, OOMs",
			args:  "[SNAP...]",
			long:  helpText("serve"),
			flags: serveFlags,
		},
		{
			name:  "help",
			short: "show this overview, or one command's usage and flags",
			args:  "[COMMAND]",
			long:  helpText("help"),
			flags: func(*pflag.FlagSet) runFunc { return runHelp },
		},
	}
}

// helpFiles hold each command's long help (help/NAME.txt), the rule of
// sites (help/sites.txt) written where a text says {{sites}}, and the
// ECharts version where it says {{echarts}}.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText is the long help in help/name.txt, without its final newline.
func helpText(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("invariant violation: no help/" + name + ".txt")
	}
	text := strings.TrimSuffix(string(b), "\n")
	text = strings.ReplaceAll(text, "{{echarts}}", report.EChartsVersion)
	if name != "sites" {
		text = strings.ReplaceAll(text, "{{sites}}", helpText("sites"))
	}
	return text
}

// lookup returns the command called name, or nil.
func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
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
	deviceFlag(fs, &o.device, "report only CUDA device `N`; -1 for every device")
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
