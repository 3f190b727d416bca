package allocator

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// TestWhatIfTrainStacksAll: a Llama trained with AdamW and recorded as a
// user records one, with torch's default stacks (Python and C++ frames;
// fixtures/whatif-train-stacks-all), what-if'd to three other settings
// torch ran in fresh processes: the reserved peak of each is torch's to
// the byte, and the allocated peak within 0.1% (roundup_power2_divisions
// rounds blocks the model places 1 MiB short of torch at the peak).
func TestWhatIfTrainStacksAll(t *testing.T) {
	const dir = "../fixtures/whatif-train-stacks-all/"
	b, err := os.ReadFile(dir + "torch.json")
	if err != nil {
		t.Fatal(err)
	}
	var tj struct {
		Settings map[string]struct {
			AllocConf string `json:"alloc_conf"`
			Reserved  int64  `json:"reserved_bytes.all.peak"`
			Allocated int64  `json:"allocated_bytes.all.peak"`
			Retries   int    `json:"num_alloc_retries"`
		} `json:"settings"`
	}
	if err := json.Unmarshal(b, &tj); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(dir + "snapshot.pickle.gz")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := NewRecording(s, 0, WhatIfOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tj.Settings) != 4 {
		t.Fatalf("%d settings in torch.json, want 4", len(tj.Settings))
	}
	for name, want := range tj.Settings {
		set, err := ParseConf(want.AllocConf)
		if err != nil {
			t.Fatal(err)
		}
		o, err := rc.WhatIf(set)
		if err != nil {
			t.Fatalf("WhatIf(%s): %v", name, err)
		}
		t.Logf("%-11s reserved %d (torch %d), allocated %d (torch %d)", name, o.PeakReserved, want.Reserved, o.PeakAllocated, want.Allocated)
		if o.Window || o.OOM != nil || o.Unmatched != 0 || o.Retries != want.Retries {
			t.Errorf("WhatIf(%s): window %v, OOM %+v, %d unmatched, %d retries; want a full recording that runs, %d retries", name, o.Window, o.OOM, o.Unmatched, o.Retries, want.Retries)
		}
		if o.PeakReserved != want.Reserved {
			t.Errorf("WhatIf(%s) reserved peak %d, torch %d (%+.3f%%)", name, o.PeakReserved, want.Reserved, 100*float64(o.PeakReserved-want.Reserved)/float64(want.Reserved))
		}
		if d := o.PeakAllocated - want.Allocated; 1000*max(d, -d) > want.Allocated {
			t.Errorf("WhatIf(%s) allocated peak %d, torch %d: more than 0.1%% apart", name, o.PeakAllocated, want.Allocated)
		}
	}
}
