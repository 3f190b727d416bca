package budget

import "github.com/memscope/memscope/internal/truth"

// Truth is a capture's truth.json (schema memscope-truth/v1, written by
// capture/harness.py): the budget reads the device, the model shape the
// harness ran, and the per-phase peaks torch measured. It is the one truth
// type every reader of truth.json uses (internal/truth).
type Truth = truth.File

// TruthRow is one phase of one step as torch's peak counters saw it.
type TruthRow = truth.Phase

// ReadTruth reads the truth.json at path; errors name the file.
func ReadTruth(path string) (*Truth, error) { return truth.Read(path) }

// TruthModel is the harness's model of a truth: LlamaForCausalLM with
// untied embeddings, SDPA attention and a gated MLP; ok is false when the
// truth does not say the shape (Args.Vocab is 0). KVHeads is left as given
// (0: Heads).
func TruthModel(t *Truth, name string) (m Model, ok bool) {
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
