package flagvalue

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// Usages lists the flags of fs, one a line, in the order they were
// defined: "  -h, --help    show this help". It is pflag's FlagUsages without
// the "[=true|false]" that pflag v1.1 adds to every boolean flag.
func Usages(fs *pflag.FlagSet) string {
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

// CheckArgs checks the number of positional arguments got against the
// synopsis spec (cmd/memscope's command.args): each word is one argument; "[X]" is
// optional; "X..." (or "[X...]") may repeat. Optional words follow the
// required ones and only the last word may repeat.
func CheckArgs(spec string, got []string) error {
	words := strings.Fields(spec)
	min, max := 0, len(words)
	for i, w := range words {
		if strings.HasSuffix(w, "...") || strings.HasSuffix(w, "...]") {
			if i != len(words)-1 {
				panic("invariant violation: command args " + spec + ": only the last may repeat")
			}
			max = -1
		}
		if !strings.HasPrefix(w, "[") {
			if min != i {
				panic("invariant violation: command args " + spec + ": required after optional")
			}
			min++
		}
	}
	switch {
	case len(got) < min:
		return fmt.Errorf("missing %s argument", strings.TrimSuffix(words[len(got)], "..."))
	case max >= 0 && len(got) > max:
		return fmt.Errorf("unexpected argument %q", got[max])
	}
	return nil
}
