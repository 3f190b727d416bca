package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memscope/memscope/report"
)

// TestWhatIfLateBound: whatif on the server recorded after its model was
// cast (fixtures/whatif-servelate) gives, under expandable segments, a
// point and a bound, and torch's reserved peak for that setting in a fresh
// process (1,071,644,672 B) lies inside it, the point within 5%; the
// recorded settings' column has none (it is the recording); the text says
// how much of the start state was cached; advise's settings say the same.
func TestWhatIfLateBound(t *testing.T) {
	const snap = "../../fixtures/whatif-servelate/default/snapshot.pickle.gz"
	want := readFixtureTruth(t, "whatif-servelate/expandable").MemoryStatsEnd["reserved_bytes.all.peak"]
	r := runMemscope("whatif", "--json", "--conf", "expandable_segments:True", snap)
	if r.code != 0 {
		t.Fatalf("whatif --json: exit %d: %v", r.code, r.err)
	}
	var doc report.FilesDoc[report.WhatIfFileJSON]
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	runs := doc.Files[0].Devices[0].Runs
	if len(runs) != 2 || runs[0].StartPlaced || !runs[1].StartPlaced || runs[1].StartUnknown <= 0 {
		t.Fatalf("runs %+v; want the recorded column as recorded and the what-if's start re-made", runs)
	}
	o := runs[1]
	if o.PeakReservedLow > o.PeakReserved || o.PeakReserved > o.PeakReservedHigh ||
		float64(want) < 0.98*float64(o.PeakReservedLow) || want > o.PeakReservedHigh ||
		100*abs(o.PeakReserved-want) > 5*want {
		t.Errorf("expandable: %d in [%d, %d]; want torch's %d inside, the point within 5%%", o.PeakReserved, o.PeakReservedLow, o.PeakReservedHigh, want)
	}
	r = runMemscope("whatif", "--conf", "expandable_segments:True", snap)
	if text := strings.Join(strings.Fields(r.stdout), " "); r.code != 0 || !strings.Contains(text, "that start state is re-made") || !strings.Contains(text, " to ") {
		t.Errorf("whatif: exit %d, output:\n%s\nwant the re-made start and the bound said", r.code, r.stdout)
	}
	r = runMemscope("advise", snap)
	if text := strings.Join(strings.Fields(r.stdout), " "); r.code != 0 || !strings.Contains(text, "cached when the recording began has a history the trace does not hold") {
		t.Errorf("advise: exit %d, output:\n%s\nwant the settings' bound", r.code, r.stdout)
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// TestWhatIfDefaultsColumn: `--conf ""` asks for torch's default settings
// from an expandable recording (fixtures/whatif-twinlate-b, recorded after
// fifty 10 MiB blocks were freed): the column is headed "defaults", not
// left blank, and torch's default-settings peak for that program in a
// fresh process (943,718,400 B) lies inside the bound it prints.
func TestWhatIfDefaultsColumn(t *testing.T) {
	const snap = "../../fixtures/whatif-twinlate-b/expandable/snapshot.pickle.gz"
	want := readFixtureTruth(t, "whatif-twinlate-b/default").MemoryStatsEnd["reserved_bytes.all.peak"]
	r := runMemscope("whatif", "--conf", "", snap)
	if r.code != 0 {
		t.Fatalf("whatif --conf '': exit %d: %v", r.code, r.err)
	}
	var head []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, "recorded settings") && !strings.Contains(line, "column") {
			head = strings.Fields(line)
		}
	}
	if len(head) != 3 || head[2] != "defaults" {
		t.Errorf("header %q; want recorded settings, then defaults:\n%s", head, r.stdout)
	}
	r = runMemscope("whatif", "--json", "--conf", "", snap)
	var doc report.FilesDoc[report.WhatIfFileJSON]
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if o := doc.Files[0].Devices[0].Runs[1]; !o.StartPlaced || want < o.PeakReservedLow || want > o.PeakReservedHigh {
		t.Errorf("defaults: %d in [%d, %d], start re-made %v; want torch's %d inside", o.PeakReserved, o.PeakReservedLow, o.PeakReservedHigh, o.StartPlaced, want)
	}
}

// TestWhatIfExpandableSegmentsLine: a column of 0/0 segments with memory
// reserved (expandable segments, which torch's segment stat leaves out)
// comes with the line that says so; without such a column there is none.
func TestWhatIfExpandableSegmentsLine(t *testing.T) {
	const snap = "../../fixtures/whatif-train-stacks-all/snapshot.pickle.gz"
	const line = "expandable segments' mapped memory is not among them"
	r := runMemscope("whatif", "--conf", "expandable_segments:True", snap)
	if r.code != 0 || !strings.Contains(r.stdout, line) || !strings.Contains(r.stdout, "178/178            0/0") {
		t.Errorf("whatif --conf expandable_segments:True: exit %d, output:\n%s\nwant the 0/0 column and the line saying why", r.code, r.stdout)
	}
	r = runMemscope("whatif", "--conf", "max_split_size_mb:128", snap)
	if r.code != 0 || strings.Contains(r.stdout, line) {
		t.Errorf("whatif --conf max_split_size_mb:128: exit %d, output:\n%s\nwant no expandable line", r.code, r.stdout)
	}
}
