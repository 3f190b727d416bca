package main

import (
	"embed"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/internal/srcpath"
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
	// neutral is --neutral-paths: the rewriting of frame and input paths,
	// nil when off.
	neutral *srcpath.Neutral
}

// commands is the command table, in the order the overview lists them:
// each command's name, arguments and flags; init adds its short line and
// long help from help/NAME.txt. It is filled in init because the help
// command reads it.
var commands []*command

func init() {
	commands = []*command{
		{name: "summary", args: "[SNAP...]", flags: summaryFlags},
		{name: "peak", args: "SNAP...", flags: peakFlags},
		{name: "leaks", args: "SNAP...", flags: leaksFlags},
		{name: "frag", args: "SNAP...", flags: fragFlags},
		{name: "oom", args: "SNAP...", flags: oomFlags},
		{name: "whatif", args: "SNAP", flags: whatifFlags},
		{name: "fit", args: "SNAP SNAP...", flags: fitFlags},
		{name: "ranks", args: "PATH...", flags: ranksFlags},
		{name: "diff", args: "A B", flags: diffFlags},
		{name: "check", args: "SNAP...", flags: checkFlags},
		{name: "ops", args: "TRACE...", flags: opsFlags},
		{name: "pprof", args: "SNAP", flags: pprofFlags},
		{name: "budget", args: "[SNAP...]", flags: budgetFlags},
		{name: "advise", args: "SNAP...", flags: adviseFlags},
		{name: "capture", args: "COMMAND...", flags: captureFlags},
		{name: "sweep", args: "", flags: sweepFlags},
		{name: "report", args: "[SNAP...]", flags: reportFlags},
		{name: "serve", args: "[SNAP...]", flags: serveFlags},
		{name: "help", args: "[COMMAND]", flags: func(*pflag.FlagSet) runFunc { return runHelp }},
	}
	for _, c := range commands {
		c.short, c.long, _ = strings.Cut(helpText(c.name), "\n\n")
	}
}

// helpFiles hold each command's help (help/NAME.txt: the overview's line,
// a blank line, the long help), the rule of
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
