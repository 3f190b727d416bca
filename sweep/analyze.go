package sweep

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/memscope/memscope/capture"
)

// Analysis is what a sweep means: its points in table order, and per
// precision the fit, the OOM frontier and the saving over the baseline.
type Analysis struct {
	Dir       string
	Results   *capture.Results
	Rows      []capture.Point // measured points (not snapshot re-runs): by precision, then batch
	Fits      []Fit
	Frontiers []Frontier // one per precision, in the sweep's order
	Savings   []Saving
	Snapshots []capture.Point // the snapshot re-runs
	// Spreads names the worst rank of each multi-process point.
	Spreads map[string]RankSpread // by point ID
	// Missing are files results.json names that the directory lacks,
	// sorted.
	Missing []string
	// Reruns are the snapshot re-runs that ended differently from the
	// point they re-ran.
	Reruns []Rerun
}

// Frontier is where one precision stops fitting.
type Frontier struct {
	Precision  string `json:"precision"`
	LargestFit int    `json:"largest_fit"` // 0: none fit
	FirstFail  int    `json:"first_fail"`  // 0: none failed
	// Predicted is the batch the fit says reaches the memory limit
	// ((limit − fixed) / slope); 0 without a fit or a limit.
	Predicted float64 `json:"predicted"`
	Exact     bool    `json:"exact"` // FirstFail == LargestFit+1: bisection closed the gap
	// Allocated and Reserved are the peaks at the largest batch that fits:
	// reserved above allocated is cache the next batch may not be able to use.
	Allocated int64 `json:"allocated"`
	Reserved  int64 `json:"reserved"`
}

// Monotonic reports whether no batch fits above one that ran out of memory.
func (f Frontier) Monotonic() bool { return f.FirstFail == 0 || f.LargestFit <= f.FirstFail }

// Saving compares one precision with the baseline (fp32).
type Saving struct {
	Precision string `json:"precision"`
	Baseline  string `json:"baseline"`
	// SlopeSaving is 1 − slope/baseline slope: the share of per-sample
	// memory saved; nil without both fits.
	SlopeSaving *float64 `json:"slope_saving"`
	// At is the largest batch both fit; PeakBaseline and Peak their peak
	// allocated there; PeakSaving 1 − Peak/PeakBaseline (nil: no batch
	// fits both).
	At           int      `json:"at"`
	PeakBaseline int64    `json:"peak_baseline"`
	Peak         int64    `json:"peak"`
	PeakSaving   *float64 `json:"peak_saving"`
	// LargestFit and BaselineLargestFit are the frontiers.
	LargestFit         int `json:"largest_fit"`
	BaselineLargestFit int `json:"baseline_largest_fit"`
}

// Outcome is how a point ended.
type Outcome int

const (
	Fits   Outcome = iota // every step ran
	OOM                   // the allocator ran out of memory
	Failed                // it could not be measured (a crash)
)

// OutcomeOf says how p ended.
func OutcomeOf(p capture.Point) Outcome {
	switch {
	case p.Fits:
		return Fits
	case p.OOM:
		return OOM
	}
	return Failed
}

// Rerun is a snapshot re-run that ended differently from the measured point
// it re-ran: near the frontier, a point that fits for a few steps can run
// out of memory after more (the allocator's state evolves).
type Rerun struct {
	Snapshot capture.Point // the re-run, with recording on
	Measured capture.Point // the point of the same precision and batch
	// SnapshotOutcome and MeasuredOutcome are how each ended.
	SnapshotOutcome, MeasuredOutcome Outcome
}

// Baseline is the precision others are compared with.
const Baseline = "fp32"

