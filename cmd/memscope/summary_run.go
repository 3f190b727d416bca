package main

import (
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/sweep"
)

// runSummaryRun is 'memscope summary --run DIR': the summary of a sweep or
// capture run directory.
func runSummaryRun(cc *cmdContext, o summaryOptions, paths []string) error {
	if len(paths) > 0 {
		return usageErrorf("--run takes a run directory instead of snapshots; summarize a run's snapshots as memscope summary %s/snapshot.pickle", o.run)
	}
	r, err := readRunDir(cc, o.run)
	if err != nil {
		return err
	}
	return report.Write(cc.stdout, formatOf(o.json), r)
}

// readRunDir reads a sweep or capture run directory and analyses it
// (sweep.ReadDir): a *report.Sweep or a *report.Run, the directory named
// as outputs name inputs (cc.shown: with --neutral-paths, neutral).
func readRunDir(cc *cmdContext, dir string) (report.Result, error) {
	a, run, err := sweep.ReadDir(dir)
	switch {
	case err != nil:
		return nil, badInput(err)
	case a != nil:
		a.Dir = cc.shown(a.Dir)
		return &report.Sweep{Analysis: a}, nil
	}
	run.Dir = cc.shown(run.Dir)
	return &report.Run{Summary: run}, nil
}
