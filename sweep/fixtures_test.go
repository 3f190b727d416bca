package sweep

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memscope/memscope/capture"
)

// The sweep fixtures were measured on an H200 (fixtures/sweep-*/README.md):
// each point of results.json holds what torch measured in that process.
// The fits, frontiers and savings are checked against what follows from
// those points, recomputed here: the least-squares line by its centred
// form, the frontier by scanning the outcomes as recorded.

// lsq fits y ≈ fixed + x·slope through the points, with R².
func lsq(xs, ys []float64) (fixed, slope, r2 float64) {
	var mx, my float64
	for i := range xs {
		mx += xs[i] / float64(len(xs))
		my += ys[i] / float64(len(ys))
	}
	var sxy, sxx, syy float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
		syy += (ys[i] - my) * (ys[i] - my)
	}
	slope = sxy / sxx
	fixed = my - slope*mx
	var res float64
	for i := range xs {
		d := ys[i] - (fixed + slope*xs[i])
		res += d * d
	}
	return fixed, slope, 1 - res/syy
}

// near reports whether got is within a relative 1e-9 of want.
func near(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

// measured returns the points of precision prec that were not snapshot
// re-runs, as results.json lists them.
func measured(r *capture.Results, prec string) []capture.Point {
	var out []capture.Point
	for _, p := range r.Points {
		if p.Precision == prec && p.Stage != capture.StageSnapshot {
			out = append(out, p)
		}
	}
	return out
}

// highestPhase is the phase of p with the highest peak allocated.
func highestPhase(p capture.Point) string {
	best := ""
	for _, name := range []string{"forward", "backward", "optimizer"} {
		if n, ok := p.Phases[name]; ok && (best == "" || n.Allocated > p.Phases[best].Allocated) {
			best = name
		}
	}
	return best
}

func readFixture(t *testing.T, name string) (string, *capture.Results) {
	t.Helper()
	dir := filepath.Join("..", "fixtures", name)
	r, err := capture.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, r
}

func TestSweepFixtures(t *testing.T) {
	for _, tt := range []struct {
		dir string
		// as results.json records them (and the fixtures' READMEs say)
		largestFit, firstFail map[string]int
		excluded              map[string][]int
		snapshotPrec          string
	}{
		{"sweep-llama", map[string]int{"fp32": 18, "bf16": 20}, map[string]int{"fp32": 19, "bf16": 21},
			map[string][]int{"fp32": {1, 2}, "bf16": {1, 2}}, "bf16"},
		{"sweep-mlp", map[string]int{"fp32": 27, "bf16": 43}, map[string]int{"fp32": 28, "bf16": 44},
			map[string][]int{"fp32": {1, 2, 4}, "bf16": {1, 2, 4, 8}}, "fp32"},
	} {
		t.Run(tt.dir, func(t *testing.T) {
			dir, r := readFixture(t, tt.dir)
			a := Analyze(dir, r)
			if len(a.Frontiers) != len(r.Precisions) || len(a.Fits) != len(r.Precisions) {
				t.Fatalf("%d frontiers and %d fits, want one of each per precision %v", len(a.Frontiers), len(a.Fits), r.Precisions)
			}
			fits := map[string]Fit{}
			for i, prec := range r.Precisions {
				// The frontier: the largest batch that fit, the smallest
				// that ran out of memory, and the peaks at the former.
				largest, first := capture.Point{}, 0
				for _, p := range measured(r, prec) {
					if p.Fits && p.Batch > largest.Batch {
						largest = p
					}
					if p.OOM && (first == 0 || p.Batch < first) {
						first = p.Batch
					}
				}
				if largest.Batch != tt.largestFit[prec] || first != tt.firstFail[prec] {
					t.Fatalf("%s in results.json: largest fit %d, first fail %d; the table says %d, %d",
						prec, largest.Batch, first, tt.largestFit[prec], tt.firstFail[prec])
				}
				f := a.Fits[i]
				fr := a.Frontiers[i]
				if fr.Precision != prec || fr.LargestFit != largest.Batch || fr.FirstFail != first || !fr.Exact ||
					fr.Allocated != largest.Peak.Allocated || fr.Reserved != largest.Peak.Reserved || !fr.Monotonic() {
					t.Errorf("Frontier(%s) = %+v, want largest fit %d (%d allocated, %d reserved), first fail %d, exact",
						prec, fr, largest.Batch, largest.Peak.Allocated, largest.Peak.Reserved, first)
				}
				// The fit: over the batches whose peak is in the phase that
				// holds the largest batch's.
				regime := highestPhase(largest)
				var xs, ys []float64
				var excluded []int
				for _, p := range measured(r, prec) {
					if !p.Fits {
						continue
					}
					if highestPhase(p) != regime {
						excluded = append(excluded, p.Batch)
						continue
					}
					xs, ys = append(xs, float64(p.Batch)), append(ys, float64(p.Peak.Allocated))
				}
				slices.Sort(excluded)
				fixed, slope, r2 := lsq(xs, ys)
				if f.Precision != prec || f.Phase != regime || f.Phase != "backward" || !slices.Equal(f.Excluded, excluded) ||
					!slices.Equal(excluded, tt.excluded[prec]) || f.Points != len(xs) ||
					!near(f.Fixed, fixed) || !near(f.Slope, slope) || math.Abs(f.R2-r2) > 1e-9 {
					t.Errorf("Fit(%s) = %+v, want the %s regime without batches %v: fixed %.1f, slope %.1f, R² %.6f over %d points",
						prec, f, regime, excluded, fixed, slope, r2, len(xs))
				}
				if want := (float64(r.MemoryLimit) - fixed) / slope; !near(fr.Predicted, want) {
					t.Errorf("Frontier(%s).Predicted = %g, want (limit − fixed) / slope = %g", prec, fr.Predicted, want)
				}
				fits[prec] = f
			}
			// bf16 against fp32: per sample, and at the largest batch both fit.
			if len(a.Savings) != 1 {
				t.Fatalf("Savings = %+v, want bf16 over fp32", a.Savings)
			}
			s := a.Savings[0]
			peaks := func(prec string) map[int]int64 {
				m := map[int]int64{}
				for _, p := range measured(r, prec) {
					if p.Fits {
						m[p.Batch] = p.Peak.Allocated
					}
				}
				return m
			}
			fp32, bf16 := peaks("fp32"), peaks("bf16")
			at := 0
			for b := range fp32 {
				if _, ok := bf16[b]; ok && b > at {
					at = b
				}
			}
			wantSlope := 1 - fits["bf16"].Slope/fits["fp32"].Slope
			wantPeak := 1 - float64(bf16[at])/float64(fp32[at])
			if s.Precision != "bf16" || s.Baseline != "fp32" || s.SlopeSaving == nil || !near(*s.SlopeSaving, wantSlope) ||
				s.At != at || s.PeakBaseline != fp32[at] || s.Peak != bf16[at] || s.PeakSaving == nil || !near(*s.PeakSaving, wantPeak) ||
				s.LargestFit != tt.largestFit["bf16"] || s.BaselineLargestFit != tt.largestFit["fp32"] {
				t.Errorf("Saving = %+v, want slope saving %.4f, at batch %d %d → %d (%.4f)", s, wantSlope, at, fp32[at], bf16[at], wantPeak)
			}
			// The files results.json names that the fixture left out.
			var missing []string
			for _, p := range r.Points {
				for _, f := range p.Files {
					if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
						missing = append(missing, f)
					}
				}
			}
			slices.Sort(missing)
			if !slices.Equal(a.Missing, missing) {
				t.Errorf("Missing = %q, want %q", a.Missing, missing)
			}
			checkSnapshots(t, tt.dir, dir, tt.snapshotPrec, a)
		})
	}
}

