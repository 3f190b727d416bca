package budget

import (
	"slices"
	"strings"
)

// NoteKind says what a Note is about; package report words each kind.
type NoteKind int

const (
	// NoteHarnessModel: the model was taken from the truth.json's harness
	// arguments (the harness's LlamaForCausalLM: untied, SDPA, gated MLP).
	NoteHarnessModel NoteKind = iota + 1
	// NoteNoPhases: the snapshot has no training phases to compare.
	NoteNoPhases
	// NoteOnlyStepZero: the snapshot recorded step 0 alone, which is not a
	// steady step (the optimizer creates its state there).
	NoteOnlyStepZero
	// NoteReplayDiffers: at Step's Phase the snapshot's replay peaks at
	// Replayed bytes and torch at Torch; torch's number is used.
	NoteReplayDiffers
	// NoteNoMatch: no measured phase has a predicted one's name; Phase
	// lists the measured phases' names ("" when nothing was measured).
	NoteNoMatch
	// NoteAllOff: every compared phase is off by more than Tolerance.
	NoteAllOff
)

// Note is a non-fatal finding about a budget and its measurement, shown
// next to it. The fields beyond Kind are set by the kinds that use them.
type Note struct {
	Kind     NoteKind
	Step     int
	Phase    string
	Replayed int64
	Torch    int64
}

// CompareNotes says what is wrong with the comparison cs of the measured
// phases ms as a whole: nothing compared (NoteNoMatch, naming what was
// measured), or no phase within Tolerance (NoteAllOff).
func CompareNotes(cs []Comparison, ms []Measured) []Note {
	if len(cs) == 0 {
		var names []string
		for _, m := range ms {
			if !slices.Contains(names, m.Phase) {
				names = append(names, m.Phase)
			}
		}
		return []Note{{Kind: NoteNoMatch, Phase: strings.Join(names, ", ")}}
	}
	for _, c := range cs {
		if c.Within {
			return nil
		}
	}
	return []Note{{Kind: NoteAllOff}}
}
