package capture

import (
	"path/filepath"
	"slices"
	"testing"
)

// The sweep fixtures were measured on an H200 (fixtures/sweep-*/README.md).
// The fits and OOM outcomes are torch's: each point's point.json holds
// what torch measured in that process.
func TestSweepFixtures(t *testing.T) {
	for _, tt := range []struct {
		dir                      string
		largestFit, firstFail    map[string]int
		excluded                 map[string][]int
		snapshotPrec, regimePeak string
	}{
		{"sweep-llama", map[string]int{"fp32": 18, "bf16": 20}, map[string]int{"fp32": 19, "bf16": 21},
			map[string][]int{"fp32": {1, 2}, "bf16": {1, 2}}, "bf16", "backward"},
		{"sweep-mlp", map[string]int{"fp32": 27, "bf16": 43}, map[string]int{"fp32": 28, "bf16": 44},
			map[string][]int{"fp32": {1, 2, 4}, "bf16": {1, 2, 4, 8}}, "fp32", "backward"},
	} {
		t.Run(tt.dir, func(t *testing.T) {
			dir := filepath.Join("..", "fixtures", tt.dir)
			r, err := ReadResults(dir)
			if err != nil {
				t.Fatal(err)
			}
			a := AnalyzeSweep(dir, r)
			for _, f := range a.Frontiers {
				if f.LargestFit != tt.largestFit[f.Precision] || f.FirstFail != tt.firstFail[f.Precision] || !f.Exact {
					t.Errorf("Frontier(%s) = %+v, want largest fit %d, first fail %d, exact", f.Precision, f,
						tt.largestFit[f.Precision], tt.firstFail[f.Precision])
				}
			}
			if len(a.Fits) != 2 {
				t.Fatalf("%d fits, want 2", len(a.Fits))
			}
			for _, f := range a.Fits {
				if f.Phase != tt.regimePeak || !slices.Equal(f.Excluded, tt.excluded[f.Precision]) || f.R2 < 0.99 || f.Slope <= 0 {
					t.Errorf("Fit(%s) = %+v, want the %s regime without batches %v, R² ≥ 0.99", f.Precision, f,
						tt.regimePeak, tt.excluded[f.Precision])
				}
			}
			if len(a.Savings) != 1 || a.Savings[0].SlopeSaving == nil || *a.Savings[0].SlopeSaving <= 0 {
				t.Errorf("Savings = %+v, want bf16 saving per sample over fp32", a.Savings)
			}
			// A snapshot point re-runs a measured batch with recording on:
			// recording must not change what is allocated.
			measured := map[int]Point{}
			for _, p := range a.Rows {
				if p.Precision == tt.snapshotPrec {
					measured[p.Batch] = p
				}
			}
			if len(a.Snapshots) != 3 {
				t.Fatalf("%d snapshot points, want 3", len(a.Snapshots))
			}
			for _, s := range a.Snapshots {
				m := measured[s.Batch]
				if tt.dir == "sweep-mlp" && s.Role == RoleFirstFail {
					// Measured with 1 warm-up + 3 steps, batch 28 ran out of
					// memory in step 2; re-run with 1 + 1 steps it fit. The
					// analysis says so.
					if !s.Fits || !m.OOM || len(a.Warnings) != 1 {
						t.Errorf("mlp first-fail re-run: fits %v, measured OOM %v, warnings %q", s.Fits, m.OOM, a.Warnings)
					}
					continue
				}
				if s.Fits != m.Fits || s.OOM != m.OOM || s.Fits && s.Peak != m.Peak {
					t.Errorf("snapshot point %s: fits %v OOM %v peak %+v; measured point: fits %v OOM %v peak %+v",
						s.ID, s.Fits, s.OOM, s.Peak, m.Fits, m.OOM, m.Peak)
				}
				// results.json's numbers are the harness's point.json, merged
				var d pointDoc
				if err := readJSON(filepath.Join(dir, "points", s.ID, "point.json"), PointSchema, &d); err != nil {
					t.Fatal(err)
				}
				if d.Peak != s.Peak || d.Fits != s.Fits {
					t.Errorf("%s: results.json peak %+v fits %v, point.json %+v %v", s.ID, s.Peak, s.Fits, d.Peak, d.Fits)
				}
			}
		})
	}
}

func TestCaptureFixtures(t *testing.T) {
	ddp, err := ReadRun(filepath.Join("..", "fixtures", "capture-ddp"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ddp.Ranks) != 2 || ddp.Run.ExitCode != 0 || ddp.Spread == nil {
		t.Fatalf("capture-ddp: %d ranks, run %+v, spread %v", len(ddp.Ranks), ddp.Run, ddp.Spread)
	}
	p0, p1 := ddp.Ranks[0].Peak.Allocated, ddp.Ranks[1].Peak.Allocated
	if ddp.Spread.Rank != 1 || ddp.Spread.Excess != p1-(p0+p1)/2 || p1 <= p0 {
		t.Errorf("capture-ddp worst rank = %+v, want rank 1 (longer sequences): peaks %d, %d", ddp.Spread, p0, p1)
	}
	oom, err := ReadRun(filepath.Join("..", "fixtures", "capture-oom"))
	if err != nil {
		t.Fatal(err)
	}
	r := oom.Ranks[0]
	if oom.Run.ExitCode != 1 || r.ExitCode != 1 || r.Exception == nil || !r.Exception.OOM || len(r.OOM) != 1 ||
		r.OOM[0].Request != 256<<20 || r.OOM[0].Phase != "backward" {
		t.Errorf("capture-oom: exit %d/%d, exception %+v, OOM events %+v; want status 1 from an OOM asking 256 MiB in backward",
			oom.Run.ExitCode, r.ExitCode, r.Exception, r.OOM)
	}
}