// checkSnapshots: a snapshot point re-runs a measured batch with recording
// on; recording must not change what is allocated.
func checkSnapshots(t *testing.T, name, dir, prec string, a *Analysis) {
	t.Helper()
	rows := map[int]capture.Point{}
	for _, p := range a.Rows {
		if p.Precision == prec {
			rows[p.Batch] = p
		}
	}
	if len(a.Snapshots) != 3 {
		t.Fatalf("%d snapshot points, want 3", len(a.Snapshots))
	}
	var reruns []Rerun
	for _, s := range a.Snapshots {
		m := rows[s.Batch]
		if name == "sweep-mlp" && s.Role == capture.RoleFirstFail {
			// Measured with 1 warm-up + 3 steps, batch 28 ran out of
			// memory in step 2; re-run with 1 + 1 steps it fit. The
			// analysis says so.
			if !s.Fits || !m.OOM {
				t.Errorf("mlp first-fail re-run: fits %v, measured OOM %v", s.Fits, m.OOM)
			}
			reruns = append(reruns, Rerun{Snapshot: s, Measured: m, SnapshotOutcome: Fits, MeasuredOutcome: OOM})
			continue
		}
		if s.Fits != m.Fits || s.OOM != m.OOM || s.Fits && s.Peak != m.Peak {
			t.Errorf("snapshot point %s: fits %v OOM %v peak %+v; measured point: fits %v OOM %v peak %+v",
				s.ID, s.Fits, s.OOM, s.Peak, m.Fits, m.OOM, m.Peak)
		}
		// results.json's numbers are the harness's point.json, merged
		var d struct {
			Peak capture.Numbers `json:"peak"`
			Fits bool            `json:"fits"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "points", s.ID, "point.json"))
		if err == nil {
			err = json.Unmarshal(b, &d)
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.Peak != s.Peak || d.Fits != s.Fits {
			t.Errorf("%s: results.json peak %+v fits %v, point.json %+v %v", s.ID, s.Peak, s.Fits, d.Peak, d.Fits)
		}
	}
	if len(a.Reruns) != len(reruns) {
		t.Fatalf("Reruns = %+v, want %+v", a.Reruns, reruns)
	}
	for i, want := range reruns {
		got := a.Reruns[i]
		if got.Snapshot.ID != want.Snapshot.ID || got.Measured.ID != want.Measured.ID ||
			got.SnapshotOutcome != want.SnapshotOutcome || got.MeasuredOutcome != want.MeasuredOutcome {
			t.Errorf("Reruns[%d] = %s (%v) against %s (%v), want %s (%v) against %s (%v)", i, got.Snapshot.ID, got.SnapshotOutcome,
				got.Measured.ID, got.MeasuredOutcome, want.Snapshot.ID, want.SnapshotOutcome, want.Measured.ID, want.MeasuredOutcome)
		}
	}
}
