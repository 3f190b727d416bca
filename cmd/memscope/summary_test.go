package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/report"
)

// readFixtureTruth reads the truth.json of the fixture called name.
func readFixtureTruth(t *testing.T, name string) *truth.File {
	t.Helper()
	tr, err := truth.Read(filepath.Join("../../fixtures", name, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestSummaryJSONMatchesTruth runs 'summary --json' on every fixture and
// holds its numbers to what torch measured in the same run.
func TestSummaryJSONMatchesTruth(t *testing.T) {
	dirs, err := truth.Fixtures("../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tr := readFixtureTruth(t, filepath.Base(dir))
			r := runMemscope("summary", "--json", filepath.Join(dir, "snapshot.pickle"))
			if r.err != nil {
				t.Fatalf("summary: %v", r.err)
			}
			var doc report.SummaryDoc
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
				t.Fatalf("decoding summary JSON: %v", err)
			}
			if doc.Schema != "memscope/v1" || doc.Kind != "summary" || len(doc.Files) != 1 || len(doc.Files[0].Devices) != 1 {
				t.Fatalf("summary JSON = schema %q kind %q, %d files; want memscope/v1 summary, 1 file with 1 device", doc.Schema, doc.Kind, len(doc.Files))
			}
			d := doc.Files[0].Devices[0]
			for _, c := range []struct {
				name      string
				got, want int64
			}{
				{"peaks.allocated", d.Peaks["allocated"].Bytes, tr.Window.MaxAllocated},
				{"at_peak.allocated", d.AtPeak.Allocated, tr.Window.MaxAllocated},
				{"peaks.requested", d.Peaks["requested"].Bytes, tr.Window.MaxRequested},
				{"peaks.reserved", d.Peaks["reserved"].Bytes, tr.Window.MaxReserved},
				{"end.allocated", d.End.Allocated, tr.Window.AllocatedEnd},
				{"end.requested", d.End.Requested, tr.Window.RequestedEnd},
				{"end.reserved", d.End.Reserved, tr.Window.ReservedEnd},
			} {
				if c.got != c.want {
					t.Errorf("summary %s = %d, want %d (torch)", c.name, c.got, c.want)
				}
			}
			if d.DeviceUsed != nil {
				t.Errorf("device_used = %d, want null (a bare snapshot does not record it)", *d.DeviceUsed)
			}
			// The sites at the peak add up to the allocated bytes at the peak
			// when every site is listed.
			all := runMemscope("summary", "--json", "--top", "100000", filepath.Join(dir, "snapshot.pickle"))
			var full report.SummaryDoc
			if err := json.Unmarshal([]byte(all.stdout), &full); err != nil {
				t.Fatal(err)
			}
			var sum int64
			for _, s := range full.Files[0].Devices[0].TopSites {
				sum += s.Bytes
			}
			if sum != tr.Window.MaxAllocated {
				t.Errorf("Σ site bytes at peak = %d, want %d (peak allocated)", sum, tr.Window.MaxAllocated)
			}
			// The phase the summary names must be one whose own peak, as
			// torch measured it, equals the window's peak.
			if d.PeakStep != nil {
				found := false
				for _, p := range tr.Phases {
					if p.Step == *d.PeakStep && p.Phase == d.PeakPhase && p.PeakAllocated == tr.Window.MaxAllocated {
						found = true
					}
				}
				// A phase that failed with OOM has no row; the harness
				// recorded its peak beside the failure.
				if f := tr.OOM; f != nil && f.Failed != nil && f.Failed.Step == *d.PeakStep && f.Failed.PeakAllocated == tr.Window.MaxAllocated {
					found = true
				}
				if !found {
					t.Errorf("peak placed in step %d %s, but torch's peak of that phase is not the window's peak", *d.PeakStep, d.PeakPhase)
				}
			}
		})
	}
}

func TestSummaryTextGolden(t *testing.T) {
	for _, name := range []string{"mlp-adamw", "oom", "llama-bf16"} {
		t.Run(name, func(t *testing.T) {
			r := runMemscope("summary", "--top", "5", "../../fixtures/"+name+"/snapshot.pickle")
			if r.err != nil {
				t.Fatal(r.err)
			}
			checkGolden(t, "summary-top5-"+name, r.stdout)
			for i, line := range strings.Split(r.stdout, "\n") {
				if n := len([]rune(line)); n > 100 {
					t.Errorf("line %d is %d columns, want ≤ 100: %q", i+1, n, line)
				}
			}
		})
	}
}

// TestSummaryDeviceUsedFromRun: a snapshot in a capture run directory gets
// the device used its run sampled (capture.json), and nothing is invented
// for a bare snapshot.
func TestSummaryDeviceUsedFromRun(t *testing.T) {
	run, err := capture.ReadRun("../../fixtures/capture-train")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		snap string
		want *int64
	}{
		{"../../fixtures/capture-train/snapshot.pickle", &run.Ranks[0].DeviceUsed},
		{"../../fixtures/mlp-adamw/snapshot.pickle", nil},
	} {
		r := runMemscope("summary", "--json", tt.snap)
		if r.err != nil {
			t.Fatal(r.err)
		}
		var doc report.SummaryDoc
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatal(err)
		}
		got := doc.Files[0].Devices[0].DeviceUsedPeak
		switch {
		case tt.want == nil && got != nil:
			t.Errorf("%s: device_used_peak = %d, want null", tt.snap, *got)
		case tt.want != nil && (got == nil || *got != *tt.want):
			t.Errorf("%s: device_used_peak = %v, want %d (capture.json)", tt.snap, got, *tt.want)
		}
	}
}
