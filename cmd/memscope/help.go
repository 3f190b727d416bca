package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/internal/buildversion"
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
	fmt.Fprintf(&b, "\nFlags:\n%s\n%s\n", flagUsages(fs), overviewTail)
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
	fmt.Fprintf(&b, "Flags:\n%s", flagUsages(fs))
	io.WriteString(w, b.String())
}

// flagUsages lists the flags of fs, one a line, in the order they were
// defined: "  -h, --help    show this help". It is pflag's FlagUsages without
// the "[=true|false]" that pflag v1.1 adds to every boolean flag.
func flagUsages(fs *pflag.FlagSet) string {
	var names, usages []string
	width := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		name := "      --" + f.Name
		if f.Shorthand != "" {
			name = "  -" + f.Shorthand + ", --" + f.Name
		}
		varname, usage := pflag.UnquoteUsage(f)
		if placeholder, ok := typePlaceholders[varname]; ok {
			varname = placeholder // pflag's type name: no `NAME` in the usage
		}
		if varname != "" {
			name += " " + varname
		}
		def := strings.TrimSuffix(strings.TrimPrefix(f.DefValue, "["), "]") // slices: 1,2,4, not [1,2,4]
		switch def {
		case "", "false", "0":
		default:
			usage += " (default " + def + ")"
		}
		names, usages = append(names, name), append(usages, usage)
		width = max(width, len(name))
	})
	var b strings.Builder
	for i := range names {
		fmt.Fprintf(&b, "%-*s   %s\n", width, names[i], usages[i])
	}
	return b.String()
}

// typePlaceholders replace the type names pflag shows for a flag whose
// usage names no `PLACEHOLDER`.
var typePlaceholders = map[string]string{
	"int": "N", "int64": "N", "uint": "N", "float": "F", "float64": "F", "duration": "DURATION",
	"string": "S", "strings": "LIST", "ints": "LIST",
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
