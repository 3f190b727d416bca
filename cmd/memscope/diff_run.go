package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/report"
)

// diffInput resolves one argument of 'memscope diff': a snapshot file, a
// capture run directory (its snapshot: snapshot.pickle, or rank 0's), or a
// sweep run directory (results.json; sweep is true).
func diffInput(path string) (snap string, sweep bool, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", false, badInput(err)
	}
	if !st.IsDir() {
		return path, false, nil
	}
	if _, err := os.Stat(filepath.Join(path, "results.json")); err == nil {
		return "", true, nil
	}
	for _, name := range []string{"snapshot.pickle", "snapshot.rank0.pickle"} {
		if p := filepath.Join(path, name); fileExists(p) {
			return p, false, nil
		}
	}
	return "", false, badInput(fmt.Errorf("%s: a directory with neither results.json (memscope sweep) nor snapshot.pickle (memscope capture)", path))
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// diffSweeps compares two sweep runs point by point: each (precision,
// batch) measured in both, its peak allocated and each phase's, then the
// fits.
func diffSweeps(a, b string) (*attribution.DeviceDiff, error) {
	ra, err := capture.ReadResults(a)
	if err != nil {
		return nil, badInput(err)
	}
	rb, err := capture.ReadResults(b)
	if err != nil {
		return nil, badInput(err)
	}
	points := func(r *capture.Results) (peaks, phases map[string]int64) {
		peaks, phases = map[string]int64{}, map[string]int64{}
		for _, p := range r.Points {
			if !p.Fits || p.Stage == capture.StageSnapshot {
				continue
			}
			key := fmt.Sprintf("%s batch %d", p.Precision, p.Batch)
			peaks[key] = p.Peak.Allocated
			for name, n := range p.Phases {
				phases[key+" "+name] = n.Allocated
			}
		}
		return peaks, phases
	}
	fits := func(r *capture.Results, dir string) map[string]int64 {
		out := map[string]int64{}
		for _, f := range capture.AnalyzeSweep(dir, r).Fits {
			out[f.Precision+" fixed"] = int64(f.Fixed)
			out[f.Precision+" slope per sample"] = int64(f.Slope)
		}
		return out
	}
	pa, fa := points(ra)
	pb, fb := points(rb)
	d := &attribution.DeviceDiff{
		Sites:      attribution.Deltas(pa, pb),
		Phases:     attribution.Deltas(fa, fb),
		Categories: attribution.Deltas(fits(ra, a), fits(rb, b)),
	}
	return d, nil
}

// runDiffSweeps writes the comparison of two sweep runs.
func runDiffSweeps(cc *cmdContext, o *analysisOptions, a, b string) error {
	d, err := diffSweeps(a, b)
	if err != nil {
		return err
	}
	if o.json {
		return report.WriteJSON(cc.stdout, report.Doc{Schema: report.Schema, Kind: "diff",
			Result: map[string]any{"a": a, "b": b, "sweep": report.SweepDiff(d)}})
	}
	return report.SweepDiffText(cc.stdout, a, b, d)
}
