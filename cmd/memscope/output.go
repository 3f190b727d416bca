package main

import (
	"io"

	"github.com/memscope/memscope/internal/atomicfile"
	"github.com/memscope/memscope/report"
)

// This file writes the files named by -o. A report or profile is written
// to a temporary file beside the target and renamed over it once complete,
// so that a full disk or a failed render leaves the old file as it was,
// never a cut one; and a target that is one of the command's inputs is
// refused before anything is read.

// refuseOverInput returns a usage error when out names the same file as
// one of inputs (paths or run directories; "" is skipped).
func refuseOverInput(out string, inputs ...string) error {
	if in, ok := atomicfile.Overwrites(out, inputs...); ok {
		return usageErrorf("-o %s is %s, an input of this command: refusing to write over it", out, in)
	}
	return nil
}

// writeFile writes the file name through fn and returns its size, whole
// or not at all (atomicfile.Write).
func writeFile(name string, fn func(w io.Writer) error) (int64, error) {
	return atomicfile.Write(name, fn)
}

// formatOf is the format --json chose: JSON, else text.
func formatOf(json bool) report.Format {
	if json {
		return report.JSON
	}
	return report.Text
}
