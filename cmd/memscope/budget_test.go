package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/snapshot"
)

// budgetResult is the part of 'memscope budget --json' the tests read.
type budgetResult struct {
	Schema string `json:"schema"`
	Kind   string `json:"kind"`
	Result struct {
		Phases []struct {
			Phase string `json:"phase"`
			Bytes int64  `json:"bytes"`
		} `json:"phases"`
		PeakPhase int `json:"peak_phase"`
		Fit       *struct {
			Memory  int64  `json:"memory"`
			Verdict string `json:"verdict"`
		} `json:"fit"`
		Fixes []struct {
			Change  string `json:"change"`
			NewPeak int64  `json:"new_peak"`
		} `json:"fixes"`
		Measured *struct {
			Phases []struct {
				Phase             string  `json:"phase"`
				Step              int     `json:"step"`
				Predicted         int64   `json:"predicted"`
				Measured          int64   `json:"measured"`
				GapPercent        float64 `json:"gap_percent"`
				Within            bool    `json:"within_tolerance"`
				RequestedGap      *int64  `json:"requested_gap"`
				PredictedDominant string  `json:"predicted_dominant"`
				MeasuredDominant  string  `json:"measured_dominant"`
				Responsible       string  `json:"responsible"`
			} `json:"phases"`
		} `json:"measured"`
		Notes []string `json:"notes"`
	} `json:"result"`
}

func runBudgetJSON(t *testing.T, args ...string) budgetResult {
	t.Helper()
	r := runMemscope(append([]string{"budget", "--json"}, args...)...)
	if r.err != nil {
		t.Fatalf("memscope budget %s: %v\n%s", strings.Join(args, " "), r.err, r.stderr)
	}
	var res budgetResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("decoding the JSON: %v\n%s", err, r.stdout)
	}
	if res.Schema != "memscope/v1" || res.Kind != "budget" {
		t.Errorf("schema %q kind %q, want memscope/v1 budget", res.Schema, res.Kind)
	}
	return res
}

// The done-when of the budget: on every real Llama capture, each phase's
// predicted peak is within 15% of torch's max_memory_allocated for it
// (truth.json), and the term predicted to dominate each phase's peak is the
// one that dominates the blocks the snapshot shows live there.
func TestBudgetAgainstFixtures(t *testing.T) {
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-14s %-9s %14s %14s %7s %10s  %s\n", "fixture", "phase", "predicted", "measured", "gap", "req. gap", "dominant (predicted = measured)")
	for _, fx := range []string{"llama-bf16", "llama-profiled", "llama-ckpt", "llama-wide"} {
		t.Run(fx, func(t *testing.T) {
			dir := filepath.Join("..", "..", "fixtures", fx)
			tr, err := budget.ReadTruth(filepath.Join(dir, "truth.json"))
			if err != nil {
				t.Fatal(err)
			}
			res := runBudgetJSON(t, "--run", dir)
			for _, n := range res.Result.Notes {
				if strings.Contains(n, "replay gives") {
					t.Errorf("note: %s", n)
				}
			}
			truthPeak := map[string]int64{}
			for _, row := range tr.Phases {
				truthPeak[row.Phase] = max(truthPeak[row.Phase], row.PeakAllocated)
			}
			if res.Result.Measured == nil || len(res.Result.Measured.Phases) != 3 {
				t.Fatalf("measured = %+v, want forward, backward and optimizer", res.Result.Measured)
			}
			for _, c := range res.Result.Measured.Phases {
				fmt.Fprintf(&table, "%-14s %-9s %14d %14d %+6.2f%% %+10d  %s = %s\n", fx, c.Phase, c.Predicted, c.Measured,
					c.GapPercent, *c.RequestedGap, c.PredictedDominant, c.MeasuredDominant)
				if c.Measured != truthPeak[c.Phase] {
					t.Errorf("%s: measured %d, want truth's max_memory_allocated %d", c.Phase, c.Measured, truthPeak[c.Phase])
				}
				if !c.Within || c.GapPercent > 15 || c.GapPercent < -15 {
					t.Errorf("%s: predicted %d, measured %d: %+.1f%%, want within 15%%", c.Phase, c.Predicted, c.Measured, c.GapPercent)
				}
				if c.PredictedDominant != c.MeasuredDominant {
					t.Errorf("%s: predicted dominant term %q, measured %q", c.Phase, c.PredictedDominant, c.MeasuredDominant)
				}
			}
			if res.Result.Fit == nil || res.Result.Fit.Memory != tr.DeviceTotal || res.Result.Fit.Verdict != "fits" {
				t.Errorf("fit = %+v, want the H200 of truth.json (%d bytes), fits", res.Result.Fit, tr.DeviceTotal)
			}
		})
	}
	t.Log(table.String())
}

