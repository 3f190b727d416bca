package sweep

import (
	"fmt"
	"math"
	"testing"

	"github.com/memscope/memscope/capture"
)

// fakeSweep is the sweep capture's ladder and bisection measure on a
// workload whose peak is fixed + batch × slope under a 30 GiB limit (the
// points of capture's TestSweepLadderBisectSnapshots): fp32 6 GiB +
// 1.25 GiB/sample fits up to 19, bf16 7 GiB + 1 GiB/sample up to 23.
func fakeSweep() *capture.Results {
	const gib = 1 << 30
	fixed := map[string]int64{"fp32": 6 * gib, "bf16": 7 * gib}
	slope := map[string]int64{"fp32": 5 * gib / 4, "bf16": gib}
	r := &capture.Results{Schema: capture.ResultsSchema, Precisions: []string{"fp32", "bf16"}, MemoryLimit: 30 * gib, Steps: 3}
	point := func(prec string, batch int, stage, role string) {
		p := capture.Point{ID: fmt.Sprintf("%s-b%d", prec, batch), Precision: prec, Batch: batch, Stage: stage, Role: role}
		if role != "" {
			p.ID += "-" + role
		}
		if peak := fixed[prec] + int64(batch)*slope[prec]; peak > r.MemoryLimit {
			p.OOM = true
		} else {
			p.Fits = true
			p.Peak = capture.Numbers{Allocated: peak, Requested: peak, Reserved: peak + 1<<20, Active: peak}
			p.Phases = map[string]capture.Numbers{"backward": p.Peak}
		}
		r.Points = append(r.Points, p)
	}
	for _, prec := range r.Precisions {
		for _, b := range []int{1, 2, 4, 8, 16, 32} {
			point(prec, b, capture.StageLadder, "")
		}
	}
	for _, b := range []int{24, 20, 18, 19} {
		point("fp32", b, capture.StageBisect, "")
	}
	for _, b := range []int{24, 20, 22, 23} {
		point("bf16", b, capture.StageBisect, "")
	}
	point("bf16", 8, capture.StageSnapshot, capture.RoleSafe)
	point("bf16", 23, capture.StageSnapshot, capture.RoleLargestFit)
	point("bf16", 24, capture.StageSnapshot, capture.RoleFirstFail)
	return r
}

func TestAnalyzeLadderBisect(t *testing.T) {
	const gib = 1 << 30
	a := Analyze("", fakeSweep())
	wantFront := []Frontier{{Precision: "fp32", LargestFit: 19, FirstFail: 20, Exact: true, Predicted: 19.2},
		{Precision: "bf16", LargestFit: 23, FirstFail: 24, Exact: true, Predicted: 23}}
	if len(a.Frontiers) != len(wantFront) {
		t.Fatalf("%d frontiers, want %d", len(a.Frontiers), len(wantFront))
	}
	for i, f := range a.Frontiers {
		w := wantFront[i]
		if f.Precision != w.Precision || f.LargestFit != w.LargestFit || f.FirstFail != w.FirstFail ||
			f.Exact != w.Exact || math.Abs(f.Predicted-w.Predicted) > 1e-9 {
			t.Errorf("Frontiers[%d] = %+v, want %+v", i, f, w)
		}
	}
	for _, f := range a.Fits {
		wantSlope := map[string]float64{"fp32": 1.25 * gib, "bf16": gib}[f.Precision]
		wantFixed := map[string]float64{"fp32": 6 * gib, "bf16": 7 * gib}[f.Precision]
		if math.Abs(f.Slope-wantSlope) > 1 || math.Abs(f.Fixed-wantFixed) > 16 || f.R2 < 0.999999 || f.MaxResidual > 16 {
			t.Errorf("Fit(%s) = %+v, want fixed %g, slope %g, R² 1", f.Precision, f, wantFixed, wantSlope)
		}
	}
	// the largest batch measured at both precisions that fits both is 16
	if len(a.Savings) != 1 || a.Savings[0].At != 16 || math.Abs(*a.Savings[0].SlopeSaving-0.2) > 1e-9 ||
		a.Savings[0].LargestFit != 23 || a.Savings[0].BaselineLargestFit != 19 {
		t.Errorf("Savings = %+v, want bf16 at batch 16, slope saving 0.2, frontier 19 → 23", a.Savings)
	}
	if len(a.Rows) != 20 || len(a.Snapshots) != 3 || len(a.Reruns) != 0 || len(a.Missing) != 0 {
		t.Errorf("Analyze: %d rows, %d snapshot points, reruns %+v, missing %q; want 20, 3, none, none",
			len(a.Rows), len(a.Snapshots), a.Reruns, a.Missing)
	}
	for i := 1; i < len(a.Rows); i++ {
		p, q := a.Rows[i-1], a.Rows[i]
		if p.Precision == q.Precision && p.Batch >= q.Batch || p.Precision == "bf16" && q.Precision == "fp32" {
			t.Errorf("Rows[%d:%d] = %s, %s: want the sweep's precision order, then batch", i-1, i+1, p.ID, q.ID)
		}
	}
}

// TestAnalyzeAmiss: a batch that fits above an OOM, and a snapshot re-run
// that ended otherwise than its point, are found as values.
func TestAnalyzeAmiss(t *testing.T) {
	r := fakeSweep()
	for i, p := range r.Points {
		switch p.ID {
		case "fp32-b16": // an OOM below batches that fit
			r.Points[i].Fits, r.Points[i].OOM = false, true
		case "bf16-b24-first-fail": // the re-run fit
			r.Points[i].Fits, r.Points[i].OOM, r.Points[i].Steps = true, false, 1
		}
	}
	a := Analyze("", r)
	if a.Frontiers[0].FirstFail != 16 || a.Frontiers[0].Monotonic() || !a.Frontiers[1].Monotonic() {
		t.Errorf("Frontiers = %+v, want fp32 failing first at 16, not monotonic; bf16 monotonic", a.Frontiers)
	}
	if len(a.Reruns) != 1 {
		t.Fatalf("Reruns = %+v, want one", a.Reruns)
	}
	if rr := a.Reruns[0]; rr.Snapshot.ID != "bf16-b24-first-fail" || rr.Measured.ID != "bf16-b24" ||
		rr.SnapshotOutcome != Fits || rr.MeasuredOutcome != OOM {
		t.Errorf("Reruns[0] = %s (%v) against %s (%v), want bf16-b24-first-fail (fits) against bf16-b24 (OOM)",
			rr.Snapshot.ID, rr.SnapshotOutcome, rr.Measured.ID, rr.MeasuredOutcome)
	}
	for _, tt := range []struct {
		p    capture.Point
		want Outcome
	}{{capture.Point{Fits: true}, Fits}, {capture.Point{OOM: true}, OOM}, {capture.Point{Error: "crashed"}, Failed}} {
		if got := OutcomeOf(tt.p); got != tt.want {
			t.Errorf("OutcomeOf(%+v) = %v, want %v", tt.p, got, tt.want)
		}
	}
}

func TestFitLine(t *testing.T) {
	f, ok := fitLine([]float64{1, 2, 3, 4}, []float64{3, 5, 7, 9.5})
	if !ok || math.Abs(f.Slope-2.15) > 1e-9 || math.Abs(f.Fixed-0.75) > 1e-9 || f.R2 < 0.99 || f.R2 >= 1 {
		t.Errorf("fitLine = %+v, want slope 2.15, fixed 0.75, R² in [0.99, 1)", f)
	}
	if _, ok := fitLine([]float64{2, 2}, []float64{1, 3}); ok {
		t.Error("fitLine with one distinct batch = ok, want not ok")
	}
}
