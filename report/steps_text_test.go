package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// analyzeText analyses a fixture's snapshot for a text renderer's test.
func analyzeText(t *testing.T, dir string) *attribution.Analysis {
	t.Helper()
	s, err := snapshot.Open("../fixtures/" + dir + "/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	return attribution.Analyze(s, attribution.Options{Device: -1})
}

// TestPhasesTextFoldsAlikeSteps: the simulation loop's 64 steps (torch:
// every step's forward peaks at the same bytes and ends at the same floor)
// print as the peak's step and one row for the 63 alike, saying so; a
// step that differs breaks a run.
func TestPhasesTextFoldsAlikeSteps(t *testing.T) {
	tr, err := truth.Read("../fixtures/workloads/nca/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	var peaks, ends []int64
	for _, p := range tr.Phases {
		if p.Step >= 0 {
			peaks, ends = append(peaks, p.PeakAllocated), append(ends, p.AllocatedEnd)
		}
	}
	if len(peaks) != 64 {
		t.Fatalf("nca/truth.json: %d steps, want 64", len(peaks))
	}
	for i := range peaks {
		if peaks[i] != peaks[0] || ends[i] != ends[0] {
			t.Fatalf("nca/truth.json: step %d peaks at %d, ends at %d; step 0 at %d, %d: not alike", i, peaks[i], ends[i], peaks[0], ends[0])
		}
	}
	var b bytes.Buffer
	if err := phasesText(&b, analyzeText(t, "workloads/nca").Devices[0]); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(l); strings.HasPrefix(l, " ") && len(f) > 0 && f[0] != "step" {
			rows = append(rows, l)
		}
	}
	peak, end := units.Bytes(peaks[0]), units.Bytes(ends[0])
	if len(rows) != 2 || !strings.HasPrefix(strings.TrimSpace(rows[0]), "0 ") || !strings.HasSuffix(rows[0], "forward *") ||
		!strings.HasPrefix(strings.TrimSpace(rows[1]), "1–63 ") || !strings.Contains(rows[1], peak) || !strings.Contains(rows[1], end) {
		t.Errorf("phasesText(nca) step rows = %q, want step 0 (the peak, *) and 1–63 at %s peak, %s after", rows, peak, end)
	}
	if !strings.Contains(b.String(), "63 steps that print alike, shown as one row a run (1 run;") {
		t.Errorf("phasesText(nca) does not say 63 steps were folded:\n%s", b.String())
	}

	row := func(step int, peak int64) attribution.StepRow {
		return attribution.StepRow{Step: step, Floor: 1 << 20, After: 1 << 20, Peak: peak, PeakIn: "forward", Peaks: []int64{peak}}
	}
	rs := []attribution.StepRow{row(0, 8<<20), row(1, 8<<20), row(2, 9<<20), row(3, 8<<20), row(4, 8<<20), row(6, 8<<20)}
	rs[2].HoldsPeak = true
	var got []string
	for _, r := range stepRuns(rs) {
		got = append(got, r.steps())
	}
	if want := []string{"0–1", "2", "3–4", "6"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stepRuns = %v, want %v (the peak alone; a gap in numbers breaks a run)", got, want)
	}
}
