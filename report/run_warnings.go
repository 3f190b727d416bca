package report

import (
	"fmt"
	"strings"

	"github.com/memscope/memscope/capture"
)

// runWarnings words a capture run directory's warnings (never nil), for
// the text summary and the JSON document alike.
func runWarnings(ws []capture.RunWarning) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, runWarningText(w))
	}
	return out
}

// runWarningText is one run directory warning in words.
func runWarningText(w capture.RunWarning) string {
	switch w.Kind {
	case capture.NoRunJSON:
		return "no run.json: the harness was run without memscope capture"
	case capture.MissingRanks:
		return fmt.Sprintf("%d of %d processes wrote no capture.json (ranks %s): killed, or never started",
			len(w.Ranks), w.World, rankList(w.Ranks))
	}
	panic(fmt.Sprintf("invariant violation: run warning kind %d has no words", w.Kind))
}

// rankList writes xs comma-separated, the first 20 and a count of the rest.
func rankList(xs []int) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == 20 {
			fmt.Fprintf(&b, "… %d more", len(xs)-i)
			break
		}
		fmt.Fprint(&b, x)
	}
	return b.String()
}
