package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/truth"
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
			tr, err := readTruthFile(filepath.Join(dir, "truth.json"))
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

// TestTruthFileInInternalTruth: internal/truth.File reads every field of
// the budget's truthFile, to the same values, from every fixture, so that
// budget --truth can switch to it.
func TestTruthFileInInternalTruth(t *testing.T) {
	if n := reflect.TypeFor[truthFile]().NumField(); n != 4 {
		t.Fatalf("truthFile has %d fields, this test compares 4: compare the new ones", n)
	}
	dirs, err := truth.Fixtures("../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		path := filepath.Join(dir, "truth.json")
		old, err := readTruthFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := truth.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		if old.DeviceName != f.DeviceName || old.DeviceTotal != f.DeviceTotal {
			t.Errorf("%s: device %q %d, truthFile reads %q %d", path, f.DeviceName, f.DeviceTotal, old.DeviceName, old.DeviceTotal)
		}
		oa, a := old.Args, f.Args
		if [8]int64{oa.Vocab, oa.Hidden, oa.Intermediate, oa.Layers, oa.Heads, oa.Seq, oa.Batch, oa.KVHeads} !=
			[8]int64{a.Vocab, a.Hidden, a.Intermediate, a.Layers, a.Heads, a.Seq, a.Batch, a.KVHeads} ||
			!reflect.DeepEqual(oa.Checkpointing, a.Checkpointing) {
			t.Errorf("%s: args %+v, truthFile reads %+v", path, a, oa)
		}
		if len(old.Phases) != len(f.Phases) {
			t.Fatalf("%s: %d phases, truthFile reads %d", path, len(f.Phases), len(old.Phases))
		}
		for i, p := range old.Phases {
			if q := f.Phases[i]; p.Step != q.Step || p.Phase != q.Phase || p.PeakAllocated != q.PeakAllocated || p.PeakRequested != q.PeakRequested {
				t.Errorf("%s: phase %d = %+v, truthFile reads %+v", path, i, q, p)
			}
		}
	}
}
