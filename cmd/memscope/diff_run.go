package main

import (
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/sweep"
)

// runDiffSweeps writes the comparison of two sweep runs.
func runDiffSweeps(cc *cmdContext, o *analysisOptions, a, b string) error {
	d, err := sweep.CompareDirs(a, b)
	if err != nil {
		return badInput(err)
	}
	return report.Write(cc.stdout, o.format(), &report.SweepDiff{A: a, B: b, Diff: d})
}
