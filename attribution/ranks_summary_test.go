package attribution

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memscope/memscope/report/jsondoc"
)

// TestSummaryRanksReadsJSONDoc: SummaryRanks reads the summary document's
// own type (jsondoc.SummaryDoc, what 'memscope summary --json' writes):
// each file's first device, its peaks, device used, peak step and phase,
// OOMs, a leak finding, top sites and the warnings that mark a rank.
func TestSummaryRanksReadsJSONDoc(t *testing.T) {
	used, step := int64(3<<30), 4
	doc := jsondoc.SummaryDoc{Schema: jsondoc.Schema, Kind: "summary", Files: []jsondoc.SummaryFile{
		{Source: "snapshot.rank2.pickle", Warnings: []string{"snapshot.rank2.pickle: the file ends early: cut short at byte 10"},
			Devices: []jsondoc.SummaryDevice{{
				Device: 1,
				Peaks: map[string]jsondoc.PeakJSON{"allocated": {Bytes: 2 << 30}, "reserved": {Bytes: 5 << 29},
					"requested": {Bytes: 1 << 30}},
				DeviceUsedPeak: &used, PeakStep: &step, PeakPhase: "backward", OOMs: 2,
				Findings: []jsondoc.FindingJSON{{Kind: FindingLeak.String(), Problem: true}},
				TopSites: []jsondoc.SiteJSON{{Label: "train.py:10 forward", Bytes: 1 << 30}, {Label: "train.py:10 forward", Bytes: 5}},
			}}},
		{Source: "snapshot.rank5.pickle", Devices: []jsondoc.SummaryDevice{{
			Device:   0,
			Peaks:    map[string]jsondoc.PeakJSON{"allocated": {Bytes: 7}, "reserved": {Bytes: 8}},
			Warnings: []string{"the trace contradicts the snapshot's segments"},
		}}},
		{Source: "no-device.pickle"},
	}}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "summary.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := SummaryRanks(path)
	if err != nil || len(got) != 2 {
		t.Fatalf("SummaryRanks = %d ranks, %v; want 2, nil", len(got), err)
	}
	a, c := got[0], got[1]
	if a.Name != path+": snapshot.rank2.pickle" || a.Rank != 2 || a.Device != 1 || a.PeakAllocated != 2<<30 || a.PeakReserved != 5<<29 ||
		a.DeviceUsed != used || a.PeakStep != 4 || a.PeakPhase != "backward" || a.OOMs != 2 || !a.LeakFound || a.Leak != -1 ||
		a.Sites["train.py:10 forward"] != 1<<30+5 || !slices.Equal(a.Marks, []string{MarkTruncated}) {
		t.Errorf("SummaryRanks[0] = %+v", a)
	}
	if c.Rank != 5 || c.PeakAllocated != 7 || c.PeakReserved != 8 || c.DeviceUsed != -1 || c.PeakStep != -1 || c.LeakFound ||
		!slices.Equal(c.Marks, []string{MarkContradiction}) {
		t.Errorf("SummaryRanks[1] = %+v", c)
	}
	// A field ranks does not read, of the wrong JSON type: not a summary
	// document (it decodes into the document's own type).
	os.WriteFile(path, []byte(`{"schema": "memscope/v1", "kind": "summary", "files": [{"devices": [{"steps": "many"}]}]}`), 0o644)
	if _, err := SummaryRanks(path); err == nil {
		t.Error(`SummaryRanks("steps": "many"): no error`)
	}
	doc.Kind = "peak"
	b, _ = json.Marshal(doc)
	os.WriteFile(path, b, 0o644)
	if _, err := SummaryRanks(path); err == nil {
		t.Error("SummaryRanks(a peak document): no error")
	}
}
