package main

import (
	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/report"
)

// runSummaryRun is 'memscope summary --run DIR': the summary of a sweep or
// capture run directory.
func runSummaryRun(cc *cmdContext, o summaryOptions, paths []string) error {
	if len(paths) > 0 {
		return usageErrorf("--run takes a run directory instead of snapshots; summarize a run's snapshots as memscope summary %s/snapshot.pickle", o.run)
	}
	kind, err := capture.DirKind(o.run)
	if err != nil {
		return badInput(err)
	}
	if kind == capture.KindSweep {
		res, err := capture.ReadResults(o.run)
		if err != nil {
			return badInput(err)
		}
		a := capture.AnalyzeSweep(o.run, res)
		if o.json {
			return report.SweepJSON(cc.stdout, a)
		}
		return report.SweepText(cc.stdout, a)
	}
	a, err := capture.ReadRun(o.run)
	if err != nil {
		return badInput(err)
	}
	if o.json {
		return report.RunJSON(cc.stdout, a)
	}
	return report.RunText(cc.stdout, a)
}
