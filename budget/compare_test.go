package budget

import "testing"

func TestClassify(t *testing.T) {
	p := llama1B(t)
	const logits = 16384 * 128256 // elements of the micro-batch's logits
	for _, c := range []struct {
		phase, category string
		requested       int64
		want            TermKey
	}{
		{"forward", "parameter", 1 << 20, ModelStates},
		{"backward", "gradient", 1 << 20, ModelStates},
		{"optimizer", "temporary", 1 << 20, ModelStates},
		{"forward", "unknown", 32 << 20, Overhead},
		{"forward", "temporary", logits * 2, LogitsLoss},
		{"forward", "activation", logits * 4, LogitsLoss},
		{"backward", "temporary", logits * 4, LogitsLoss},
		{"forward", "activation", logits*4 + 512, Activations},
		{"forward", "activation", 16384 * 2048 * 4, Activations},
		{"forward", "input", 16384 * 8, Activations},
	} {
		if got := p.Classify(c.phase, c.category, c.requested); got != c.want {
			t.Errorf("Classify(%s, %s, %d) = %s, want %s", c.phase, c.category, c.requested, got, c.want)
		}
	}
}

func TestCompare(t *testing.T) {
	p := llama1B(t)
	fwd := p.Phases[0]
	terms := fwd.ByTerm()
	terms[Activations] += 1 << 30 // a missing GiB of activations
	ms := []Measured{
		{Phase: "data", Peak: 1},
		{Phase: "forward", Step: 2, Peak: fwd.Bytes + 1<<30 + 4096, Requested: fwd.Bytes + 1<<30,
			ByCategory: map[string]int64{"parameter": 4_943_257_600, "mystery": 7}, ByTerm: terms, HasTerms: true},
		{Phase: "optimizer", Step: 2, Peak: 2 * p.Phases[2].Bytes},
	}
	cs := Compare(p, ms)
	if len(cs) != 2 || cs[0].Phase != "forward" || cs[1].Phase != "optimizer" {
		t.Fatalf("Compare gave phases %v, want forward and optimizer", cs)
	}
	f := cs[0]
	if f.Gap != 1<<30+4096 || !f.Within || *f.RequestedGap != 1<<30 {
		t.Errorf("forward: gap %d within %v requested gap %d; want %d, true, %d", f.Gap, f.Within, *f.RequestedGap, 1<<30+4096, 1<<30)
	}
	if f.Responsible == nil || *f.Responsible != Activations {
		t.Errorf("forward: responsible = %v, want saved activations", f.Responsible)
	}
	if len(f.Categories) == 0 || f.Categories[0].Name != "parameter" || f.Categories[len(f.Categories)-1].Name != "mystery" {
		t.Errorf("forward categories = %+v, want parameter first, an unknown name last", f.Categories)
	}
	o := cs[1]
	if o.Within || o.GapPercent != 50 || o.Responsible != nil || len(o.Terms) != 0 {
		t.Errorf("optimizer: %+v; want 50%% off, outside tolerance, no terms", o)
	}
}

func TestSuggest(t *testing.T) {
	p := llama1B(t)
	fixes := Suggest(p, 0)
	if len(fixes) < 4 {
		t.Fatalf("Suggest gave %d fixes, want at least 4", len(fixes))
	}
	// The loss is free to fix and the logits hold 25 GB: a fused linear
	// cross-entropy comes first; the micro-batch comes last.
	if fixes[0].Kind != FixFusedLoss || fixes[len(fixes)-1].CostRank != 4 {
		t.Errorf("Suggest: first kind %d, last cost rank %d; want the fused loss first, the micro-batch last", fixes[0].Kind, fixes[len(fixes)-1].CostRank)
	}
	for i, f := range fixes {
		q, err := Predict(p.Model, f.Shape)
		if err != nil {
			t.Fatal(err)
		}
		if f.NewPeak != q.PeakBytes() || f.Saves != p.PeakBytes()-f.NewPeak || f.Saves*100 < p.PeakBytes() {
			t.Errorf("fix %d: new peak %d saves %d; Predict gives %d", f.Kind, f.NewPeak, f.Saves, q.PeakBytes())
		}
		if i > 0 && fixes[i-1].CostRank == f.CostRank && fixes[i-1].Saves < f.Saves {
			t.Errorf("fixes %d and %d of one cost are not ranked by bytes saved", fixes[i-1].Kind, f.Kind)
		}
	}
	// Full checkpointing leaves each layer's input: the backward peak drops
	// by the 16 layers' activations minus their inputs and the copies.
	for _, f := range fixes {
		if f.Kind == FixFullCkpt && f.Saves < 30e9 {
			t.Errorf("full checkpointing saves %d, want over 30 GB", f.Saves)
		}
	}
}