// The model from flags is the model from the config.
func TestBudgetFlagsMatchConfig(t *testing.T) {
	cfg := runBudgetJSON(t, "--config", "../../budget/testdata/llama-3.2-1b.json", "--batch", "4", "--seq", "4096")
	flags := runBudgetJSON(t, "--vocab", "128256", "--hidden", "2048", "--layers", "16", "--heads", "32",
		"--kv-heads", "8", "--intermediate", "8192", "--tied", "--batch", "4", "--seq", "4096")
	if fmt.Sprint(cfg.Result.Phases) != fmt.Sprint(flags.Result.Phases) {
		t.Errorf("phases from flags %v, from the config %v", flags.Result.Phases, cfg.Result.Phases)
	}
	if got := cfg.Result.Phases[cfg.Result.PeakPhase]; got.Phase != "backward" || got.Bytes != 76_780_888_064 {
		t.Errorf("peak %+v, want backward 76,780,888,064 (budget's hand-computed value)", got)
	}
	if len(cfg.Result.Fixes) == 0 || cfg.Result.Fixes[0].Change != "--loss fused" {
		t.Errorf("fixes %+v, want --loss fused first", cfg.Result.Fixes)
	}
}

func TestBudgetTextGolden(t *testing.T) {
	r := runMemscope("budget", "--config", "../../budget/testdata/llama-3.2-1b.json", "--batch", "4", "--seq", "4096", "--device-memory", "H100")
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	checkGolden(t, "budget-llama-3.2-1b-b4-s4096-h100", r.stdout)
}

func TestBudgetInfer(t *testing.T) {
	res := runBudgetJSON(t, "--config", "../../budget/testdata/llama-3.2-1b.json", "--mode", "infer",
		"--precision", "bf16", "--batch", "8", "--seq", "1024", "--max-tokens", "65536", "--device-memory", "24GiB")
	if len(res.Result.Phases) != 1 || res.Result.Phases[0].Phase != "forward" {
		t.Fatalf("phases %+v, want one forward", res.Result.Phases)
	}
	// bf16 weights 1,235,814,400 × 2 B + KV cache 65,536 tokens ×
	// 2 × 16 layers × 512 × 2 B (32 KiB a token, 2 GiB) at least.
	if b := res.Result.Phases[0].Bytes; b < 2_471_628_800+2<<30 {
		t.Errorf("inference peak %d, want at least weights + KV cache", b)
	}
	if res.Result.Fit == nil || res.Result.Fit.Memory != 24<<30 {
		t.Errorf("fit %+v, want against 24 GiB", res.Result.Fit)
	}
}

