package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/sweep"
)

// diffInput resolves one argument of 'memscope diff': a snapshot file, a
// capture run directory (its snapshot: snapshot.pickle, or rank 0's), or a
// sweep run directory (results.json; isSweep is true).
func diffInput(path string) (snap string, isSweep bool, err error) {
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

// diffSweeps reads and compares two sweep runs point by point: each
// (precision, batch) measured in both, its peak allocated and each phase's,
// then the fits.
func diffSweeps(a, b string) (*sweep.Diff, error) {
	ra, err := capture.ReadResults(a)
	if err != nil {
		return nil, badInput(err)
	}
	rb, err := capture.ReadResults(b)
	if err != nil {
		return nil, badInput(err)
	}
	return sweep.Compare(sweep.Analyze(a, ra), sweep.Analyze(b, rb)), nil
}

// runDiffSweeps writes the comparison of two sweep runs.
func runDiffSweeps(cc *cmdContext, o *analysisOptions, a, b string) error {
	d, err := diffSweeps(a, b)
	if err != nil {
		return err
	}
	return report.Write(cc.stdout, o.format(), &report.SweepDiff{A: a, B: b, Diff: d})
}
