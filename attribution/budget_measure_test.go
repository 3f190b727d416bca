package attribution

import (
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/budget"
)

// MeasureBudget on the harness's Llama captures: each phase's measured peak
// is torch's max_memory_allocated for it (the highest over the steady
// steps, truth.json's peak_allocated), at a step where torch saw it, with
// what was live there charged to terms and categories that add up to it.
func TestMeasureBudgetMatchesTorch(t *testing.T) {
	for _, fx := range []string{"llama-bf16", "llama-ckpt"} {
		t.Run(fx, func(t *testing.T) {
			dir := filepath.Join("..", "fixtures", fx)
			tr, err := budget.ReadTruth(filepath.Join(dir, "truth.json"))
			if err != nil {
				t.Fatal(err)
			}
			m, ok := budget.TruthModel(tr, fx)
			if !ok {
				t.Fatal("truth.json has no model shape")
			}
			s := budget.DefaultShape()
			s.Batch, s.Seq = tr.Args.Batch, tr.Args.Seq
			if tr.Args.Checkpointed() {
				s.Checkpointing = budget.FullCheckpointing
			}
			p, err := budget.Predict(m, s)
			if err != nil {
				t.Fatal(err)
			}
			ms, notes := MeasureBudget(fixtureAnalysis(t, dir).Primary(), p)
			if len(notes) != 0 {
				t.Errorf("MeasureBudget notes = %+v, want none", notes)
			}
			last := -1
			for _, row := range tr.Phases {
				last = max(last, row.Step)
			}
			want := map[string]int64{}
			steps := map[string]map[int]bool{}
			var names []string
			for _, row := range tr.Phases {
				if !budget.SteadyPhase(row.Step, last) {
					continue
				}
				if _, ok := want[row.Phase]; !ok {
					names = append(names, row.Phase)
					steps[row.Phase] = map[int]bool{}
				}
				if row.PeakAllocated > want[row.Phase] {
					want[row.Phase] = row.PeakAllocated
					clear(steps[row.Phase])
				}
				if row.PeakAllocated == want[row.Phase] {
					steps[row.Phase][row.Step] = true
				}
			}
			if len(ms) != len(names) {
				t.Fatalf("MeasureBudget phases = %d, want truth's %d (%v)", len(ms), len(names), names)
			}
			for i, m := range ms {
				if m.Phase != names[i] {
					t.Errorf("phase %d = %s, want %s", i, m.Phase, names[i])
				}
				if m.Peak != want[m.Phase] {
					t.Errorf("%s: measured peak %d, want torch's peak_allocated %d", m.Phase, m.Peak, want[m.Phase])
				}
				if !steps[m.Phase][m.Step] {
					t.Errorf("%s: measured at step %d, want one of torch's %v", m.Phase, m.Step, steps[m.Phase])
				}
				if !m.HasTerms {
					t.Errorf("%s: no terms measured", m.Phase)
				}
				var terms, cats int64
				for _, b := range m.ByTerm {
					terms += b
				}
				for _, b := range m.ByCategory {
					cats += b
				}
				if terms > m.Peak || cats != m.Peak {
					t.Errorf("%s: by term %d, by category %d, want ≤ and = the peak %d", m.Phase, terms, cats, m.Peak)
				}
			}
		})
	}
}

// TestMeasureBudgetInference: an inference prediction's forward phase is
// measured at generate()'s prefill, its peak torch's max_memory_allocated
// of the run, and the KV cache term is the kv cache category there.
func TestMeasureBudgetInference(t *testing.T) {
	dir := filepath.Join("..", "fixtures", "advise", "infer-dynamic")
	tr, err := budget.ReadTruth(filepath.Join(dir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := budget.Model{Name: "infer-dynamic", Vocab: 32000, Hidden: 1024, Layers: 4, Heads: 16, KVHeads: 4, Intermediate: 2816,
		MLP: budget.GatedMLP, Attention: budget.SDPA}
	s := budget.DefaultShape()
	s.Mode, s.Precision, s.Batch, s.Seq, s.MaxTokens = budget.Infer, budget.BF16, 4, 512, 4*(512+32)
	p, err := budget.Predict(m, s)
	if err != nil {
		t.Fatal(err)
	}
	d := fixtureAnalysis(t, dir).Primary()
	ms, notes := MeasureBudget(d, p)
	if len(ms) == 0 || ms[0].Phase != "forward" {
		t.Fatalf("measured %+v (notes %v), want the prefill as forward first", ms, notes)
	}
	if ms[0].Peak != tr.Window.MaxAllocated {
		t.Errorf("forward peak %d, torch's max_memory_allocated %d", ms[0].Peak, tr.Window.MaxAllocated)
	}
	if got, want := ms[0].ByTerm[budget.KVCache], ms[0].ByCategory["kv cache"]; got != want || want == 0 {
		t.Errorf("KV cache term %d, kv cache category %d: want them equal and non-zero", got, want)
	}
	for _, n := range notes {
		if n.Kind == budget.NoteOnlyStepZero {
			t.Errorf("an inference run is noted as only step 0 (no optimizer state to create)")
		}
	}
}

// TestHoldBudget: a prediction held against the llama-bf16 capture: from
// the snapshot and truth.json, each compared phase's measured peak is
// torch's, and the snapshot's own fixes come along; from truth.json alone
// the same peaks, and no fixes.
func TestHoldBudget(t *testing.T) {
	dir := filepath.Join("..", "fixtures", "llama-bf16")
	tr, err := budget.ReadTruth(filepath.Join(dir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := budget.TruthModel(tr, "llama-bf16")
	s := budget.DefaultShape()
	s.Batch, s.Seq = tr.Args.Batch, tr.Args.Seq
	p, err := budget.Predict(m, s)
	if err != nil {
		t.Fatal(err)
	}
	torch, last := map[string]int64{}, -1
	for _, row := range tr.Phases {
		last = max(last, row.Step)
	}
	for _, row := range tr.Phases {
		if budget.SteadyPhase(row.Step, last) {
			torch[row.Phase] = max(torch[row.Phase], row.PeakAllocated)
		}
	}
	for _, c := range []struct {
		name string
		d    *Device
	}{{"snapshot and truth", fixtureAnalysis(t, dir).Primary()}, {"truth alone", nil}} {
		t.Run(c.name, func(t *testing.T) {
			cmp, _, advice := HoldBudget(p, c.d, tr, 8)
			if len(cmp) == 0 {
				t.Fatal("HoldBudget compared no phase")
			}
			for _, x := range cmp {
				if x.Measured != torch[x.Phase] {
					t.Errorf("%s: measured %d, want torch's %d", x.Phase, x.Measured, torch[x.Phase])
				}
			}
			if (advice != nil) != (c.d != nil) {
				t.Errorf("HoldBudget advice %v, want one with the snapshot only", advice != nil)
			}
		})
	}
}
