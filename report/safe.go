package report

import (
	"fmt"
	"io"

	"github.com/memscope/memscope/internal/textsafe"
)

// Text output prints names from the input file (frames, ops, files,
// annotations, exception text): every string argument of printf and
// fprintf passes through textsafe.Escape, so a shared snapshot cannot send
// escape sequences to the terminal. Text this package builds with its own
// layout (wrap's line breaks) is a safeText, printed as is.

// safeText is text already escaped, whose newlines and tabs are layout.
type safeText string

// escapeArgs escapes the string arguments of a print call in place.
func escapeArgs(args []any) []any {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = textsafe.Escape(s)
		}
	}
	return args
}

// fprintf is fmt.Fprintf with its string arguments escaped.
func fprintf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, format, escapeArgs(args)...)
}
