package main

import (
	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/trace"
)

// runSummary runs 'memscope summary'. It is a variable so that tests can see
// what the command line turned into without decoding a snapshot.
var runSummary = summary

// summary prints, for each snapshot in paths, the summary described in the
// command's usage, as text or (opts.json) JSON, to cc.stdout.
func summary(cc *cmdContext, opts summaryOptions, paths []string) error {
	var prof trace.Profile
	if opts.trace != "" {
		var err error
		if prof, err = openProfile(cc, opts.trace); err != nil {
			return badInput(err)
		}
	}
	filter, err := attribution.NewFilter(opts.ignore, opts.focus)
	if err != nil {
		return usageErrorf("%v", err)
	}
	tr, tl := prof.Trace, prof.Timeline
	format := report.Text
	if opts.json {
		format = report.JSON
	}
	paths, err = snapshotPaths(paths)
	if err != nil {
		return err
	}
	rw := report.NewWriter(cc.stdout, format)
	for _, path := range paths {
		an, err := analyzeSnapshot(cc, path, attribution.Options{Filter: filter, Device: opts.device})
		if err != nil {
			return err
		}
		sum := attribution.Summarize(an, opts.top)
		if tr != nil {
			sum.JoinTrace(an, tr, opts.top)
		}
		if tl != nil {
			sum.JoinTimeline(opts.trace, tl)
		}
		addDeviceUsed(sum, path)
		if err := rw.Write(&report.Summary{Sum: sum, Stacks: opts.stacks, AllFrames: opts.allFrames}); err != nil {
			return err
		}
	}
	return rw.Close()
}

// addDeviceUsed fills in the device used the capture run sampled, when the
// snapshot at path sits in a 'memscope capture' run directory.
func addDeviceUsed(sum *attribution.Summary, path string) {
	dev, used, ok := capture.DeviceUsedFor(path)
	for i := range sum.Devices {
		if ok && sum.Devices[i].Device == dev {
			sum.Devices[i].DeviceUsedPeak = &used
		}
	}
}
