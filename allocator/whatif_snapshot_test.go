package allocator

import (
	"errors"
	"testing"

	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/snapshot"
)

// TestWhatIfSnapshot: the whole-snapshot driver on the expandable fixture
// gives, under the recorded settings, the recorded run torch measured (its
// reserved peak, memory_stats()'s reserved_bytes.all.peak), then each
// other setting's column; a refused device carries the reason alone, and
// the refusal is typed and still ErrNotReplayable; a bad setting is a
// *SettingError naming its place.
func TestWhatIfSnapshot(t *testing.T) {
	s, err := snapshot.Open("../fixtures/expandable/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := truth.Read("../fixtures/expandable/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	def, err := ParseConf("expandable_segments:False")
	if err != nil {
		t.Fatal(err)
	}
	devs, err := WhatIfSnapshot(s, SnapshotWhatIfOptions{Device: -1, Settings: []Settings{def}, Confs: []string{"expandable_segments:False"}})
	if err != nil || len(devs) != 1 {
		t.Fatalf("WhatIfSnapshot(expandable) = %d devices, %v; want 1, nil", len(devs), err)
	}
	d := devs[0]
	want := tr.MemoryStatsEnd["reserved_bytes.all.peak"]
	if d.Refused != "" || len(d.Runs) != 2 || d.Model == nil || d.Runs[0].PeakReserved != want || d.RecordedPeak != want {
		t.Errorf("device %d: refused %q, %d runs, model %v, recorded run's peak %d, recorded peak %d; want 2 runs, the recorded run's peak %d (torch)",
			d.Device, d.Refused, len(d.Runs), d.Model != nil, d.Runs[0].PeakReserved, d.RecordedPeak, want)
	}
	if len(d.Confs) != 1 || d.Runs[1].Settings.Expandable {
		t.Errorf("second column: confs %q, expandable %v; want expandable_segments:False", d.Confs, d.Runs[1].Settings.Expandable)
	}

	c := *s
	c.Settings = map[string]any{"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}
	devs, err = WhatIfSnapshot(&c, SnapshotWhatIfOptions{Device: -1})
	if err != nil || len(devs) != 1 || devs[0].Refused != "backend cudaMallocAsync has no caching allocator" || devs[0].Runs != nil {
		t.Errorf("WhatIfSnapshot(cudaMallocAsync) = %+v, %v; want the refusal's reason alone", devs, err)
	}
	_, err = WhatIf(&c, 0, def, WhatIfOptions{})
	if re, ok := errors.AsType[*RefusedError](err); !ok || re.Device != 0 || !errors.Is(err, ErrNotReplayable) ||
		err.Error() != "device 0: cannot replay the allocator: backend cudaMallocAsync has no caching allocator" {
		t.Errorf("WhatIf(cudaMallocAsync) error = %v, want a *RefusedError that is ErrNotReplayable", err)
	}

	c.Settings = map[string]any{}
	c.Traces = nil
	if _, err := WhatIfSnapshot(&c, SnapshotWhatIfOptions{Device: -1}); !errors.Is(err, ErrNoTrace) {
		t.Errorf("WhatIfSnapshot(no trace) error = %v, want ErrNoTrace", err)
	}
}
