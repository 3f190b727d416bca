package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/memscope/memscope/internal/buildversion"
	"github.com/memscope/memscope/internal/flagvalue"
)

// overviewIntro and overviewTail frame the generated list of commands.
const (
	overviewIntro = `memscope reads PyTorch CUDA caching-allocator snapshots and tells you where
the GPU memory went.`
	overviewTail = `Run 'memscope help COMMAND' for the usage and flags of one command.
Exit status: 0 success, 1 a check failed, 2 bad usage, unreadable input or
any other error.`
)

// writeOverview prints memscope's help: every command's name and short line.
func writeOverview(w io.Writer) {
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nUsage:\n  memscope COMMAND [flags] [arguments]\n\nCommands:\n", overviewIntro)
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.name, c.short)
	}
	fs := newFlagSet("memscope")
	globalFlags(fs)
	fmt.Fprintf(&b, "\nFlags:\n%s\n%s\n", flagvalue.Usages(fs), overviewTail)
	io.WriteString(w, b.String())
}

// writeCommandHelp prints one command's synopsis, long help and flags.
func writeCommandHelp(w io.Writer, c *command) {
	fs, _, _ := commandFlags(c)
	synopsis := "memscope " + c.name + " [flags]"
	if c.args != "" {
		synopsis += " " + c.args
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Usage:\n  %s\n\n", synopsis)
	if c.long != "" {
		fmt.Fprintf(&b, "%s\n\n", c.long)
	}
	fmt.Fprintf(&b, "Flags:\n%s", flagvalue.Usages(fs))
	io.WriteString(w, b.String())
}

// runHelp is the help command.
func runHelp(cc *cmdContext, args []string) error {
	if len(args) == 0 {
		writeOverview(cc.stdout)
		return nil
	}
	c := lookup(args[0])
	if c == nil {
		return &usageError{msg: fmt.Sprintf("unknown command %q", args[0]), seeOverview: true}
	}
	writeCommandHelp(cc.stdout, c)
	return nil
}

// buildVersion is set by the wheel build (python/build.sh:
// -ldflags "-X main.buildVersion=0.1.0"); empty in other builds.
var buildVersion string

// version returns memscope's version (buildversion.String).
func version() string { return buildversion.String(buildVersion) }
