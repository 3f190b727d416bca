package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/units"
)

// smallPrediction is a two-layer model, small enough to read.
func smallPrediction(t *testing.T) *budget.Prediction {
	t.Helper()
	m := budget.Model{Name: "small", Vocab: 1000, Hidden: 64, Layers: 2, Heads: 4, KVHeads: 4, Intermediate: 128,
		MLP: budget.GatedMLP, Attention: budget.SDPA}
	s := budget.DefaultShape()
	s.Batch, s.Seq = 2, 64
	p, err := budget.Predict(m, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Each note kind in words, in text ("note: …") and in the JSON notes, after
// the config's warnings.
func TestBudgetNoteWords(t *testing.T) {
	for _, c := range []struct {
		note budget.Note
		want string
	}{
		{budget.Note{Kind: budget.NoteHarnessModel}, "model from run/truth.json: the capture harness's LlamaForCausalLM (untied, SDPA, gated MLP)"},
		{budget.Note{Kind: budget.NoteNoPhases}, "run/snapshot.pickle: no training phases found; nothing to compare"},
		{budget.Note{Kind: budget.NoteOnlyStepZero}, "run/snapshot.pickle: only step 0 was recorded; the optimizer creates its state there, so it is not a steady step"},
		{budget.Note{Kind: budget.NoteReplayDiffers, Step: 2, Phase: "backward", Replayed: 3 << 20, Torch: 5 << 30},
			"step 2 backward: the snapshot's replay gives 3.00 MiB, torch 5.00 GiB; using torch's"},
		{budget.Note{Kind: budget.NoteNoMatch}, "no measured phase matches a predicted one (forward, backward, optimizer): run/snapshot.pickle, run/truth.json holds no phase of a steady step (the setup outside steps and step 0, where the optimizer makes its state, are not compared)"},
		{budget.Note{Kind: budget.NoteNoMatch, Phase: "run, generate"}, "no measured phase matches a predicted one (forward, backward, optimizer): run/snapshot.pickle, run/truth.json measured run, generate"},
		{budget.Note{Kind: budget.NoteAllOff}, "every phase is off by more than 15%: check that the capture ran this model and shape"},
		{budget.Note{Kind: 99}, "note of kind 99"},
	} {
		t.Run(c.want, func(t *testing.T) {
			r := &Budget{Prediction: smallPrediction(t), Snapshot: "run/snapshot.pickle", Truth: "run/truth.json",
				ConfigWarnings: []budget.ConfigWarning{{Kind: budget.ConfigAssumedUntied, File: "config.json"}}, Notes: []budget.Note{c.note}}
			var text, js bytes.Buffer
			if err := Write(&text, Text, r); err != nil {
				t.Fatal(err)
			}
			if err := Write(&js, JSON, r); err != nil {
				t.Fatal(err)
			}
			if want := "note: config.json: tie_word_embeddings absent; assumed untied\nnote: " + c.want + "\n"; !strings.Contains(text.String(), want) {
				t.Errorf("text has no %q:\n%s", want, text.String())
			}
			var doc ResultDoc[struct {
				Notes    []string `json:"notes"`
				Measured *struct {
					Sources []string `json:"sources"`
				} `json:"measured"`
			}]
			if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if got := doc.Result.Notes; len(got) != 2 || got[0] != "config.json: tie_word_embeddings absent; assumed untied" || got[1] != c.want {
				t.Errorf("JSON notes = %q, want the config's warning and %q", got, c.want)
			}
			if m := doc.Result.Measured; m == nil || len(m.Sources) != 2 || m.Sources[0] != "run/snapshot.pickle" {
				t.Errorf("JSON measured = %+v, want sources snapshot, truth", m)
			}
		})
	}
}

// The document: schema, kind and the prediction's fields under "result";
// without measured sources, no "measured"; notes never null.
func TestBudgetDocument(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, JSON, &Budget{Prediction: smallPrediction(t)}); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["schema"] != Schema || doc["kind"] != "budget" {
		t.Errorf("schema %v kind %v, want %s budget", doc["schema"], doc["kind"], Schema)
	}
	res, _ := doc["result"].(map[string]any)
	for _, k := range []string{"model", "shape", "params", "terms", "phases", "peak_phase", "fixes", "notes"} {
		if _, ok := res[k]; !ok {
			t.Errorf("result has no %q", k)
		}
	}
	if _, ok := res["measured"]; ok {
		t.Errorf("result has \"measured\" with nothing measured")
	}
	if n, ok := res["notes"].([]any); !ok || len(n) != 0 {
		t.Errorf("notes = %v, want []", res["notes"])
	}
}

// Every fix kind has a name, the flags that model it and a cost; the
// numbers in them come from the run with the fix.
func TestBudgetFixWords(t *testing.T) {
	for k := budget.FixBF16Weights; k <= budget.FixMicroBatch; k++ {
		w := budgetFixText(budget.Fix{Kind: k})
		if w.name == "" || strings.HasPrefix(w.name, "fix of kind") || !strings.HasPrefix(w.change, "--") || w.cost == "" {
			t.Errorf("budgetFixText(kind %d) = %+v, want a name, flags and a cost", k, w)
		}
	}
	// The kinds only advise computes have no budget flag, but a name and a
	// cost.
	for k := budget.FixBF16Moments; k <= budget.FixReleaseLeak; k++ {
		if w := budgetFixText(budget.Fix{Kind: k}); w.name == "" || strings.HasPrefix(w.name, "fix of kind") || w.cost == "" {
			t.Errorf("budgetFixText(kind %d) = %+v, want a name and a cost", k, w)
		}
	}
	s := budget.DefaultShape()
	s.Batch, s.Accumulation, s.ShardRanks = 2, 4, 16
	for _, c := range []struct {
		kind        budget.FixKind
		name, flags string
	}{
		{budget.FixMicroBatch, "micro-batch 2 with 4-step gradient accumulation", "--batch 2 --accumulation 4"},
		{budget.FixShardOptimizer, "shard optimizer state over 16 data-parallel ranks (ZeRO-1, FSDP)", "--shard-ranks 16"},
	} {
		if w := budgetFixText(budget.Fix{Kind: c.kind, Shape: s}); w.name != c.name || w.change != c.flags {
			t.Errorf("budgetFixText(kind %d) = %q [%q], want %q [%q]", c.kind, w.name, w.change, c.name, c.flags)
		}
	}
}

// The prediction's warnings in words, in text after the notes and in the
// JSON "warnings".
func TestBudgetWarningWords(t *testing.T) {
	p := smallPrediction(t)
	s := p.Shape
	s.Precision = budget.BF16
	p, err := budget.Predict(p.Model, s)
	if err != nil {
		t.Fatal(err)
	}
	want := "pure bf16 keeps AdamW's moments in bf16: 8 bytes per parameter, but updates smaller than bf16's resolution are lost"
	var text, js bytes.Buffer
	if err := Write(&text, Text, &Budget{Prediction: p}); err != nil {
		t.Fatal(err)
	}
	if err := Write(&js, JSON, &Budget{Prediction: p}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "note: "+want+"\n") {
		t.Errorf("text has no note %q:\n%s", want, text.String())
	}
	var doc ResultDoc[struct {
		Warnings []string `json:"warnings"`
	}]
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if w := doc.Result.Warnings; len(w) != 1 || w[0] != want {
		t.Errorf("JSON warnings = %q, want [%q]", w, want)
	}
	if got := budgetWarningText(budget.WarnCheckpointingInfer); got != "activation checkpointing has no effect in inference" {
		t.Errorf("budgetWarningText(WarnCheckpointingInfer) = %q", got)
	}
}

// The fit in words: the headroom left, or how many times the device the
// run needs and how many bytes it is short.
func TestBudgetFitWords(t *testing.T) {
	for _, c := range []struct {
		fit  budget.Fit
		want string
	}{
		{budget.Fit{Memory: 80 << 30, Need: 176 << 30, Headroom: -96 << 30, HeadroomPercent: -120, Verdict: budget.DoesNotFit},
			"does not fit: needs 2.2× the device, 96.00 GiB short"},
		{budget.Fit{Memory: 100 << 30, Need: 97 << 30, Headroom: 3 << 30, HeadroomPercent: 3, Verdict: budget.Tight},
			"tight: 3.0% of the device left"},
		{budget.Fit{Memory: 100 << 30, Need: 88 << 30, Headroom: 12 << 30, HeadroomPercent: 12, Verdict: budget.Fits},
			"fits: 12.0% of the device left"},
	} {
		if got := budgetFitText(&c.fit); got != c.want {
			t.Errorf("budgetFitText(%+v) = %q, want %q", c.fit, got, c.want)
		}
	}
}

// The model states' bytes per parameter are those of the term's bytes
// beside them: foreach AdamW under autocast holds 4 (weights) + 4
// (gradients) + 8 (moments) + 4 (the step's sqrt(exp_avg_sq)) at the
// optimizer peak. The document's model has the derived head dimension.
func TestBudgetStatesPerParam(t *testing.T) {
	p := smallPrediction(t)
	var text, js bytes.Buffer
	if err := Write(&text, Text, &Budget{Prediction: p}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("  %-18s %11s   20 B/param\n", budget.ModelStates, units.Bytes(20*p.Params.Total))
	if !strings.Contains(text.String(), want) {
		t.Errorf("text has no %q:\n%s", want, text.String())
	}
	if err := Write(&js, JSON, &Budget{Prediction: p}); err != nil {
		t.Fatal(err)
	}
	var doc ResultDoc[struct {
		Model struct {
			HeadDim int64 `json:"head_dim"`
		} `json:"model"`
	}]
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Result.Model.HeadDim != 16 {
		t.Errorf("model.head_dim = %d, want 16 (hidden 64 / 4 heads)", doc.Result.Model.HeadDim)
	}
}

// Every lifetime has words, and the document's parts carry them.
func TestBudgetLiveWords(t *testing.T) {
	for l := budget.LiveWholeStep; l <= budget.LiveOutside; l++ {
		if w := budgetLiveText(l); w == "" || strings.HasPrefix(w, "lifetime ") {
			t.Errorf("budgetLiveText(%d) = %q, want words", l, w)
		}
	}
	var js bytes.Buffer
	if err := Write(&js, JSON, &Budget{Prediction: smallPrediction(t)}); err != nil {
		t.Fatal(err)
	}
	var doc ResultDoc[struct {
		Terms []struct {
			Parts []struct {
				Name string `json:"name"`
				Live string `json:"live"`
			} `json:"parts"`
		} `json:"terms"`
	}]
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Result.Terms) != int(budget.NumTerms) {
		t.Fatalf("terms = %d, want %d", len(doc.Result.Terms), budget.NumTerms)
	}
	if p := doc.Result.Terms[budget.ModelStates].Parts[0]; p.Live != "whole step" {
		t.Errorf("model states' first part %q lives %q, want whole step", p.Name, p.Live)
	}
}

// TestBudgetWordsFollowTheShape: the final norm's formula says 6 B per
// hidden unit when the residuals are bf16 (the fp32 input the norm computes
// on beside the bf16 one), and a plain MLP's inference intermediates are
// named as the plain MLP makes them.
func TestBudgetWordsFollowTheShape(t *testing.T) {
	w := partWords[budget.PartFinalNorm]
	if got := w.formula(budget.Operands{Tokens: 2048, Elem: 2}); !strings.Contains(got, "hidden × 6 B + 4 B") {
		t.Errorf("bf16 final norm formula %q", got)
	}
	if got := w.formula(budget.Operands{Tokens: 2048, Elem: 4}); !strings.Contains(got, "hidden × 4 B + 4 B") {
		t.Errorf("fp32 final norm formula %q", got)
	}
	m := partWords[budget.PartInferMLP]
	if got := m.name(budget.Operands{Count: 2}); got != "MLP intermediates: up output, activation" {
		t.Errorf("plain MLP: %q", got)
	}
	if got := m.name(budget.Operands{Count: 3}); got != "MLP intermediates: activation, up output, product" {
		t.Errorf("gated MLP: %q", got)
	}
}

// TestBudgetEmptyComparison: a predicted-vs-measured table with no row
// says why it is empty where the table would be, not only in the notes.
func TestBudgetEmptyComparison(t *testing.T) {
	note := budget.Note{Kind: budget.NoteNoMatch, Phase: "run"}
	r := &Budget{Prediction: smallPrediction(t), Truth: "serve/truth.json", Notes: []budget.Note{note}}
	var text bytes.Buffer
	if err := Write(&text, Text, r); err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(text.String(), "predicted vs measured (allocated bytes; measured: serve/truth.json):\n")
	if want := "  nothing to compare: " + r.noteText(note) + "\n"; !ok || table != want {
		t.Errorf("the comparison reads %q, want %q", table, want)
	}
	if strings.Contains(table, "gap %") {
		t.Errorf("an empty comparison prints the table's header:\n%s", table)
	}
}
