package budget

import "testing"

// A fix is labelled by the term it shrinks most at the peak. bf16-mixed
// replaces fp32 weights with bf16 ones beside an fp32 master copy: 2 bytes
// per parameter more in model states, unless the master copy is sharded,
// and no autocast weight copies or fp32 activations. Unsharded it saves
// saved activations (7.9 GB at the 1B's backward peak, model states +2.5
// GB); sharded over 4 ranks it saves model states most (3.7 GB, against
// 2.8 GB of activations).
func TestFixTermSavedMost(t *testing.T) {
	m, _, err := LoadConfig("testdata/llama-3.2-1b.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		shape func(*Shape)
		mixed TermKey
	}{
		{"b4 s4096", func(s *Shape) { s.Batch, s.Seq = 4, 4096 }, Activations},
		{"b2 s2048 full chunked acc2 shard4", func(s *Shape) {
			s.Batch, s.Seq, s.Checkpointing, s.Loss, s.Accumulation, s.ShardRanks = 2, 2048, FullCheckpointing, ChunkedLoss, 2, 4
		}, ModelStates},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := DefaultShape()
			c.shape(&s)
			p, err := Predict(m, s)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range Suggest(p, 0) {
				np, err := Predict(m, f.Shape)
				if err != nil {
					t.Fatal(err)
				}
				before, after := p.Phases[p.Peak].ByTerm(), np.Phases[np.Peak].ByTerm()
				for k := range NumTerms {
					if before[k]-after[k] > before[f.Term]-after[f.Term] {
						t.Errorf("fix %d: term %s saves %d, more than its label %s (%d)", f.Kind, k, before[k]-after[k], f.Term, before[f.Term]-after[f.Term])
					}
				}
				if f.Kind == FixBF16Mixed {
					found = true
					t.Logf("bf16-mixed saves by term: states %d, activations %d", before[ModelStates]-after[ModelStates], before[Activations]-after[Activations])
					if f.Term != c.mixed {
						t.Errorf("bf16-mixed targets %s, want %s", f.Term, c.mixed)
					}
				}
			}
			if !found {
				t.Errorf("no bf16-mixed fix suggested")
			}
		})
	}
}

// The prediction's model carries the head dimension it used: derived from
// hidden / heads when not given, as given otherwise.
func TestPredictionHeadDim(t *testing.T) {
	m := Model{Vocab: 1000, Hidden: 64, Layers: 2, Heads: 4, KVHeads: 4, Intermediate: 128, MLP: GatedMLP, Attention: SDPA}
	for _, c := range []struct{ given, want int64 }{{0, 16}, {32, 32}} {
		m.HeadDim = c.given
		s := DefaultShape()
		s.Seq = 64
		p, err := Predict(m, s)
		if err != nil {
			t.Fatal(err)
		}
		if p.Model.HeadDim != c.want {
			t.Errorf("Predict(head_dim %d).Model.HeadDim = %d, want %d", c.given, p.Model.HeadDim, c.want)
		}
	}
}
