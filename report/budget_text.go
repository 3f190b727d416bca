package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/units"
)

// writeText renders 'memscope budget': the model and run, the five terms
// with their parts, the per-layer activations against the rule of thumb,
// the per-phase peaks, the device fit, the fixes, and the comparison with
// measurements.
func (r *Budget) writeText(w io.Writer) error {
	ew := &errWriter{w: w}
	p := r.Prediction
	m, s := p.Model, p.Shape
	ew.printf("model: %s\n       %s\n", m.Name, budgetModelText(m))
	ew.printf("       %s parameters (%.2f B)\n", commas(p.Params.Total), float64(p.Params.Total)/1e9)
	ew.printf("run:   %s, micro-batch %d × %d = %s tokens, %s\n       %s (%s), checkpointing %s, loss %s",
		s.Mode, s.Batch, s.Seq, commas(s.Tokens()), s.Precision, s.Optimizer, s.OptimizerImpl, s.Checkpointing, s.Loss)
	if s.Accumulation > 1 {
		ew.printf(", %d micro-batches per step", s.Accumulation)
	}
	if s.ShardRanks > 1 {
		ew.printf(", optimizer state over %d ranks", s.ShardRanks)
	}
	ew.printf("\n")
	for _, n := range append(r.notes(), budgetWarnings(p)...) {
		ew.printf("note: %s\n", n)
	}

	ew.printf("\nthe five terms (each at its largest over the phase peaks):\n")
	for _, t := range p.Terms {
		extra := ""
		if t.Key == budget.ModelStates {
			// What the term holds at its largest, per parameter: with
			// the step's temporaries, after sharding.
			extra = fmt.Sprintf("   %.3g B/param", p.TermPerParam(budget.ModelStates))
		}
		ew.printf("  %-18s %11s%s\n", t.Key, units.Bytes(t.Bytes), extra)
		for _, pt := range t.Parts {
			per := ""
			if pt.PerParam > 0 {
				per = fmt.Sprintf(" (%d B/param)", pt.PerParam)
			}
			ew.printf("    %11s  %s%s; %s\n", units.Bytes(pt.Bytes), partName(pt.Kind, pt.Ops), per, budgetLiveText(pt.Live))
			if f := partFormula(pt.Kind, pt.Ops); f != "" {
				ew.printf("                 = %s\n", f)
			}
		}
		if t.Key == budget.Activations && s.Mode == budget.Train {
			budgetLayerText(ew, p)
		}
	}

	ew.printf("\npredicted peak allocated (max_memory_allocated) per phase:\n")
	ew.printf("  %-9s %11s", "phase", "peak")
	for k := range budget.NumTerms {
		ew.printf(" %11s", budgetShortTerm[k])
	}
	ew.printf("\n")
	for i, ph := range p.Phases {
		ew.printf("  %-9s %11s", ph.Phase, units.Bytes(ph.Bytes))
		for _, b := range ph.ByTerm() {
			ew.printf(" %11s", units.Bytes(b))
		}
		if i == p.Peak {
			ew.printf("  ← peak")
		}
		ew.printf("\n")
	}
	pk := p.Phases[p.Peak]
	dom := pk.Dominant()
	ew.printf("the step peaks in %s\n  when: %s\n  the largest term there: %s, %s (%.0f%%)\n",
		pk.Phase, budgetMomentText(pk.Moment), dom, units.Bytes(pk.ByTerm()[dom]), 100*float64(pk.ByTerm()[dom])/float64(pk.Bytes))
	ew.printf("outside the allocator: %s more on the device\n", units.Bytes(p.Outside))

	if f := r.Fit; f != nil {
		name := f.Device
		if name == "" {
			name = "device"
		}
		ew.printf("\n%s (%s): needs %s (peak %s + %s outside the allocator)\n  %s\n",
			name, units.Bytes(f.Memory), units.Bytes(f.Need), units.Bytes(p.PeakBytes()), units.Bytes(p.Outside), budgetFitText(f))
	}

	if len(r.Fixes) > 0 {
		ew.printf("\nfixes, cheapest first, then by bytes saved (predicted new peak):\n")
		for i, f := range r.Fixes {
			fits := ""
			if r.Fit != nil && f.NewPeak+p.Outside <= r.Fit.Memory {
				fits = ", fits"
			}
			fw := budgetFixText(f)
			ew.printf("  %d. %s  [%s]\n     saves %s → %s in %s%s; targets %s\n     cost: %s\n",
				i+1, fw.name, fw.change, units.Bytes(f.Saves), units.Bytes(f.NewPeak), f.NewPhase, fits, f.Term, fw.cost)
		}
		if c := r.Combination; c != nil {
			ew.printf("\n%s\n  [%s]\n", budgetCombinationText(p, c), budgetCombinationFlags(r.Fixes, c))
		}
	}
	if r.Advice != nil && ew.err == nil {
		ew.err = budgetBesideText(w, r)
	}
	if r.measured() {
		budgetMeasuredText(ew, r, r.sources(), r.Measured)
	}
	return ew.err
}

// budgetModelText is m in one line: "16 layers, hidden 2048, 32 heads
// (8 KV, dim 64), intermediate 8192 gated, vocab 128256, tied, sdpa
// attention". The head dimension is the prediction's (derived if not given).
func budgetModelText(m budget.Model) string {
	tied := "untied"
	if m.TiedEmbeddings {
		tied = "tied"
	}
	return fmt.Sprintf("%d layers, hidden %d, %d heads (%d KV, dim %d), intermediate %d %s, vocab %d, %s, %s attention",
		m.Layers, m.Hidden, m.Heads, m.KVHeads, m.HeadDim, m.Intermediate, m.MLP, m.Vocab, tied, m.Attention)
}

