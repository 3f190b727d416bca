package sweep

import (
	"math"
	"slices"

	"github.com/memscope/memscope/capture"
)

// Fit is the least-squares line peak allocated ≈ Fixed + batch × Slope
// through the points of one precision that fit, with its R².
//
// The line is fitted in one regime: over the batches whose peak is in the
// same phase as the largest batch's (backward, typically). At small
// batches another phase can hold the peak (the optimizer's step, whose
// memory does not grow with the batch); those points sit above the line
// and are left out, listed in Excluded.
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

// fitRegime fits the points (all of one precision, all fitting) whose peak
// is in the same phase as the largest batch's; with fewer than two such
// batches, it fits them all.
func fitRegime(points []capture.Point) (Fit, bool) {
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
func PeakPhase(p capture.Point) string {
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
