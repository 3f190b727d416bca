package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/memscope/memscope/internal/flagvalue"
	"github.com/memscope/memscope/internal/textsafe"
	"github.com/spf13/pflag"
)

// run runs memscope on args (without the program name). It writes results to
// stdout and warnings and errors to stderr, and returns the error, if any,
// for exitCode to map; the error has already been printed.
func run(args []string, stdout, stderr io.Writer) error {
	err := dispatch(args, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "memscope: %s\n", textsafe.Escape(err.Error())) // errors may quote the input
		if ue, ok := errors.AsType[*usageError](err); ok {
			if ue.cmd == "" || ue.seeOverview {
				fmt.Fprintf(stderr, "run 'memscope help' for the list of commands\n")
			} else {
				fmt.Fprintf(stderr, "run 'memscope help %s' for its usage\n", ue.cmd)
			}
		}
	}
	return err
}

// dispatch parses memscope's own flags, finds the command and runs it.
func dispatch(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("memscope")
	showHelp, showVersion := globalFlags(fs)
	fs.SetInterspersed(false) // flags after the command name are the command's
	if err := fs.Parse(args); err != nil {
		return &usageError{msg: err.Error()}
	}
	args = fs.Args()
	switch {
	case *showVersion && len(args) > 0:
		return &usageError{msg: "--version takes no arguments"}
	case *showVersion:
		fmt.Fprintf(stdout, "memscope %s\n", version())
		return nil
	case len(args) == 0:
		writeOverview(stdout)
		return nil
	case *showHelp:
		args = append([]string{"help"}, args...) // memscope -h CMD == memscope help CMD
	}

	c := lookup(args[0])
	if c == nil {
		return &usageError{msg: fmt.Sprintf("unknown command %q", args[0]), seeOverview: true}
	}
	cc := &cmdContext{stdout: stdout, stderr: stderr}
	err := runCommand(cc, c, args[1:])
	if ue, ok := errors.AsType[*usageError](err); ok && ue.cmd == "" {
		ue.cmd = c.name
	}
	return err
}

// globalFlags defines memscope's own flags, those before the command name.
func globalFlags(fs *pflag.FlagSet) (help, version *bool) {
	help = fs.BoolP("help", "h", false, "show this overview")
	version = fs.Bool("version", false, "print the version and exit")
	return help, version
}

// runCommand parses the flags and arguments of c and runs it. -h and --help
// print the command's help instead.
func runCommand(cc *cmdContext, c *command, args []string) error {
	fs, runFn, showHelp := commandFlags(c)
	if err := fs.Parse(args); err != nil {
		return &usageError{cmd: c.name, msg: flagvalue.Message(err)}
	}
	if *showHelp {
		writeCommandHelp(cc.stdout, c)
		return nil
	}
	if err := flagvalue.CheckArgs(c.args, fs.Args()); err != nil {
		return &usageError{cmd: c.name, msg: err.Error()}
	}
	cc.maxMemory = memoryFlagOf(fs)
	cc.neutral = flagvalue.NeutralOf(fs)
	return runFn(cc, fs.Args())
}

// commandFlags returns a fresh flag set holding c's flags and then -h/--help,
// the function that runs c with them, and the help flag.
func commandFlags(c *command) (fs *pflag.FlagSet, runFn runFunc, help *bool) {
	fs = newFlagSet("memscope " + c.name)
	runFn = c.flags(fs)
	if c.name != "help" && fs.Lookup("neutral-paths") == nil {
		flagvalue.Neutral(fs, c.name == "report")
	}
	help = fs.BoolP("help", "h", false, "show this help")
	return fs, runFn, help
}

// newFlagSet returns an empty flag set that reports errors to its caller and
// prints nothing itself: run prints errors, help prints usage.
func newFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false // list flags in the order the table defines them
	return fs
}

// warnf prints a warning: something the user should know about the result
// that did not stop the command, such as the part of a damaged file that was
// lost.
func (cc *cmdContext) warnf(format string, args ...any) {
	fmt.Fprintf(cc.stderr, "memscope: warning: %s\n", textsafe.Escape(fmt.Sprintf(format, args...)))
}
