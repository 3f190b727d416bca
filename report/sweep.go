package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/sweep"
)

// Sweep is 'memscope summary --run DIR' (and 'memscope sweep') of a
// batch-size sweep.
type Sweep struct {
	Analysis *sweep.Analysis
}

func (*Sweep) Kind() string { return "sweep" }

func (r *Sweep) writeText(w io.Writer) error { return sweepText(w, r.Analysis) }

func (r *Sweep) document() any { return sweepDoc(r.Analysis) }

// Run is 'memscope summary --run DIR' of a capture run.
type Run struct {
	Summary *sweep.RunSummary
}

func (*Run) Kind() string { return "capture" }

func (r *Run) writeText(w io.Writer) error { return runText(w, r.Summary) }

func (r *Run) document() any { return runDoc(r.Summary) }

// SweepDiff is 'memscope diff SWEEP_A SWEEP_B': two sweep runs compared.
type SweepDiff struct {
	A, B string // the two run directories as given
	Diff *sweep.Diff
}

func (*SweepDiff) Kind() string { return "diff" }

// writeText writes each point's peak allocated (of the points that fit in
// both), the fits, and the largest changes of the phases' peaks.
func (r *SweepDiff) writeText(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("A: %s\nB: %s (sweep runs)\n", r.A, r.B)
	points, phases, fits := sweepDiffRows(r.Diff, true)
	deltaText(ew, "peak allocated of the points that fit in both", points, -1)
	deltaText(ew, "fits (fixed bytes, bytes per sample)", fits, -1)
	deltaText(ew, "phase peaks", phases, 20)
	return ew.err
}

func (r *SweepDiff) document() any {
	return ResultDoc[SweepDiffResultJSON]{Schema: Schema, Kind: "diff",
		Result: SweepDiffResultJSON{A: r.A, B: r.B, Sweep: sweepDiffJSON(r.Diff)}}
}

// sweepDiffRows names the rows of d ("fp32 batch 8", "fp32 batch 8
// backward", "fp32 fixed", "fp32 slope per sample") and lists each kind
// largest change first, ties by name; bothOnly keeps the points that fit
// on both sides.
func sweepDiffRows(d *sweep.Diff, bothOnly bool) (points, phases, fits []attribution.Delta) {
	points, phases, fits = []attribution.Delta{}, []attribution.Delta{}, []attribution.Delta{}
	for _, p := range d.Points {
		if !bothOnly || p.InA && p.InB {
			points = append(points, attribution.Delta{Name: pointName(p.Precision, p.Batch), A: p.A, B: p.B, Change: p.Change})
		}
	}
	for _, p := range d.Phases {
		phases = append(phases, attribution.Delta{Name: pointName(p.Precision, p.Batch) + " " + p.Phase, A: p.A, B: p.B, Change: p.Change})
	}
	for _, f := range d.Fits {
		term := "fixed"
		if f.Term == sweep.FitSlope {
			term = "slope per sample"
		}
		fits = append(fits, attribution.Delta{Name: f.Precision + " " + term, A: f.A, B: f.B, Change: f.Change})
	}
	for _, rows := range [][]attribution.Delta{points, phases, fits} {
		slices.SortFunc(rows, func(x, y attribution.Delta) int {
			return cmp.Or(cmp.Compare(absBytes(y.Change), absBytes(x.Change)), cmp.Compare(x.Name, y.Name))
		})
	}
	return points, phases, fits
}

func pointName(precision string, batch int) string {
	return fmt.Sprintf("%s batch %d", precision, batch)
}

func absBytes(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
