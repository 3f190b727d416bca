package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/memlimit"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/snapshot"
)

// ranksOptions are the flags of 'memscope ranks'.
type ranksOptions struct {
	json bool
	jobs int
	top  int
}

func ranksFlags(fs *pflag.FlagSet) runFunc {
	var o ranksOptions
	fs.BoolVar(&o.json, "json", false, "write JSON instead of text; sizes are raw bytes")
	fs.IntVarP(&o.jobs, "jobs", "j", min(2, runtime.NumCPU()), "read `N` ranks at a time: each worker holds one snapshot, and one decodes while the others analyse")
	fs.IntVar(&o.top, "top", 16, "show the `N` highest ranks (and every outlier) in the text table, and N differing sites per outlier")
	memoryFlag(fs)
	return func(cc *cmdContext, paths []string) error {
		if o.jobs < 1 {
			return usageErrorf("--jobs %d: want 1 or more", o.jobs)
		}
		if o.top < 1 {
			return usageErrorf("--top %d: want 1 or more", o.top)
		}
		inputs, err := attribution.RankInputs(paths)
		if errors.Is(err, filepath.ErrBadPattern) {
			return usageErrorf("%v", err)
		}
		if err != nil {
			return badInput(err)
		}
		memlimit.Churn() // each worker's snapshot is garbage once its numbers are read
		stats, skipped := attribution.ReadRanks(inputs, attribution.ReadRanksOptions{
			Jobs: o.jobs,
			Open: func(path string) (*snapshot.Snapshot, error) { return openSnapshot(cc, path) },
			Done: memlimit.Collect, // the snapshot just read is garbage: free it before the next
		})
		if len(stats) == 0 {
			return badInput(fmt.Errorf("no rank could be read: %s", strings.Join(skipped, "; ")))
		}
		for i := range stats {
			stats[i].Name = cc.shown(stats[i].Name)
		}
		return report.Write(cc.stdout, formatOf(o.json), &report.Ranks{Fleet: attribution.CompareRanks(stats), Top: o.top, Skipped: skipped})
	}
}
