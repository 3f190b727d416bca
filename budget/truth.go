package budget

import (
	"encoding/json"
	"fmt"
	"os"
)

// Truth is the part of a capture's truth.json (schema memscope-truth/v1,
// written by capture/harness.py) the budget reads: the device, the model
// shape the harness ran, and the per-phase peaks torch measured. It is a
// stopgap until one truth type (internal/truth) serves every reader.
type Truth struct {
	DeviceName  string     `json:"device_name"`
	DeviceTotal int64      `json:"device_total"`
	Args        TruthArgs  `json:"args"`
	Phases      []TruthRow `json:"phases"`
}

// TruthArgs are the harness arguments of the capture (0 where not given).
type TruthArgs struct {
	Vocab         int64 `json:"vocab"`
	Hidden        int64 `json:"hidden"`
	Intermediate  int64 `json:"intermediate"`
	Layers        int64 `json:"layers"`
	Heads         int64 `json:"heads"`
	KVHeads       int64 `json:"kv_heads"`
	Seq           int64 `json:"seq"`
	Batch         int64 `json:"batch"`
	Checkpointing *int  `json:"checkpointing"` // nil or 0: none
}

// TruthRow is one phase of one step as torch's peak counters saw it.
type TruthRow struct {
	Step          int    `json:"step"` // -1: setup outside the steps
	Phase         string `json:"phase"`
	PeakAllocated int64  `json:"peak_allocated"` // max_memory_allocated over the phase
	PeakRequested int64  `json:"peak_requested"`
}

// Checkpointed reports whether the harness ran with activation
// checkpointing (full: each layer's input kept).
func (a TruthArgs) Checkpointed() bool { return a.Checkpointing != nil && *a.Checkpointing != 0 }

// ReadTruth reads the truth.json at path.
func ReadTruth(path string) (*Truth, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t Truth
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &t, nil
}

// Model is the harness's model: LlamaForCausalLM with untied embeddings,
// SDPA attention and a gated MLP; ok is false when the truth does not say
// the shape (Args.Vocab is 0). KVHeads is left as given (0: Heads).
func (t *Truth) Model(name string) (m Model, ok bool) {
	a := t.Args
	if a.Vocab <= 0 {
		return Model{}, false
	}
	return Model{Name: name, Vocab: a.Vocab, Hidden: a.Hidden, Layers: a.Layers, Heads: a.Heads,
		KVHeads: a.KVHeads, Intermediate: a.Intermediate, MLP: GatedMLP, Attention: SDPA}, true
}

// SteadyPhase reports whether a phase of step counts as measured: steady
// steps only, not step 0 (the optimizer creates its state lazily there),
// unless step 0 is all there is (lastStep is 0); never the setup outside
// steps (step -1).
func SteadyPhase(step, lastStep int) bool { return step >= 1 || lastStep == 0 && step == 0 }

// MergeTruth puts torch's peak counters into the phases measured from a
// snapshot (ms, possibly none): a phase the snapshot measured at the same
// step takes torch's peak and requested bytes, keeping what was live there;
// otherwise the highest steady peak of each phase name is kept, and phases
// the snapshot did not see are added after those it did. It returns the
// merged phases and a NoteReplayDiffers for each phase whose replayed peak
// is not torch's.
func MergeTruth(ms []Measured, t *Truth) ([]Measured, []Note) {
	out := append([]Measured(nil), ms...)
	var notes []Note
	last := -1
	for _, row := range t.Phases {
		last = max(last, row.Step)
	}
	for _, row := range t.Phases {
		if !SteadyPhase(row.Step, last) {
			continue
		}
		i := 0
		for i < len(out) && out[i].Phase != row.Phase {
			i++
		}
		if i == len(out) {
			out = append(out, Measured{Phase: row.Phase})
		}
		m := &out[i]
		if m.HasTerms && m.Step == row.Step && m.Peak != row.PeakAllocated {
			notes = append(notes, Note{Kind: NoteReplayDiffers, Step: row.Step, Phase: row.Phase,
				Replayed: m.Peak, Torch: row.PeakAllocated})
		}
		if m.HasTerms && m.Step == row.Step || !m.HasTerms && row.PeakAllocated > m.Peak {
			m.Step, m.Peak, m.Requested = row.Step, row.PeakAllocated, row.PeakRequested
		}
	}
	return out, notes
}
