package capture

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// SweepAnalysis is what a sweep means: its points in table order, and per
// precision the fit, the OOM frontier and the saving over the baseline.
type SweepAnalysis struct {
	Dir       string
	Results   *Results
	Rows      []Point // measured points (not snapshot re-runs): by precision, then batch
	Fits      []Fit
	Frontiers []Frontier
	Savings   []Saving
	Snapshots []Point // the snapshot re-runs
	// Spread names the worst rank of each multi-process point that fits.
	Spreads map[string]RankSpread // by point ID
	// Missing are files results.json names that the directory lacks.
	Missing  []string
	Warnings []string
}

// Fit is the least-squares line peak allocated ≈ Fixed + batch × Slope
// through the points of one precision that fit, with its R².
//
// The line is fitted in one regime: over the batches whose peak is in the
// same phase as the largest batch's (backward, typically). At small
// batches another phase can hold the peak (the optimizer's step, whose
// memory does not grow with the batch); those points sit above the line
// and are left out, counted in Excluded.
type Fit struct {
	Precision string  `json:"precision"`
	Phase     string  `json:"phase"`    // the phase holding the peak in the fitted regime; "" if mixed
	Excluded  []int   `json:"excluded"` // batches that fit but peak in another phase
	Fixed     float64 `json:"fixed"`    // bytes
	Slope     float64 `json:"slope"`    // bytes per sample
	R2        float64 `json:"r2"`
	Points    int     `json:"points"`
	// MaxResidual is the largest |measured − fitted| over the points, bytes.
	MaxResidual float64 `json:"max_residual"`
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

// RankSpread names the process with the highest peak allocated and how far
// it is above the median of all processes.
type RankSpread struct {
	Rank       int     `json:"rank"`
	Peak       int64   `json:"peak"`
	Median     int64   `json:"median"`
	Excess     int64   `json:"excess"`      // Peak − Median
	ExcessFrac float64 `json:"excess_frac"` // Excess / Median
	Ranks      int     `json:"ranks"`
}

// Baseline is the precision others are compared with.
const Baseline = "fp32"

// AnalyzeSweep computes the fits, frontiers and savings of r; dir is where
// it was read from (for the paths it prints).
func AnalyzeSweep(dir string, r *Results) *SweepAnalysis {
	a := &SweepAnalysis{Dir: dir, Results: r, Spreads: map[string]RankSpread{}}
	a.Warnings = append(a.Warnings, r.Warnings...)
	order := map[string]int{}
	for i, p := range r.Precisions {
		order[p] = i
	}
	for _, p := range r.Points {
		if _, ok := order[p.Precision]; !ok {
			order[p.Precision] = len(order)
		}
		if p.Stage == StageSnapshot {
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
		var fitting []Point
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
		if fr.FirstFail > 0 && fr.LargestFit > fr.FirstFail {
			a.Warnings = append(a.Warnings, "precision "+prec+": a batch fits above one that ran out of memory; the frontier is not monotonic")
		}
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

func saving(rows []Point, prec string, fits map[string]Fit, fronts map[string]Frontier) Saving {
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

// fitRegime fits the points (all of one precision, all fitting) whose peak
// is in the same phase as the largest batch's; with fewer than two such
// batches, it fits them all.
func fitRegime(points []Point) (Fit, bool) {
	if len(points) == 0 {
		return Fit{}, false
	}
	largest := points[0]
	for _, p := range points {
		if p.Batch > largest.Batch {
			largest = p
		}
	}
	regime := PeakPhase(largest)
	var xs, ys []float64
	var excluded []int
	for _, p := range points {
		if PeakPhase(p) == regime {
			xs, ys = append(xs, float64(p.Batch)), append(ys, float64(p.Peak.Allocated))
		} else {
			excluded = append(excluded, p.Batch)
		}
	}
	if f, ok := fitLine(xs, ys); ok && regime != "" {
		f.Phase, f.Excluded = regime, excluded
		if f.Excluded == nil {
			f.Excluded = []int{}
		}
		return f, true
	}
	xs, ys = xs[:0], ys[:0]
	for _, p := range points {
		xs, ys = append(xs, float64(p.Batch)), append(ys, float64(p.Peak.Allocated))
	}
	f, ok := fitLine(xs, ys)
	f.Excluded = []int{}
	return f, ok
}

// PeakPhase is the phase whose peak allocated is the point's highest
// (forward, backward, optimizer, in that order on ties); "" with none.
func PeakPhase(p Point) string {
	best, bestBytes := "", int64(-1)
	for _, name := range []string{"forward", "backward", "optimizer"} {
		if n, ok := p.Phases[name]; ok && n.Allocated > bestBytes {
			best, bestBytes = name, n.Allocated
		}
	}
	return best
}

// fitLine fits y ≈ a + b·x by least squares; it needs two distinct x. R² is
// 1 when the points are collinear (or all y equal).
func fitLine(xs, ys []float64) (Fit, bool) {
	n := float64(len(xs))
	distinct := slices.Clone(xs)
	slices.Sort(distinct)
	if len(slices.Compact(distinct)) < 2 {
		return Fit{}, false
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy = sx+xs[i], sy+ys[i]
		sxx, sxy = sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	b := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	a := (sy - b*sx) / n
	mean := sy / n
	var ssRes, ssTot, maxRes float64
	for i := range xs {
		r := ys[i] - (a + b*xs[i])
		ssRes += r * r
		ssTot += (ys[i] - mean) * (ys[i] - mean)
		maxRes = max(maxRes, math.Abs(r))
	}
	r2 := 1.0
	if ssTot > 0 {
		r2 = 1 - ssRes/ssTot
	}
	return Fit{Fixed: a, Slope: b, R2: r2, Points: len(xs), MaxResidual: maxRes}, true
}

// WorstRank returns the rank with the highest peak allocated among those
// that reported, and its excess over their median; false when fewer than
// two reported.
func WorstRank(ranks []RankPeak) (RankSpread, bool) {
	var peaks []int64
	worst := -1
	for i, r := range ranks {
		if r.Missing {
			continue
		}
		peaks = append(peaks, r.Peak.Allocated)
		if worst < 0 || r.Peak.Allocated > ranks[worst].Peak.Allocated {
			worst = i
		}
	}
	if len(peaks) < 2 {
		return RankSpread{}, false
	}
	slices.Sort(peaks)
	m := len(peaks) / 2
	median := peaks[m]
	if len(peaks)%2 == 0 {
		median = (peaks[m-1] + peaks[m]) / 2
	}
	s := RankSpread{Rank: ranks[worst].Rank, Peak: ranks[worst].Peak.Allocated, Median: median,
		Ranks: len(peaks)}
	s.Excess = s.Peak - median
	if median > 0 {
		s.ExcessFrac = float64(s.Excess) / float64(median)
	}
	return s, true
}

// checkFiles warns about files results.json names that the directory does
// not hold (a fixture keeps some of them).
func (a *SweepAnalysis) checkFiles() {
	var missing []string
	for _, p := range a.Results.Points {
		for _, f := range p.Files {
			if a.Dir != "" && !exists(filepath.Join(a.Dir, filepath.FromSlash(f))) {
				missing = append(missing, f)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		a.Missing = missing
		a.Warnings = append(a.Warnings, fmt.Sprintf("%d file(s) named in results.json are not in %s: %s",
			len(missing), a.Dir, strings.Join(missing, ", ")))
	}
}

// checkSnapshots warns when a snapshot re-run ended differently from the
// point it re-ran: near the frontier, a point that fits for a few steps can
// run out of memory after more (the allocator's state evolves).
func (a *SweepAnalysis) checkSnapshots() {
	for _, s := range a.Snapshots {
		for _, p := range a.Rows {
			if p.Precision != s.Precision || p.Batch != s.Batch || p.Fits == s.Fits {
				continue
			}
			a.Warnings = append(a.Warnings, fmt.Sprintf("%s batch %d: the snapshot re-run (%s) %s but the measured point %s; "+
				"%s steps", s.Precision, s.Batch, s.Role, outcomeWord(s), outcomeWord(p), stepsWord(s, p, a.Results.Steps)))
			break
		}
	}
}

func outcomeWord(p Point) string {
	switch {
	case p.Fits:
		return "fit"
	case p.OOM:
		return "ran out of memory"
	}
	return "failed"
}

func stepsWord(s, p Point, steps int) string {
	if s.Steps > 0 && p.Steps > 0 {
		if s.Steps == p.Steps {
			return fmt.Sprintf("they ran the same %d measured", s.Steps)
		}
		return fmt.Sprintf("they ran %d and %d measured", s.Steps, p.Steps)
	}
	return fmt.Sprintf("the re-run perhaps ran fewer than the sweep's %d measured", steps)
}
