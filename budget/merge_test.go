package budget

import (
	"path/filepath"
	"reflect"
	"testing"
)

// MergeTruth alone (no snapshot) keeps, for each phase, torch's highest
// steady peak; step 0 and the setup (-1) are left out.
func TestMergeTruthAlone(t *testing.T) {
	tr, err := ReadTruth(filepath.Join("..", "fixtures", "llama-bf16", "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	ms, notes := MergeTruth(nil, tr)
	if len(notes) != 0 {
		t.Errorf("MergeTruth notes = %+v, want none", notes)
	}
	want := map[string]TruthRow{}
	for _, row := range tr.Phases {
		if row.Step >= 1 && row.PeakAllocated > want[row.Phase].PeakAllocated {
			want[row.Phase] = row
		}
	}
	if len(ms) != len(want) {
		t.Fatalf("MergeTruth phases = %+v, want %d", ms, len(want))
	}
	for _, m := range ms {
		w := want[m.Phase]
		if m.Step != w.Step || m.Peak != w.PeakAllocated || m.Requested != w.PeakRequested || m.HasTerms {
			t.Errorf("%s = %+v, want step %d peak %d requested %d, no terms", m.Phase, m, w.Step, w.PeakAllocated, w.PeakRequested)
		}
	}
}

// Over a snapshot's phases, torch's numbers replace the replayed peak of
// the same step, with a note when they differ; the live bytes stay; a
// phase the snapshot lacks is added after the others.
func TestMergeTruthOverSnapshot(t *testing.T) {
	tr := &Truth{Phases: []TruthRow{
		{Step: 0, Phase: "forward", PeakAllocated: 999},
		{Step: 1, Phase: "forward", PeakAllocated: 110, PeakRequested: 105},
		{Step: 1, Phase: "optimizer", PeakAllocated: 70, PeakRequested: 60},
		{Step: 2, Phase: "backward", PeakAllocated: 200, PeakRequested: 190},
	}}
	snap := []Measured{
		{Phase: "forward", Step: 1, Peak: 100, Requested: 90, HasTerms: true, ByCategory: map[string]int64{"activation": 100}},
		{Phase: "backward", Step: 2, Peak: 200, Requested: 195, HasTerms: true},
	}
	ms, notes := MergeTruth(snap, tr)
	want := []Measured{
		{Phase: "forward", Step: 1, Peak: 110, Requested: 105, HasTerms: true, ByCategory: map[string]int64{"activation": 100}},
		{Phase: "backward", Step: 2, Peak: 200, Requested: 190, HasTerms: true},
		{Phase: "optimizer", Step: 1, Peak: 70, Requested: 60},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Errorf("MergeTruth = %+v, want %+v", ms, want)
	}
	wantNotes := []Note{{Kind: NoteReplayDiffers, Step: 1, Phase: "forward", Replayed: 100, Torch: 110}}
	if !reflect.DeepEqual(notes, wantNotes) {
		t.Errorf("MergeTruth notes = %+v, want %+v", notes, wantNotes)
	}
	if snap[0].Peak != 100 {
		t.Errorf("MergeTruth changed its argument: %+v", snap[0])
	}
}

func TestCompareNotes(t *testing.T) {
	for _, c := range []struct {
		name string
		cs   []Comparison
		ms   []Measured
		want []Note
	}{
		{"none", nil, nil, []Note{{Kind: NoteNoMatch}}},
		{"none matches", nil, []Measured{{Phase: "run", Step: -1}, {Phase: "generate", Step: 0}, {Phase: "generate", Step: 1}},
			[]Note{{Kind: NoteNoMatch, Phase: "run, generate"}}},
		{"all off", []Comparison{{Within: false}, {Within: false}}, nil, []Note{{Kind: NoteAllOff}}},
		{"one within", []Comparison{{Within: false}, {Within: true}}, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := CompareNotes(c.cs, c.ms); !reflect.DeepEqual(got, c.want) {
				t.Errorf("CompareNotes(%+v) = %+v, want %+v", c.cs, got, c.want)
			}
		})
	}
}
