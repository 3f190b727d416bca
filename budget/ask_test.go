package budget

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// flagsAsk is an Ask whose given flags are those named, with the defaults
// 'memscope budget' gives the rest.
func flagsAsk(set ...string) Ask {
	return Ask{
		MLP: string(GatedMLP), Attention: string(SDPA),
		Shape:     Shape{Batch: 1, LossChunks: 8, Accumulation: 1, ShardRanks: 1, Workspace: -1, Outside: -1},
		Precision: string(BF16Autocast), Optimizer: string(AdamW), OptimizerImpl: string(Foreach),
		Checkpointing: string(NoCheckpointing), Loss: string(PlainLoss), Mode: string(Train),
		Set: func(flag string) bool { return slices.Contains(set, flag) },
	}
}

// TestAskFlagsMatchConfig: the model flags alone describe the config's
// model (Llama 3.2 1B), and over a config only the flags given apply.
func TestAskFlagsMatchConfig(t *testing.T) {
	cfg, _, err := LoadConfig(filepath.Join("testdata", "llama-3.2-1b.json"))
	if err != nil {
		t.Fatal(err)
	}
	a := flagsAsk("vocab", "hidden", "layers", "heads", "kv-heads", "intermediate", "tied", "seq")
	a.Model = Model{Vocab: 128256, Hidden: 2048, Layers: 16, Heads: 32, KVHeads: 8, Intermediate: 8192, TiedEmbeddings: true}
	a.Shape.Seq = 4096
	a.GPU, _ = LookupGPU("H100")
	m, s, notes, err := a.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if m.Params() != cfg.Params() || m.MLP != cfg.MLP || m.Attention != cfg.Attention {
		t.Errorf("Resolve() from flags = %+v, want the config's %+v", m, cfg)
	}
	if s.Seq != 4096 || s.Workspace != a.GPU.WorkspaceIn(Train) || len(notes) != 0 {
		t.Errorf("Resolve() shape %+v notes %v, want seq 4096, the H100's workspace, no notes", s, notes)
	}

	over := flagsAsk("layers", "seq")
	over.Config, over.HasConfig = cfg, true
	over.Model = Model{Layers: 4, Hidden: 1} // --hidden not given: the config's stays
	over.Shape.Seq = 16
	m, _, _, err = over.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if m.Layers != 4 || m.Hidden != cfg.Hidden {
		t.Errorf("Resolve() over the config = layers %d hidden %d, want 4 and the config's %d", m.Layers, m.Hidden, cfg.Hidden)
	}
}

// TestAskFromTruth: a truth with harness arguments gives the model, with
// NoteHarnessModel, and the batch and sequence their flags leave unset;
// PlanFor holds it against the truth's device.
func TestAskFromTruth(t *testing.T) {
	tr, err := ReadTruth(filepath.Join("..", "fixtures", "llama-bf16", "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	a := flagsAsk("batch")
	a.Truth, a.TruthName = tr, "truth.json"
	a.Shape.Batch = 3
	m, s, notes, err := a.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := TruthModel(tr, "truth.json")
	if m.Vocab != want.Vocab || m.Layers != want.Layers || m.KVHeads != tr.Args.KVHeads {
		t.Errorf("Resolve() model %+v, want the harness's %+v", m, want)
	}
	if s.Batch != 3 || s.Seq != tr.Args.Seq {
		t.Errorf("Resolve() batch %d seq %d, want --batch's 3 and the truth's seq %d", s.Batch, s.Seq, tr.Args.Seq)
	}
	if len(notes) != 1 || notes[0].Kind != NoteHarnessModel {
		t.Errorf("Resolve() notes %v, want NoteHarnessModel", notes)
	}
	p, err := Predict(m, s)
	if err != nil {
		t.Fatal(err)
	}
	pl := PlanFor(p, DefaultRanks, GPU{}, tr)
	if pl.Fit == nil || pl.Fit.Memory != tr.DeviceTotal || len(pl.Fixes) == 0 {
		t.Errorf("PlanFor() = %+v, want a fit on the truth's %d bytes and fixes", pl, tr.DeviceTotal)
	}
	if pl := PlanFor(p, DefaultRanks, GPU{Memory: 1 << 30}, nil); pl.Fit == nil || pl.Fit.Memory != 1<<30 {
		t.Errorf("PlanFor(1 GiB) fit %+v, want on 1 GiB", pl.Fit)
	}
}

func TestAskErrors(t *testing.T) {
	noSeq := flagsAsk("vocab", "hidden", "layers", "heads", "intermediate")
	noSeq.Model = Model{Vocab: 100, Hidden: 64, Layers: 2, Heads: 4, Intermediate: 128}
	badPrecision := noSeq
	badPrecision.Set = func(string) bool { return true }
	badPrecision.Shape.Seq, badPrecision.Precision = 8, "fp8"
	for _, c := range []struct {
		name string
		a    Ask
		want string
	}{
		{"no model", flagsAsk("seq"), "no model: give --config"},
		{"no seq", noSeq, "--seq is required"},
		{"bad precision", badPrecision, `precision "fp8"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, _, err := c.a.Resolve(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Resolve() = %v, want an error containing %q", err, c.want)
			}
		})
	}
}
