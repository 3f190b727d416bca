package budget

import (
	"encoding/json"
	"os"
	"testing"
)

// variantsFile is testdata/variants.json, written by testdata/variants.py
// on an H200 (torch 2.11.0+cu130, transformers 5.17.0): per-phase peaks of
// Llama variants the fixtures do not cover, each a change from the
// llama-wide fixture's shape.
type variantsFile struct {
	Torch, Device string
	Variants      []struct {
		Args struct {
			Name                                     string
			Hidden, Layers, Heads, Vocab, Batch, Seq int64
			Inter                                    int64
			KV                                       int64
			Precision, Impl, Loss, Mode, Opt, Attn   string
			Tied                                     bool
			ParamBytes                               int64 `json:"param_bytes"`
		}
		Phases map[string]struct {
			PeakAllocated int64 `json:"peak_allocated"`
			PeakRequested int64 `json:"peak_requested"`
		}
	}
}

// Every phase of every variant lands within 15% of torch's
// max_memory_allocated, and within 64 KiB of the bytes tensors requested
// at that peak: the prediction counts tensors, the rest is the allocator's
// rounding. (The chunked loss's 32 KiB are the int64 label chunks that
// reshape copies and nll_loss saves, which the budget does not count.)
func TestPredictVariants(t *testing.T) {
	b, err := os.ReadFile("testdata/variants.json")
	if err != nil {
		t.Fatal(err)
	}
	var f variantsFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Variants) != 12 {
		t.Fatalf("%d variants in testdata/variants.json, want 12", len(f.Variants))
	}
	for _, v := range f.Variants {
		a := v.Args
		t.Run(a.Name, func(t *testing.T) {
			m := Model{Vocab: a.Vocab, Hidden: a.Hidden, Layers: a.Layers, Heads: a.Heads, KVHeads: a.KV,
				Intermediate: a.Inter, TiedEmbeddings: a.Tied, MLP: GatedMLP, Attention: AttentionKind(a.Attn)}
			s := DefaultShape()
			s.Batch, s.Seq, s.Mode = a.Batch, a.Seq, Mode(a.Mode)
			s.Precision, s.Optimizer, s.OptimizerImpl, s.Loss = Precision(a.Precision), Optimizer(a.Opt), OptimizerImpl(a.Impl), Loss(a.Loss)
			// The variants share one process: training made both cuBLAS
			// workspaces before the inference variants ran.
			s.Workspace = 2 * CublasWorkspace
			p, err := Predict(m, s)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Params.Total * dtypesOf(s.Precision).weight; got != a.ParamBytes {
				t.Errorf("parameter bytes %d, want %d", got, a.ParamBytes)
			}
			if len(p.Phases) != len(v.Phases) {
				t.Errorf("%d phases predicted, %d measured", len(p.Phases), len(v.Phases))
			}
			for _, ph := range p.Phases {
				meas, ok := v.Phases[ph.Phase]
				if !ok {
					t.Errorf("phase %s not measured", ph.Phase)
					continue
				}
				gap := float64(meas.PeakAllocated-ph.Bytes) / float64(meas.PeakAllocated)
				if gap > tolerance || gap < -tolerance {
					t.Errorf("%s: predicted %d, max_memory_allocated %d: off by %.1f%%", ph.Phase, ph.Bytes, meas.PeakAllocated, 100*gap)
				}
				if d := meas.PeakRequested - ph.Bytes; d < -64<<10 || d > 64<<10 {
					t.Errorf("%s: predicted %d, requested %d at the peak: off by %d bytes, want within 64 KiB", ph.Phase, ph.Bytes, meas.PeakRequested, d)
				}
			}
		})
	}
}
