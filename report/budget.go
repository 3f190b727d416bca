package report

import (
	"fmt"
	"strings"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report/jsondoc"
)

// Budget is 'memscope budget': a prediction, held against a device and
// against measured phases when the command was given them.
type Budget struct {
	Prediction *budget.Prediction
	Fit        *budget.Fit // nil: no device to hold it against
	Fixes      []budget.Fix
	// Combination is, when no fix alone fits the device, the cheapest run
	// of them that does (budget.Combine); nil otherwise.
	Combination *budget.Combination
	// ConfigWarnings are LoadConfig's guesses about the config, shown
	// first; Notes the typed findings of the model's resolution and the
	// measurement, worded here.
	ConfigWarnings []budget.ConfigWarning
	Notes          []budget.Note
	// Snapshot and Truth are the measured sources ("" for none): the
	// snapshot the phases were measured in and the truth.json whose
	// peaks took precedence (and whose harness arguments, with
	// budget.NoteHarnessModel, gave the model). With either, Measured
	// holds each predicted phase against the measured one.
	Snapshot, Truth string
	Measured        []budget.Comparison
	// Advice is advise on the snapshot (nil without one): its fixes,
	// computed from the snapshot's blocks, are shown next to the predicted
	// ones, matched by kind (the catalog both share).
	Advice *attribution.Advice
}

func (*Budget) Kind() string { return "budget" }

// measured reports whether anything was measured.
func (r *Budget) measured() bool { return r.Snapshot != "" || r.Truth != "" }

