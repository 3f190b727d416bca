package serve

import (
	"os"
	"time"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/trace"
)

// Progress hears what Load is doing, for a line per snapshot on the
// terminal (report.ServeProgress).
type Progress interface {
	Reading(path string, size int64)
	Analysed(path string, devices, events int, took time.Duration)
}

// LoadOptions are what Load needs besides the paths.
type LoadOptions struct {
	Options
	// Analyze opens and analyses one snapshot: the command's, with its
	// warnings, memory policy and the analysis options (an overview of
	// OverviewPoints, every allocation's size).
	Analyze func(path string) (*attribution.Analysis, error)
	// Profile is the profiler trace or memory timeline joined with every
	// summary (Options.Trace names it); empty for none.
	Profile  trace.Profile
	Progress Progress
}

// Load analyses the snapshots at paths and indexes them (New): the
// server 'memscope serve' runs. Each summary is joined with the profile
// and given the device used a capture run sampled. Progress hears of each
// snapshot read and, once indexed, analysed, with its share of the index's
// time. An error of Analyze is returned as it is.
func Load(paths []string, opt LoadOptions) (*Server, error) {
	var srcs []Source
	var took []time.Duration
	for _, p := range paths {
		start := time.Now()
		var size int64
		if st, err := os.Stat(p); err == nil {
			size = st.Size()
		}
		opt.Progress.Reading(p, size)
		an, err := opt.Analyze(p)
		if err != nil {
			return nil, err
		}
		sum := attribution.Summarize(an, 10)
		sum.JoinProfile(an, opt.Trace, opt.Profile, 10)
		sum.AddDeviceUsed(p)
		// The snapshot's Source is p, or its neutral form with --neutral-paths.
		srcs = append(srcs, Source{Path: an.Snapshot.Source, Analysis: an, Summary: sum})
		took = append(took, time.Since(start))
	}
	indexStart := time.Now()
	srv, err := New(srcs, opt.Options)
	if err != nil {
		return nil, err
	}
	for i, src := range srcs {
		events := 0
		for _, d := range src.Analysis.Devices {
			events += len(d.Timeline.Events)
		}
		opt.Progress.Analysed(src.Path, len(src.Analysis.Devices), events, took[i]+time.Since(indexStart)/time.Duration(len(srcs)))
	}
	return srv, nil
}
