package budget

import "sort"

// Tolerance is the largest relative gap between a predicted and a measured
// phase peak that counts as agreement: 15% of the measured peak.
const Tolerance = 0.15

// Measured is one phase as a capture measured it: its peak of allocated
// bytes and, when a snapshot was read, what was live then.
type Measured struct {
	Phase string `json:"phase"`
	Step  int    `json:"step"`
	// Peak is the phase's highest allocated bytes (max_memory_allocated);
	// Requested the bytes tensors asked for at that moment, 0 if unknown.
	Peak      int64 `json:"peak"`
	Requested int64 `json:"requested,omitempty"`
	// ByCategory holds allocated bytes at the peak by attribution category;
	// nil when only the peak is known. ByTerm is the same live blocks
	// charged to the budget's terms with Classify; valid when HasTerms.
	ByCategory map[string]int64 `json:"by_category,omitempty"`
	ByTerm     [NumTerms]int64  `json:"-"`
	HasTerms   bool             `json:"-"`
}

// Row is one line of a comparison: a term or a category.
type Row struct {
	Name      string `json:"name"`
	Predicted int64  `json:"predicted"`
	Measured  int64  `json:"measured"`
	Gap       int64  `json:"gap"` // measured − predicted
}

// Comparison holds one phase's prediction against its measurement.
type Comparison struct {
	Phase     string `json:"phase"`
	Step      int    `json:"step"`
	Predicted int64  `json:"predicted"`
	Measured  int64  `json:"measured"`
	Gap       int64  `json:"gap"` // measured − predicted
	// GapPercent is Gap as a percentage of Measured; Within says whether
	// it is inside Tolerance.
	GapPercent float64 `json:"gap_percent"`
	Within     bool    `json:"within_tolerance"`
	// RequestedGap is measured requested − predicted, when requested is
	// known: the prediction counts tensor bytes, so what is left of Gap
	// is the allocator's rounding.
	RequestedGap *int64 `json:"requested_gap,omitempty"`
	// Terms and Categories compare what was live at the peak; empty when
	// only the peak was measured.
	Terms      []Row `json:"terms"`
	Categories []Row `json:"categories"`
	// Dominant terms, predicted and measured (the latter only with
	// Terms), and the term with the largest gap: the likely culprit.
	PredictedDominant TermKey  `json:"predicted_dominant"`
	MeasuredDominant  *TermKey `json:"measured_dominant,omitempty"`
	Responsible       *TermKey `json:"responsible,omitempty"`
}

// Compare holds each predicted phase against the measured phase of the same
// name; phases measured but not predicted (data) and predicted but not
// measured are left out.
func Compare(p *Prediction, ms []Measured) []Comparison {
	var out []Comparison
	for _, ph := range p.Phases {
		var m *Measured
		for i := range ms {
			if ms[i].Phase == ph.Phase {
				m = &ms[i]
				break
			}
		}
		if m == nil {
			continue
		}
		c := Comparison{Phase: ph.Phase, Step: m.Step, Predicted: ph.Bytes, Measured: m.Peak,
			Gap: m.Peak - ph.Bytes, PredictedDominant: ph.Dominant(), Terms: []Row{}, Categories: []Row{}}
		if m.Peak != 0 {
			c.GapPercent = 100 * float64(c.Gap) / float64(m.Peak)
		}
		c.Within = c.GapPercent <= 100*Tolerance && c.GapPercent >= -100*Tolerance
		if m.Requested > 0 {
			g := m.Requested - ph.Bytes
			c.RequestedGap = &g
		}
		if m.HasTerms {
			pt := ph.ByTerm()
			var worst TermKey
			for k := range NumTerms {
				r := Row{Name: k.String(), Predicted: pt[k], Measured: m.ByTerm[k], Gap: m.ByTerm[k] - pt[k]}
				c.Terms = append(c.Terms, r)
				if abs(r.Gap) > abs(c.Terms[worst].Gap) {
					worst = k
				}
			}
			dom := largest(m.ByTerm)
			c.MeasuredDominant, c.Responsible = &dom, &worst
		}
		if m.ByCategory != nil {
			c.Categories = categoryRows(ph.ByCategory(), m.ByCategory)
		}
		out = append(out, c)
	}
	return out
}

// categoryRows compares bytes by category, in attribution's order.
func categoryRows(pred, meas map[string]int64) []Row {
	order := map[string]int{"parameter": 0, "optimizer state": 1, "gradient": 2, "activation": 3,
		"input": 4, "temporary": 5, "unknown": 6}
	names := map[string]bool{}
	for k := range pred {
		names[k] = true
	}
	for k := range meas {
		names[k] = true
	}
	var rows []Row
	for k := range names {
		rows = append(rows, Row{Name: k, Predicted: pred[k], Measured: meas[k], Gap: meas[k] - pred[k]})
	}
	sort.Slice(rows, func(i, j int) bool {
		oi, iok := order[rows[i].Name]
		oj, jok := order[rows[j].Name]
		if iok != jok {
			return iok
		}
		if oi != oj {
			return oi < oj
		}
		return rows[i].Name < rows[j].Name
	})
	return rows
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// Classify charges a block live at a measured phase peak to a term, from
// the category memscope's attribution gave it and the bytes it requested:
// parameters, optimizer state and gradients are model states, as are
// temporaries of the optimizer phase (the step's temporaries); unknown
// blocks (cuBLAS workspaces) are overhead; activations and temporaries of
// exactly a logits tensor's size (tokens × vocab × 2 or 4 bytes, tokens the
// micro-batch, a loss chunk or one position per sequence) are logits and
// loss; every other block is saved activations.
func (p *Prediction) Classify(phase, category string, requested int64) TermKey {
	switch category {
	case "parameter", "optimizer state", "gradient":
		return ModelStates
	case "unknown":
		return Overhead
	case "kv cache":
		return KVCache
	case "temporary":
		if phase == "optimizer" {
			return ModelStates
		}
	}
	if p.vocabSized(requested) {
		return LogitsLoss
	}
	return Activations
}

// vocabSized reports whether b bytes is the size of a logits tensor of the
// run: tokens × vocab × 2 or 4 bytes.
func (p *Prediction) vocabSized(b int64) bool {
	c := p.calc
	if b <= 0 || b%c.V != 0 {
		return false
	}
	for _, tokens := range []int64{c.T, c.chunkTokens(), c.B} {
		if b == tokens*c.V*2 || b == tokens*c.V*4 {
			return true
		}
	}
	return false
}
