package sweep

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/capture"
)

func TestWorstRank(t *testing.T) {
	rp := func(rank int, peak int64) capture.RankPeak {
		return capture.RankPeak{Rank: rank, Peak: capture.Numbers{Allocated: peak}}
	}
	s, ok := WorstRank([]capture.RankPeak{rp(0, 100), rp(1, 130), rp(2, 110), {Rank: 3, Missing: true}})
	if !ok || s.Rank != 1 || s.Median != 110 || s.Excess != 20 || s.Ranks != 3 {
		t.Errorf("WorstRank = %+v, %v, want rank 1, median 110, excess 20 over 3 ranks", s, ok)
	}
	s, _ = WorstRank([]capture.RankPeak{rp(0, 100), rp(1, 140)})
	if s.Rank != 1 || s.Median != 120 || math.Abs(s.ExcessFrac-20.0/120) > 1e-12 {
		t.Errorf("WorstRank of two = %+v, want rank 1, median 120", s)
	}
	if _, ok := WorstRank([]capture.RankPeak{rp(0, 1)}); ok {
		t.Error("WorstRank of one rank = ok, want not ok")
	}
}

// TestSummarizeRun checks the summary of capture runs against each rank's
// capture.json, read here as plain JSON: the worst rank is the one with
// the highest peak, above the median of the two; each phase's peak is the
// highest of its rows over the ranks.
func TestSummarizeRun(t *testing.T) {
	for _, dir := range []string{"../capture/testdata/run-fake-2ranks", "../fixtures/capture-ddp"} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			d, err := capture.ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			s := SummarizeRun(d)
			type row struct {
				Step          int    `json:"step"`
				Phase         string `json:"phase"`
				PeakAllocated int64  `json:"peak_allocated"`
			}
			var peaks [2]int64
			phase := map[string]int64{}
			steps := map[string]map[int]bool{}
			var order []string
			for rank := range 2 {
				var c struct {
					Peak   capture.Numbers `json:"peak"`
					Phases []row           `json:"phases"`
				}
				b, err := os.ReadFile(filepath.Join(dir, capture.RankFile("capture", ".json", rank, 2)))
				if err == nil {
					err = json.Unmarshal(b, &c)
				}
				if err != nil {
					t.Fatal(err)
				}
				peaks[rank] = c.Peak.Allocated
				for _, r := range c.Phases {
					if r.Phase == "other" || r.Phase == "setup" {
						continue
					}
					if _, ok := phase[r.Phase]; !ok {
						order = append(order, r.Phase)
						steps[r.Phase] = map[int]bool{}
					}
					phase[r.Phase] = max(phase[r.Phase], r.PeakAllocated)
					steps[r.Phase][r.Step] = true
				}
			}
			worst := 0
			if peaks[1] > peaks[0] {
				worst = 1
			}
			median := (peaks[0] + peaks[1]) / 2
			if sp := s.Spread; sp == nil || sp.Rank != worst || sp.Peak != peaks[worst] || sp.Median != median ||
				sp.Excess != peaks[worst]-median || sp.Ranks != 2 {
				t.Errorf("Spread = %+v, want rank %d at %d, %d over the median %d of 2", sp, worst, peaks[worst], peaks[worst]-median, median)
			}
			if len(s.Phases) != len(order) {
				t.Fatalf("Phases = %+v, want %q", s.Phases, order)
			}
			for i, p := range s.Phases {
				if p.Phase != order[i] || p.Peak.Allocated != phase[p.Phase] || p.Steps != len(steps[p.Phase]) {
					t.Errorf("Phases[%d] = %+v, want %s at %d over %d steps", i, p, order[i], phase[order[i]], len(steps[order[i]]))
				}
			}
			if s.Dir != dir || len(s.Ranks) != 2 {
				t.Errorf("summary of %s holds dir %q and %d ranks", dir, s.Dir, len(s.Ranks))
			}
		})
	}
	// capture-ddp: rank 1 ran the longer sequences
	d, err := capture.ReadRun("../fixtures/capture-ddp")
	if err != nil {
		t.Fatal(err)
	}
	if s := SummarizeRun(d); s.Spread == nil || s.Spread.Rank != 1 {
		t.Errorf("capture-ddp worst rank = %+v, want rank 1", s.Spread)
	}
	// one rank left: no spread
	one := t.TempDir()
	for _, f := range []string{"run.json", "capture.rank0.json"} {
		b, err := os.ReadFile(filepath.Join("..", "capture", "testdata", "run-fake-2ranks", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(one, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err = capture.ReadRun(one)
	if err != nil {
		t.Fatal(err)
	}
	if s := SummarizeRun(d); s.Spread != nil || len(s.Phases) == 0 {
		t.Errorf("SummarizeRun with rank 1 gone: spread %+v, %d phases; want none, rank 0's phases", s.Spread, len(s.Phases))
	}
}
