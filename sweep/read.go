package sweep

import "github.com/memscope/memscope/capture"

// ReadDir reads and analyses a run directory: a sweep's (capture.KindSweep:
// Analyze of its results, run nil) or a capture's (SummarizeRun, a nil).
// Errors name the directory.
func ReadDir(dir string) (a *Analysis, run *RunSummary, err error) {
	kind, err := capture.DirKind(dir)
	if err != nil {
		return nil, nil, err
	}
	if kind == capture.KindSweep {
		res, err := capture.ReadResults(dir)
		if err != nil {
			return nil, nil, err
		}
		return Analyze(dir, res), nil, nil
	}
	d, err := capture.ReadRun(dir)
	if err != nil {
		return nil, nil, err
	}
	return nil, SummarizeRun(d), nil
}

// CompareDirs reads the sweep run directories a and b and compares them
// point by point (Compare).
func CompareDirs(a, b string) (*Diff, error) {
	ra, err := capture.ReadResults(a)
	if err != nil {
		return nil, err
	}
	rb, err := capture.ReadResults(b)
	if err != nil {
		return nil, err
	}
	return Compare(Analyze(a, ra), Analyze(b, rb)), nil
}