// sources lists the measured sources, snapshot first.
func (r *Budget) sources() []string {
	out := []string{}
	for _, s := range []string{r.Snapshot, r.Truth} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// notes words the config warnings and the notes, in that order.
func (r *Budget) notes() []string {
	out := []string{}
	for _, w := range r.ConfigWarnings {
		out = append(out, configWarningText(w))
	}
	for _, n := range r.Notes {
		out = append(out, r.noteText(n))
	}
	return out
}

// noteText words one note.
func (r *Budget) noteText(n budget.Note) string {
	switch n.Kind {
	case budget.NoteHarnessModel:
		return "model from " + r.Truth + ": the capture harness's LlamaForCausalLM (untied, SDPA, gated MLP)"
	case budget.NoteNoPhases:
		return r.Snapshot + ": no training phases found; nothing to compare"
	case budget.NoteOnlyStepZero:
		return r.Snapshot + ": only step 0 was recorded; the optimizer creates its state there, so it is not a steady step"
	case budget.NoteReplayDiffers:
		return fmt.Sprintf("step %d %s: the snapshot's replay gives %s, torch %s; using torch's",
			n.Step, n.Phase, units.Bytes(n.Replayed), units.Bytes(n.Torch))
	case budget.NoteNoMatch:
		const head = "no measured phase matches a predicted one (forward, backward, optimizer): "
		if n.Phase != "" {
			return head + strings.Join(r.sources(), ", ") + " measured " + n.Phase
		}
		return head + strings.Join(r.sources(), ", ") + " holds no phase of a steady step (the setup outside steps and step 0, where the optimizer makes its state, are not compared)"
	case budget.NoteAllOff:
		return fmt.Sprintf("every phase is off by more than %.0f%%: check that the capture ran this model and shape", 100*budget.Tolerance)
	}
	return fmt.Sprintf("note of kind %d", int(n.Kind))
}

// configWarningText words a guess ParseConfig made about a config.json.
func configWarningText(w budget.ConfigWarning) string {
	switch w.Kind {
	case budget.ConfigTiedByDefault:
		return fmt.Sprintf("%s: tie_word_embeddings absent; %s ties them by default", w.File, w.ModelType)
	case budget.ConfigAssumedUntied:
		return w.File + ": tie_word_embeddings absent; assumed untied"
	case budget.ConfigGatedFromActivation:
		return fmt.Sprintf("%s: no model_type; hidden_act %s taken for a gated MLP", w.File, w.HiddenAct)
	case budget.ConfigExpertsDense:
		return fmt.Sprintf("%s: %d experts per layer are modelled as one dense MLP of intermediate_size: parameters and optimizer state are underestimated", w.File, w.Experts)
	}
	return fmt.Sprintf("%s: config warning of kind %d", w.File, int(w.Kind))
}

// budgetWarnings words the prediction's warnings (never nil).
func budgetWarnings(p *budget.Prediction) []string {
	out := []string{}
	for _, w := range p.Warnings {
		out = append(out, budgetWarningText(w))
	}
	return out
}

func budgetWarningText(w budget.Warning) string {
	switch w {
	case budget.WarnBF16Moments:
		return "pure bf16 keeps AdamW's moments in bf16: 8 bytes per parameter, but updates smaller than bf16's resolution are lost"
	case budget.WarnCheckpointingInfer:
		return "activation checkpointing has no effect in inference"
	}
	return fmt.Sprintf("warning of kind %d", int(w))
}

// budgetFitText is the fit's verdict in words: "fits: 12.3% of the device
// left", or "does not fit: needs 2.2× the device, 96.00 GiB short".
func budgetFitText(f *budget.Fit) string {
	if f.Headroom < 0 {
		return fmt.Sprintf("%s: needs %.3g× the device, %s short", fitVerdictText(f.Verdict), float64(f.Need)/float64(f.Memory), units.Bytes(-f.Headroom))
	}
	return fmt.Sprintf("%s: %.1f%% of the device left", fitVerdictText(f.Verdict), f.HeadroomPercent)
}

// fitVerdictText is the verdict's word, as text and JSON show it.
func fitVerdictText(v budget.FitVerdict) string {
	switch v {
	case budget.Fits:
		return "fits"
	case budget.Tight:
		return "tight"
	case budget.DoesNotFit:
		return "does not fit"
	}
	return fmt.Sprintf("verdict %d", int(v))
}

// BudgetFitJSON is jsondoc.BudgetFitJSON.
type BudgetFitJSON = jsondoc.BudgetFitJSON

// BudgetCombinationJSON is a run of predicted fixes applied together
// (budget.Combination), as advise's combination is of measured ones.
type BudgetCombinationJSON struct {
	Fixes    []int          `json:"fixes"` // positions in fixes, from 0
	Names    []string       `json:"names"`
	Shape    budget.Shape   `json:"shape"`
	NewPeak  int64          `json:"new_peak"`
	NewPhase string         `json:"new_phase"`
	Fit      *BudgetFitJSON `json:"fit"`
}

func budgetCombinationJSON(fixes []budget.Fix, c *budget.Combination) *BudgetCombinationJSON {
	if c == nil {
		return nil
	}
	j := &BudgetCombinationJSON{Fixes: c.Fixes, Names: []string{}, Shape: c.Shape, NewPeak: c.NewPeak, NewPhase: c.NewPhase, Fit: budgetFitJSON(&c.Fit)}
	for _, i := range c.Fixes {
		j.Names = append(j.Names, budgetFixText(fixes[i]).name)
	}
	return j
}

func budgetFitJSON(f *budget.Fit) *BudgetFitJSON {
	if f == nil {
		return nil
	}
	return &BudgetFitJSON{Device: f.Device, Memory: f.Memory, Need: f.Need, Headroom: f.Headroom,
		HeadroomPercent: f.HeadroomPercent, Verdict: fitVerdictText(f.Verdict)}
}

// BudgetJSON is the result of the budget document: the prediction, then
// the fit, the fixes, the comparison and the notes.
type BudgetJSON struct {
	Model    budget.Model      `json:"model"`
	Shape    budget.Shape      `json:"shape"`
	Params   budget.Params     `json:"params"`
	PerParam int64             `json:"bytes_per_param"` // weights, gradients, master, moments; before sharding
	Layer    BudgetLayerJSON   `json:"layer"`
	Terms    []BudgetTermJSON  `json:"terms"`
	Phases   []BudgetPhaseJSON `json:"phases"`
	Peak     int               `json:"peak_phase"` // index into phases
	Outside  int64             `json:"outside"`
	Warnings []string          `json:"warnings"`
	Fit      *BudgetFitJSON    `json:"fit,omitempty"`
	Fixes    []BudgetFixJSON   `json:"fixes"`
	// Combination is, when no fix alone fits the device, the cheapest
	// run of fixes that does, or all of them with their miss.
	Combination *BudgetCombinationJSON `json:"combination,omitempty"`
	Measured    *BudgetMeasuredJSON    `json:"measured,omitempty"`
	// SnapshotFixes are advise's fixes of the snapshot's training peak,
	// as 'memscope advise' writes them; absent without a snapshot, or
	// when advise finds none (no backward, or no fix lowers the peak).
	SnapshotFixes []AdviceFixJSON `json:"snapshot_fixes,omitempty"`
	Notes         []string        `json:"notes"`
}

// BudgetPartJSON is one line of a term (budget.Part), its lifetime in words.
type BudgetPartJSON struct {
	Name     string `json:"name"`
	Bytes    int64  `json:"bytes"`
	Formula  string `json:"formula"`
	PerParam int64  `json:"per_param,omitempty"`
	Live     string `json:"live"`
}

// BudgetTermJSON is one of the five terms.
type BudgetTermJSON struct {
	Key   budget.TermKey   `json:"term"`
	Bytes int64            `json:"bytes"`
	Parts []BudgetPartJSON `json:"parts"`
}

// BudgetLayerJSON is one decoder layer's saved activations.
type BudgetLayerJSON struct {
	Parts    []BudgetPartJSON `json:"parts"`
	Full     int64            `json:"full"`
	PerToken int64            `json:"per_token"`
	Saved    int64            `json:"saved"`
	Rule     int64            `json:"rule"`
	RuleText string           `json:"rule_text"`
}

// budgetPartsJSON converts parts (nil stays nil: null, as before).
func budgetPartsJSON(ps []budget.Part) []BudgetPartJSON {
	if ps == nil {
		return nil
	}
	out := make([]BudgetPartJSON, len(ps))
	for i, p := range ps {
		out[i] = BudgetPartJSON{Name: partName(p.Kind, p.Ops), Bytes: p.Bytes, Formula: partFormula(p.Kind, p.Ops),
			PerParam: p.PerParam, Live: budgetLiveText(p.Live)}
	}
	return out
}

// BudgetPhaseJSON is one phase's predicted peak (budget.PhasePeak): when
// it falls and what is live then, in words.
type BudgetPhaseJSON struct {
	Phase  string            `json:"phase"` // forward, backward, optimizer
	Bytes  int64             `json:"bytes"`
	Moment string            `json:"moment"` // when in the phase the peak falls
	Shares []BudgetShareJSON `json:"shares"`
}

// BudgetShareJSON is what one term holds at a phase's peak (budget.Share).
type BudgetShareJSON struct {
	Term     budget.TermKey `json:"term"`
	Name     string         `json:"name"`
	Bytes    int64          `json:"bytes"`
	Category string         `json:"category"`
}

// budgetPhasesJSON converts the phase peaks (nil shares stay null).
func budgetPhasesJSON(phs []budget.PhasePeak) []BudgetPhaseJSON {
	if phs == nil {
		return nil
	}
	out := make([]BudgetPhaseJSON, len(phs))
	for i, ph := range phs {
		out[i] = BudgetPhaseJSON{Phase: ph.Phase, Bytes: ph.Bytes, Moment: budgetMomentText(ph.Moment)}
		if ph.Shares != nil {
			out[i].Shares = make([]BudgetShareJSON, len(ph.Shares))
		}
		for j, sh := range ph.Shares {
			out[i].Shares[j] = BudgetShareJSON{Term: sh.Term, Name: partName(sh.Kind, sh.Ops), Bytes: sh.Bytes, Category: sh.Category}
		}
	}
	return out
}

// budgetLiveText words when a part's tensors exist.
func budgetLiveText(l budget.Lifetime) string {
	switch l {
	case budget.LiveWholeStep:
		return "whole step"
	case budget.LiveAccumulated:
		return "whole step (accumulated over micro-batches)"
	case budget.LiveForward:
		return "forward"
	case budget.LiveForwardToBackward:
		return "forward to backward"
	case budget.LiveCopiesRecomputed:
		return "forward (lm_head's to backward; a layer's again while it is recomputed)"
	case budget.LiveBackwardStart:
		return "backward start"
	case budget.LiveBackward:
		return "backward"
	case budget.LiveBackwardToOptimizer:
		return "backward to optimizer"
	case budget.LiveOptimizerStep:
		return "optimizer step"
	case budget.LiveOutside:
		return "outside the allocator"
	case 0:
		return ""
	}
	return fmt.Sprintf("lifetime %d", int(l))
}

// BudgetMeasuredJSON is the comparison with what was measured.
type BudgetMeasuredJSON struct {
	Sources []string            `json:"sources"`
	Phases  []budget.Comparison `json:"phases"`
}

func (r *Budget) document() any {
	p := r.Prediction
	l := p.Layer
	res := BudgetJSON{Model: p.Model, Shape: p.Shape, Params: p.Params, PerParam: p.PerParam,
		Layer: BudgetLayerJSON{Parts: budgetPartsJSON(l.Parts), Full: l.Full, PerToken: l.PerToken, Saved: l.Saved,
			Rule: l.Rule, RuleText: ruleText(l.RuleOps)},
		Phases: budgetPhasesJSON(p.Phases), Peak: p.Peak, Outside: p.Outside, Warnings: budgetWarnings(p),
		Fit: budgetFitJSON(r.Fit), Fixes: budgetFixesJSON(r.Fixes), Combination: budgetCombinationJSON(r.Fixes, r.Combination), Notes: r.notes()}
	for _, t := range p.Terms {
		res.Terms = append(res.Terms, BudgetTermJSON{Key: t.Key, Bytes: t.Bytes, Parts: budgetPartsJSON(t.Parts)})
	}
	if r.measured() {
		res.Measured = &BudgetMeasuredJSON{Sources: r.sources(), Phases: r.Measured}
	}
	if r.Advice != nil {
		res.SnapshotFixes = adviceFixesJSON(r.Advice.Fixes)
	}
	return ResultDoc[BudgetJSON]{Schema: Schema, Kind: "budget", Result: res}
}
