package budget

import (
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/internal/truth"
)

// readTruth reads a fixture's truth.json (written by capture/harness.py):
// the shape it ran and the peaks torch measured.
func readTruth(t *testing.T, fixture string) *truth.File {
	t.Helper()
	tr, err := truth.Read(filepath.Join("..", "fixtures", fixture, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// harnessRun is the model and shape of capture/harness.py's llama-bf16
// scenario: LlamaForCausalLM, untied, SDPA, fp32 weights under bf16
// autocast, foreach AdamW, F.cross_entropy(logits.float()).
func harnessRun(tr *truth.File) (Model, Shape) {
	a := tr.Args
	m := Model{Vocab: a.Vocab, Hidden: a.Hidden, Layers: a.Layers, Heads: a.Heads, KVHeads: a.KVHeads,
		Intermediate: a.Intermediate, MLP: GatedMLP, Attention: SDPA}
	s := DefaultShape()
	s.Batch, s.Seq = a.Batch, a.Seq
	if a.Checkpointing != nil && *a.Checkpointing != 0 {
		s.Checkpointing = FullCheckpointing
	}
	return m, s
}

// measuredPeaks is each phase's highest peak over the recorded steps.
func measuredPeaks(tr *truth.File) map[string]int64 {
	m := map[string]int64{}
	for _, p := range tr.Phases {
		m[p.Phase] = max(m[p.Phase], p.PeakAllocated)
	}
	return m
}

var llamaFixtures = []string{"llama-bf16", "llama-profiled", "llama-ckpt", "llama-wide"}

const tolerance = 0.15

func TestPredictAgainstTruth(t *testing.T) {
	for _, fx := range llamaFixtures {
		t.Run(fx, func(t *testing.T) {
			tr := readTruth(t, fx)
			m, s := harnessRun(tr)
			p, err := Predict(m, s)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Params.Total * 4; got != tr.ParamBytes {
				t.Errorf("Params().Total × 4 = %d, want param_bytes %d", got, tr.ParamBytes)
			}
			meas := measuredPeaks(tr)
			for _, ph := range p.Phases {
				want := meas[ph.Phase]
				gap := float64(want-ph.Bytes) / float64(want)
				t.Logf("%-9s predicted %12d measured %12d gap %+6.2f%%  dominant %s  (moment %+v)", ph.Phase, ph.Bytes, want, 100*gap, ph.Dominant(), ph.Moment)
				if gap > tolerance || gap < -tolerance {
					t.Errorf("%s: predicted %d, measured %d: off by %.1f%%, want within %.0f%%", ph.Phase, ph.Bytes, want, 100*gap, 100*tolerance)
				}
			}
		})
	}
}
