package report

import (
	"io"

	"github.com/memscope/memscope/attribution"
)

// The results of the analysis commands. A command fills one in from the
// libraries' values and writes it with Write or a Writer; these types
// compute nothing beyond choosing what to show.

// Summary is 'memscope summary' of one file.
type Summary struct {
	Sum    *attribution.Summary
	Stacks bool // text: print each top site's full stack
	// AllFrames, with Stacks, prints native frames too (C++, CPython,
	// libc), not only counts them.
	AllFrames bool
}

func (*Summary) Kind() string { return "summary" }

func (r *Summary) writeText(w io.Writer) error {
	return summaryText(w, r.Sum, summaryTextOptions{Stacks: r.Stacks, AllFrames: r.AllFrames})
}

func (r *Summary) fileEntry() any { return summaryFile(r.Sum) }
