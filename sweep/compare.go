package sweep

import (
	"cmp"
	"slices"

	"github.com/memscope/memscope/capture"
)

// Diff compares two sweeps: each (precision, batch) that fits in either,
// its peak allocated and each phase's, and the fits. Each list is sorted by
// precision, then batch, then phase or term; which changes matter most is
// the reader's to choose. Sizes are bytes; a side that lacks the row holds 0.
type Diff struct {
	Points []PointDelta
	Phases []PhaseDelta
	Fits   []FitDelta
}

// PointDelta is one point's peak allocated in A and in B.
type PointDelta struct {
	Precision string
	Batch     int
	// InA and InB: the point was measured and fit on that side.
	InA, InB bool
	A, B     int64
	Change   int64 // B − A
}

// PhaseDelta is one phase's peak allocated at one point in A and in B.
type PhaseDelta struct {
	Precision string
	Batch     int
	Phase     string
	A, B      int64
	Change    int64 // B − A
}

// FitTerm names one of a fit's two numbers.
type FitTerm int

const (
	FitFixed FitTerm = iota // Fit.Fixed, bytes
	FitSlope                // Fit.Slope, bytes per sample
)

// FitDelta is one term of one precision's fit in A and in B, cut to whole
// bytes.
type FitDelta struct {
	Precision string
	Term      FitTerm
	A, B      int64
	Change    int64 // B − A
}

// Compare compares sweep a with sweep b: their measured points that fit
// (not the snapshot re-runs) and their fits.
func Compare(a, b *Analysis) *Diff {
	type point struct {
		prec  string
		batch int
	}
	type phase struct {
		point
		name string
	}
	type fit struct {
		prec string
		term FitTerm
	}
	type side struct {
		peaks  map[point]int64
		phases map[phase]int64
		fits   map[fit]int64
	}
	read := func(an *Analysis) side {
		s := side{map[point]int64{}, map[phase]int64{}, map[fit]int64{}}
		for _, p := range an.Results.Points {
			if !p.Fits || p.Stage == capture.StageSnapshot {
				continue
			}
			k := point{p.Precision, p.Batch}
			s.peaks[k] = p.Peak.Allocated
			for name, n := range p.Phases {
				s.phases[phase{k, name}] = n.Allocated
			}
		}
		for _, f := range an.Fits {
			s.fits[fit{f.Precision, FitFixed}] = int64(f.Fixed)
			s.fits[fit{f.Precision, FitSlope}] = int64(f.Slope)
		}
		return s
	}
	sa, sb := read(a), read(b)
	d := &Diff{}
	for _, k := range union(sa.peaks, sb.peaks) {
		va, inA := sa.peaks[k]
		vb, inB := sb.peaks[k]
		d.Points = append(d.Points, PointDelta{Precision: k.prec, Batch: k.batch, InA: inA, InB: inB, A: va, B: vb, Change: vb - va})
	}
	slices.SortFunc(d.Points, func(x, y PointDelta) int {
		return cmp.Or(cmp.Compare(x.Precision, y.Precision), cmp.Compare(x.Batch, y.Batch))
	})
	for _, k := range union(sa.phases, sb.phases) {
		va, vb := sa.phases[k], sb.phases[k]
		d.Phases = append(d.Phases, PhaseDelta{Precision: k.prec, Batch: k.batch, Phase: k.name, A: va, B: vb, Change: vb - va})
	}
	slices.SortFunc(d.Phases, func(x, y PhaseDelta) int {
		return cmp.Or(cmp.Compare(x.Precision, y.Precision), cmp.Compare(x.Batch, y.Batch), cmp.Compare(x.Phase, y.Phase))
	})
	for _, k := range union(sa.fits, sb.fits) {
		va, vb := sa.fits[k], sb.fits[k]
		d.Fits = append(d.Fits, FitDelta{Precision: k.prec, Term: k.term, A: va, B: vb, Change: vb - va})
	}
	slices.SortFunc(d.Fits, func(x, y FitDelta) int {
		return cmp.Or(cmp.Compare(x.Precision, y.Precision), cmp.Compare(x.Term, y.Term))
	})
	return d
}

// union returns the keys of a and b, each once, in no particular order.
func union[K comparable](a, b map[K]int64) []K {
	var out []K
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}