// Analyze computes the fits, frontiers and savings of r; dir is where it
// was read from, checked for the files r names ("" checks none). The
// analysis holds r and its points; it copies nothing.
func Analyze(dir string, r *capture.Results) *Analysis {
	a := &Analysis{Dir: dir, Results: r, Spreads: map[string]RankSpread{}}
	order := map[string]int{}
	for i, p := range r.Precisions {
		order[p] = i
	}
	for _, p := range r.Points {
		if _, ok := order[p.Precision]; !ok {
			order[p.Precision] = len(order)
		}
		if p.Stage == capture.StageSnapshot {
			a.Snapshots = append(a.Snapshots, p)
			continue
		}
		a.Rows = append(a.Rows, p)
		if len(p.Ranks) > 1 {
			if s, ok := WorstRank(p.Ranks); ok {
				a.Spreads[p.ID] = s
			}
		}
	}
	sort.SliceStable(a.Rows, func(i, j int) bool {
		pi, pj := a.Rows[i], a.Rows[j]
		if pi.Precision != pj.Precision {
			return order[pi.Precision] < order[pj.Precision]
		}
		return pi.Batch < pj.Batch
	})
	precs := make([]string, len(order))
	for p, i := range order {
		precs[i] = p
	}
	fits := map[string]Fit{}
	fronts := map[string]Frontier{}
	for _, prec := range precs {
		var fitting []capture.Point
		fr := Frontier{Precision: prec}
		for _, p := range a.Rows {
			if p.Precision != prec {
				continue
			}
			switch {
			case p.Fits:
				fitting = append(fitting, p)
				if p.Batch > fr.LargestFit {
					fr.LargestFit, fr.Allocated, fr.Reserved = p.Batch, p.Peak.Allocated, p.Peak.Reserved
				}
			case p.OOM && (fr.FirstFail == 0 || p.Batch < fr.FirstFail):
				fr.FirstFail = p.Batch
			}
		}
		if f, ok := fitRegime(fitting); ok {
			f.Precision = prec
			a.Fits = append(a.Fits, f)
			fits[prec] = f
			if r.MemoryLimit > 0 && f.Slope > 0 {
				fr.Predicted = (float64(r.MemoryLimit) - f.Fixed) / f.Slope
			}
		}
		fr.Exact = fr.FirstFail > 0 && fr.FirstFail == fr.LargestFit+1
		a.Frontiers = append(a.Frontiers, fr)
		fronts[prec] = fr
	}
	a.checkFiles()
	a.checkSnapshots()
	if _, ok := order[Baseline]; ok {
		for _, prec := range precs {
			if prec != Baseline {
				a.Savings = append(a.Savings, saving(a.Rows, prec, fits, fronts))
			}
		}
	}
	return a
}

func saving(rows []capture.Point, prec string, fits map[string]Fit, fronts map[string]Frontier) Saving {
	s := Saving{Precision: prec, Baseline: Baseline,
		LargestFit: fronts[prec].LargestFit, BaselineLargestFit: fronts[Baseline].LargestFit}
	if f, ok := fits[prec]; ok {
		if b, ok := fits[Baseline]; ok && b.Slope > 0 {
			v := 1 - f.Slope/b.Slope
			s.SlopeSaving = &v
		}
	}
	peak := func(p string) map[int]int64 {
		m := map[int]int64{}
		for _, r := range rows {
			if r.Precision == p && r.Fits {
				m[r.Batch] = r.Peak.Allocated
			}
		}
		return m
	}
	base, this := peak(Baseline), peak(prec)
	for b, v := range base {
		if w, ok := this[b]; ok && b > s.At {
			s.At, s.PeakBaseline, s.Peak = b, v, w
		}
	}
	if s.At > 0 && s.PeakBaseline > 0 {
		v := 1 - float64(s.Peak)/float64(s.PeakBaseline)
		s.PeakSaving = &v
	}
	return s
}

// checkFiles lists the files results.json names that the directory does
// not hold (a fixture keeps some of them).
func (a *Analysis) checkFiles() {
	if a.Dir == "" {
		return
	}
	for _, p := range a.Results.Points {
		for _, f := range p.Files {
			if !exists(filepath.Join(a.Dir, filepath.FromSlash(f))) {
				a.Missing = append(a.Missing, f)
			}
		}
	}
	sort.Strings(a.Missing)
}

// checkSnapshots finds the snapshot re-runs that ended differently from
// the point they re-ran (the first such point of each).
func (a *Analysis) checkSnapshots() {
	for _, s := range a.Snapshots {
		for _, p := range a.Rows {
			if p.Precision != s.Precision || p.Batch != s.Batch || p.Fits == s.Fits {
				continue
			}
			a.Reruns = append(a.Reruns, Rerun{Snapshot: s, Measured: p,
				SnapshotOutcome: OutcomeOf(s), MeasuredOutcome: OutcomeOf(p)})
			break
		}
	}
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