func TestBudgetErrors(t *testing.T) {
	cfg := "../../budget/testdata/llama-3.2-1b.json"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--seq", "10"}, "no model"},
		{[]string{"--config", cfg}, "--seq is required"},
		{[]string{"--config", cfg, "--seq", "8", "--precision", "fp8"}, `precision "fp8"`},
		{[]string{"--config", cfg, "--seq", "8", "--device-memory", "TPUv5"}, "--device-memory"},
		{[]string{"--config", cfg, "--seq", "8", "--overhead", "1G"}, "ambiguous unit"},
		{[]string{"--config", "no-such-config.json", "--seq", "8"}, "no-such-config.json"},
		{[]string{"--config", cfg, "--seq", "8", "no-such.pickle"}, "no-such.pickle"},
		{[]string{"--config", cfg, "--seq", "8", "--snapshot", "a.pickle", "b.pickle"}, "give the snapshot once"},
	} {
		r := runMemscope(append([]string{"budget"}, c.args...)...)
		if r.code != exitError || r.err == nil || !strings.Contains(r.err.Error(), c.want) {
			t.Errorf("memscope budget %s = exit %d, %v; want exit %d and an error containing %q",
				strings.Join(c.args, " "), r.code, r.err, exitError, c.want)
		}
	}
}

// TestBudgetSnapshotFixes: given the plain run of fixtures/advise and a
// flags-only model matching it (its truth.json "model"), budget puts
// advise's fixes of the snapshot next to the predicted ones: the JSON's
// snapshot_fixes are advise's own, in its order, and the text's table
// gives both new peaks on the rows of the fixes both suggest.
func TestBudgetSnapshotFixes(t *testing.T) {
	const dir = "../../fixtures/advise/train-none"
	flags := []string{"--vocab", "128256", "--hidden", "512", "--layers", "4", "--heads", "8", "--kv-heads", "4",
		"--intermediate", "1408", "--batch", "4", "--seq", "1024", "--precision", "bf16-autocast", "--optimizer", "adamw"}
	s, err := snapshot.Open(dir + "/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	ad := attribution.Analyze(s, attribution.Options{Device: -1}).Primary().Advise(attribution.AdviseOptions{})
	if len(ad.Fixes) == 0 {
		t.Fatal("Advise(train-none) has no fixes")
	}
	r := runMemscope(append(append([]string{"budget", "--json"}, flags...), dir+"/snapshot.pickle")...)
	if r.err != nil {
		t.Fatalf("memscope budget --json: %v\n%s", r.err, r.stderr)
	}
	var doc struct {
		Result struct {
			Fixes []struct {
				NewPeak int64 `json:"new_peak"`
			} `json:"fixes"`
			SnapshotFixes []report.AdviceFixJSON `json:"snapshot_fixes"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	got := doc.Result.SnapshotFixes
	if len(got) != len(ad.Fixes) {
		t.Fatalf("budget snapshot_fixes: %d, want advise's %d", len(got), len(ad.Fixes))
	}
	for i, f := range ad.Fixes {
		if got[i].NewPeak != f.NewPeak || got[i].Removes != f.Removes || got[i].CostRank != f.CostRank {
			t.Errorf("snapshot_fixes[%d] = %+v, want advise's new peak %d, removes %d", i, got[i], f.NewPeak, f.Removes)
		}
	}
	text := runMemscope(append(append([]string{"budget"}, flags...), dir+"/snapshot.pickle")...)
	if text.err != nil {
		t.Fatal(text.err)
	}
	if !strings.Contains(text.stdout, "predicted new peak  from the snapshot") {
		t.Fatalf("budget text has no table of both fixes:\n%s", text.stdout)
	}
	for _, f := range ad.Fixes {
		if f.Kind != budget.FixFusedLoss {
			continue
		}
		// The fused loss is predicted and computed: both peaks on its row.
		row := ""
		for _, line := range strings.Split(text.stdout, "\n") {
			if strings.HasPrefix(line, "  fused linear cross-entropy") && strings.Contains(line, "(−") {
				row = line
			}
		}
		if !strings.Contains(row, units.Bytes(f.NewPeak)) || strings.Count(row, "(−") != 2 {
			t.Errorf("budget's fused-loss row = %q, want the predicted new peak and advise's %s", row, units.Bytes(f.NewPeak))
		}
	}
	// Without a snapshot, neither.
	if r := runMemscope(append([]string{"budget", "--json"}, flags...)...); strings.Contains(r.stdout, "snapshot_fixes") {
		t.Error("budget without a snapshot writes snapshot_fixes")
	}
}
