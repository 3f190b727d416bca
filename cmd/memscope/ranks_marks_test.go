package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memscope/memscope/report"
)

// TestRanksMarks: a rank whose snapshot was cut short is marked truncated,
// one whose own summary warns that its trace contradicts its segments is
// marked contradiction, in the JSON and wherever the text names the rank
// (the worst rank's headline too); two inputs of one rank number (rank0,
// rank00) are a warning naming both.
func TestRanksMarks(t *testing.T) {
	dir := rankSet(t, 3, -1)
	big, err := os.ReadFile("../../fixtures/plain-record-oom/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	// Rank 2 the worst, cut short: three quarters of a bigger run.
	if err := os.WriteFile(filepath.Join(dir, "snapshot.rank2.pickle"), big[:len(big)*3/4], 0o644); err != nil {
		t.Fatal(err)
	}
	r := runMemscope("ranks", "--json", dir)
	var doc report.ResultDoc[report.RanksJSON]
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("exit %d: %v\n%s", r.code, err, r.stderr)
	}
	res := doc.Result
	if len(res.Ranks) != 3 || res.Ranks[res.Worst].Rank != 2 {
		t.Fatalf("%d ranks, worst %d; want 3, the cut rank 2 the worst\n%s", len(res.Ranks), res.Worst, r.stderr)
	}
	// The cut trace contradicts the segments kept whole, too: both marks.
	for _, x := range res.Ranks {
		if want := x.Rank == 2; want != slices.Contains(x.Marks, "truncated") || !want && len(x.Marks) > 0 {
			t.Errorf("rank %d: marks %q; want truncated on rank 2, none on the others", x.Rank, x.Marks)
		}
	}
	text := runMemscope("ranks", dir)
	head, _, _ := strings.Cut(text.stdout, "\n")
	if !strings.Contains(head, "on rank 2 [") || !strings.Contains(head, "[truncated]") || !strings.Contains(text.stdout, "("+filepath.Join(dir, "snapshot.rank2.pickle")+") is marked truncated: its file was cut short") {
		t.Errorf("text does not mark the worst rank truncated:\n%s", text.stdout)
	}

	// Summaries: rank 1's device warns of a contradiction; rank 0 twice.
	sum := runMemscope("summary", "--json", "../../fixtures/plain-record/snapshot.pickle")
	if sum.code != 0 {
		t.Fatal(sum.stderr)
	}
	sdir := t.TempDir()
	write := func(name, doc string) {
		if err := os.WriteFile(filepath.Join(sdir, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("summary.rank0.json", sum.stdout)
	write("summary.rank00.json", sum.stdout)
	// The device's warnings come first in the document, the file's after.
	if !strings.Contains(sum.stdout, `"warnings": []`) {
		t.Fatalf("summary --json has no empty warnings:\n%s", sum.stdout)
	}
	write("summary.rank1.json", strings.Replace(sum.stdout, `"warnings": []`,
		`"warnings": ["device 0: the trace contradicts the snapshot's own segments, so the numbers replayed from it may be wrong"]`, 1))
	r = runMemscope("ranks", "--json", sdir)
	doc = report.ResultDoc[report.RanksJSON]{}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("exit %d: %v\n%s", r.code, err, r.stderr)
	}
	res = doc.Result
	if len(res.Ranks) != 3 {
		t.Fatalf("%d ranks, want 3", len(res.Ranks))
	}
	for _, x := range res.Ranks {
		if want := x.Rank == 1; want != (len(x.Marks) == 1 && x.Marks[0] == "contradiction") {
			t.Errorf("rank %d (%s): marks %q; want contradiction only on rank 1", x.Rank, x.File, x.Marks)
		}
	}
	want := "rank 0 is given by 2 inputs: " + filepath.Join(sdir, "summary.rank0.json") + ", " + filepath.Join(sdir, "summary.rank00.json")
	if len(res.Duplicates) != 1 || res.Duplicates[0] != want {
		t.Errorf("duplicates %q, want [%q]", res.Duplicates, want)
	}
	text = runMemscope("ranks", sdir)
	if !strings.Contains(text.stdout, "warning: "+want) {
		t.Errorf("text has no duplicate warning:\n%s", text.stdout)
	}
}
