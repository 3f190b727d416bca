package sweep

import (
	"fmt"
	"testing"

	"github.com/memscope/memscope/capture"
)

// regimeFit is the least-squares line of one precision's points that fit,
// over those whose peak is in the phase of the largest batch's.
func regimeFit(r *capture.Results, prec string) (fixed, slope float64) {
	var largest capture.Point
	for _, p := range measured(r, prec) {
		if p.Fits && p.Batch > largest.Batch {
			largest = p
		}
	}
	var xs, ys []float64
	for _, p := range measured(r, prec) {
		if p.Fits && highestPhase(p) == highestPhase(largest) {
			xs, ys = append(xs, float64(p.Batch)), append(ys, float64(p.Peak.Allocated))
		}
	}
	fixed, slope, _ = lsq(xs, ys)
	return fixed, slope
}

// TestCompareFixtures compares sweep-llama (A) with sweep-mlp (B): every
// row holds the numbers results.json records on each side.
func TestCompareFixtures(t *testing.T) {
	dirA, ra := readFixture(t, "sweep-llama")
	dirB, rb := readFixture(t, "sweep-mlp")
	d := Compare(Analyze(dirA, ra), Analyze(dirB, rb))

	type key struct {
		prec  string
		batch int
	}
	type phaseKey struct {
		key
		phase string
	}
	peaks := func(r *capture.Results) (map[key]int64, map[phaseKey]int64) {
		pts, phs := map[key]int64{}, map[phaseKey]int64{}
		for _, prec := range r.Precisions {
			for _, p := range measured(r, prec) {
				if p.Fits {
					pts[key{prec, p.Batch}] = p.Peak.Allocated
					for name, n := range p.Phases {
						phs[phaseKey{key{prec, p.Batch}, name}] = n.Allocated
					}
				}
			}
		}
		return pts, phs
	}
	pa, pha := peaks(ra)
	pb, phb := peaks(rb)
	seen := map[key]bool{}
	both := 0
	for i, row := range d.Points {
		k := key{row.Precision, row.Batch}
		va, inA := pa[k]
		vb, inB := pb[k]
		if row.InA != inA || row.InB != inB || row.A != va || row.B != vb || row.Change != vb-va || seen[k] {
			t.Errorf("Points[%d] = %+v, want in A %v (%d), in B %v (%d), once", i, row, inA, va, inB, vb)
		}
		seen[k] = true
		if inA && inB {
			both++
		}
		if i > 0 {
			if p := d.Points[i-1]; p.Precision > row.Precision || p.Precision == row.Precision && p.Batch >= row.Batch {
				t.Errorf("Points[%d:%d] = %s %d, %s %d: want precision then batch order", i-1, i+1, p.Precision, p.Batch, row.Precision, row.Batch)
			}
		}
	}
	for k := range pa {
		if !seen[k] {
			t.Errorf("A's %v is not compared", k)
		}
	}
	for k := range pb {
		if !seen[k] {
			t.Errorf("B's %v is not compared", k)
		}
	}
	// batches 1, 2, 4, 8, 16 fit at both precisions in both sweeps
	if both != 10 {
		t.Errorf("%d points fit in both, want 10", both)
	}
	if len(d.Phases) != len(union(pha, phb)) {
		t.Errorf("%d phase rows, want %d", len(d.Phases), len(union(pha, phb)))
	}
	for i, row := range d.Phases {
		k := phaseKey{key{row.Precision, row.Batch}, row.Phase}
		if row.A != pha[k] || row.B != phb[k] || row.Change != phb[k]-pha[k] {
			t.Errorf("Phases[%d] = %+v, want A %d, B %d", i, row, pha[k], phb[k])
		}
	}
	var want []FitDelta
	for _, prec := range []string{"bf16", "fp32"} {
		fa, sa := regimeFit(ra, prec)
		fb, sb := regimeFit(rb, prec)
		want = append(want, FitDelta{prec, FitFixed, int64(fa), int64(fb), int64(fb) - int64(fa)},
			FitDelta{prec, FitSlope, int64(sa), int64(sb), int64(sb) - int64(sa)})
	}
	if len(d.Fits) != len(want) {
		t.Fatalf("Fits = %+v, want %+v", d.Fits, want)
	}
	for i, w := range want {
		// the fits are cut to whole bytes; the two sums may round apart by one
		if g := d.Fits[i]; g.Precision != w.Precision || g.Term != w.Term || abs64(g.A-w.A) > 1 || abs64(g.B-w.B) > 1 || g.Change != g.B-g.A {
			t.Errorf("Fits[%d] = %+v, want %+v", i, g, w)
		}
	}
}

// TestCompareSelf: a sweep against itself changes nothing, and every point
// is on both sides.
func TestCompareSelf(t *testing.T) {
	a := Analyze("", fakeSweep())
	d := Compare(a, a)
	if len(d.Points) != 15 || len(d.Fits) != 4 || len(d.Phases) != 15 {
		t.Errorf("%d points, %d phases, %d fit rows; want the 15 that fit (7 fp32, 8 bf16), their 15 backward phases, 2 per precision",
			len(d.Points), len(d.Phases), len(d.Fits))
	}
	for _, rows := range [][]string{deltas(d.Points), deltas(d.Phases), deltas(d.Fits)} {
		for _, r := range rows {
			t.Error(r)
		}
	}
	for _, p := range d.Points {
		if !p.InA || !p.InB {
			t.Errorf("%s batch %d: in A %v, in B %v; want both", p.Precision, p.Batch, p.InA, p.InB)
		}
	}
}

// deltas describes the rows whose change is not zero or not B − A.
func deltas[R PointDelta | PhaseDelta | FitDelta](rows []R) []string {
	var out []string
	for _, r := range rows {
		var a, b, c int64
		switch r := any(r).(type) {
		case PointDelta:
			a, b, c = r.A, r.B, r.Change
		case PhaseDelta:
			a, b, c = r.A, r.B, r.Change
		case FitDelta:
			a, b, c = r.A, r.B, r.Change
		}
		if c != 0 || a != b {
			out = append(out, fmt.Sprintf("%+v: changed against itself", r))
		}
	}
	return out
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