var budgetShortTerm = [budget.NumTerms]string{"states", "activations", "logits", "KV cache", "overhead"}

// layerText prints one layer's derived activations next to the rule.
func budgetLayerText(ew *errWriter, p *budget.Prediction) {
	l := p.Layer
	ew.printf("    one layer, no checkpointing: %s = %s tokens × %s B (%.1f × hidden)\n",
		units.Bytes(l.Full), commas(p.Shape.Tokens()), commas(l.PerToken), float64(l.PerToken)/float64(p.Model.Hidden))
	ew.printf("    the rule of thumb: %s = %s; derived is %.2f × the rule\n",
		ruleText(l.RuleOps), units.Bytes(l.Rule), float64(l.Full)/float64(l.Rule))
	for _, pt := range l.Parts {
		ew.printf("      %11s  %s\n", units.Bytes(pt.Bytes), partName(pt.Kind, pt.Ops))
	}
	if l.Saved != l.Full {
		ew.printf("    kept per layer with %s checkpointing: %s\n", p.Shape.Checkpointing, units.Bytes(l.Saved))
	}
}

// budgetCombinationText words a run of predicted fixes as advise words its
// measured ones: "no single fix fits H100 (80.00 GiB): together, 1 + 3 →
// new peak 61.20 GiB (−38.0%) in backward, needs 62.0 GiB, fits: …".
func budgetCombinationText(p *budget.Prediction, c *budget.Combination) string {
	nums := make([]string, len(c.Fixes))
	for i, f := range c.Fixes {
		nums[i] = fmt.Sprint(f + 1)
	}
	together := "together"
	if c.Fit.Verdict == budget.DoesNotFit {
		together = "not even all together"
	}
	return fmt.Sprintf("no single fix fits %s (%s): %s, %s → new peak %s (%s) in %s, needs %s, %s",
		fitName(&c.Fit), units.Bytes(c.Fit.Memory), together, strings.Join(nums, " + "), units.Bytes(c.NewPeak),
		signedPercent(c.NewPeak-p.PeakBytes(), p.PeakBytes()), c.NewPhase, units.Bytes(c.Fit.Need), budgetFitText(&c.Fit))
}

// budgetCombinationFlags is the memscope budget flags that model a run of
// fixes: "--loss fused --checkpointing selective".
func budgetCombinationFlags(fixes []budget.Fix, c *budget.Combination) string {
	flags := make([]string, len(c.Fixes))
	for i, f := range c.Fixes {
		flags[i] = budgetFixText(fixes[f]).change
	}
	return strings.Join(flags, " ")
}

// budgetMeasuredText prints predicted against measured, phase by phase.
func budgetMeasuredText(ew *errWriter, r *Budget, sources []string, phases []budget.Comparison) {
	ew.printf("\npredicted vs measured (allocated bytes; measured: %s):\n", strings.Join(sources, ", "))
	if len(phases) == 0 {
		var why string
		for _, n := range r.Notes {
			if n.Kind == budget.NoteNoMatch {
				why = r.noteText(n)
			}
		}
		ew.printf("  nothing to compare: %s\n", why)
		return
	}
	ew.printf("  %-9s %4s %11s %11s %12s %7s\n", "phase", "step", "predicted", "measured", "gap", "gap %")
	for _, c := range phases {
		verdict := "within 15%"
		if !c.Within {
			verdict = "OFF by more than 15%"
		}
		ew.printf("  %-9s %4d %11s %11s %12s %+6.1f%%  %s\n", c.Phase, c.Step, units.Bytes(c.Predicted),
			units.Bytes(c.Measured), signedBytes(c.Gap), c.GapPercent, verdict)
	}
	for _, c := range phases {
		ew.printf("\n%s peak (step %d):", c.Phase, c.Step)
		if c.RequestedGap != nil {
			ew.printf(" requested − predicted = %s, allocated − requested = %s (allocator rounding)",
				signedBytes(*c.RequestedGap), signedBytes(c.Gap-*c.RequestedGap))
		}
		ew.printf("\n")
		if len(c.Terms) > 0 {
			budgetRowsText(ew, "by term", c.Terms)
			ew.printf("  dominant term: predicted %s, measured %s", c.PredictedDominant, *c.MeasuredDominant)
			if c.Responsible != nil {
				ew.printf("; largest gap: %s", *c.Responsible)
			}
			ew.printf("\n")
		}
		if len(c.Categories) > 0 {
			budgetRowsText(ew, "by category", c.Categories)
		}
	}
}

func budgetRowsText(ew *errWriter, title string, rows []budget.Row) {
	ew.printf("  %-18s %11s %11s %12s\n", title, "predicted", "measured", "gap")
	for _, r := range rows {
		ew.printf("  %-18s %11s %11s %12s\n", r.Name, units.Bytes(r.Predicted), units.Bytes(r.Measured), signedBytes(r.Gap))
	}
}

func signedBytes(n int64) string {
	if n > 0 {
		return "+" + units.Bytes(n)
	}
	return units.Bytes(n)
}

// commas writes n with thousands separators.
func commas(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
