package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report"
)

// TestPeakTreeAccountsForEveryByte: peak --tree prints the total, then
// nodes whose bytes, with the line of what the 1% cut leaves out, add up
// to it (each figure is rounded to what units.Bytes prints); the two
// buckets the issue found opaque are nodes named by what they are, and
// the logits' gradients hang under the forward line that made the logits.
func TestPeakTreeAccountsForEveryByte(t *testing.T) {
	const snap = "../../fixtures/llama-wide/snapshot.pickle"
	js := runMemscope("summary", "--json", snap)
	var doc report.SummaryDoc
	if js.err != nil || json.Unmarshal([]byte(js.stdout), &doc) != nil {
		t.Fatalf("summary --json: %v", js.err)
	}
	peak := doc.Files[0].Devices[0].AtPeak.Allocated
	r := runMemscope("peak", "--tree", snap)
	if r.err != nil {
		t.Fatal(r.err)
	}
	_, tree, ok := strings.Cut(r.stdout, "left out):\n")
	if !ok {
		t.Fatalf("no call tree in\n%s", r.stdout)
	}
	lines := strings.Split(strings.TrimRight(tree, "\n"), "\n")
	if want := units.Bytes(peak) + " 100.0%  (all "; !strings.Contains(lines[0], want) {
		t.Errorf("the tree's first line %q, want the total %q", lines[0], want)
	}
	var sum, slack float64
	roots := map[string]bool{}
	for _, line := range lines[1:] {
		if len(line) < 21 || line[21] == ' ' || strings.HasPrefix(line, "  (") {
			continue // deeper than the root's children, or a note
		}
		n, err := units.ParseBytes(strings.TrimSpace(line[:13]))
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		sum += float64(n)
		slack += float64(n) / 200 // units.Bytes keeps 3 significant digits at least
		roots[strings.TrimSpace(line[21:])] = true
	}
	if d := sum - float64(peak); d > slack || -d > slack {
		t.Errorf("the root's children add up to %.0f B, want the peak's %d B (within rounding, %.0f B)", sum, peak, slack)
	}
	for _, want := range []string{"optimizer state (allocated before recording began)", "parameters (allocated before recording began)"} {
		if !roots[want] {
			t.Errorf("no root node %q in\n%s", want, tree)
		}
	}
	if !strings.Contains(tree, "<repo>/capture/harness.py:389 __call__ (backward, autograd)") {
		t.Errorf("the logits' gradients are not under the harness's cross_entropy line in\n%s", tree)
	}
}

// TestSummaryNamedOrigins: summary --json's top sites at the peak (all of
// them, --top 100000) add up to the peak's allocated bytes, and at most a
// tenth of them are in sites with named false; a backward site's frame is
// its forward line.
func TestSummaryNamedOrigins(t *testing.T) {
	for _, snap := range []string{"llama-wide/snapshot.pickle", "llama-bf16/snapshot.pickle", "advise/train-none/snapshot.pickle",
		"plain-trainer-late/snapshot.pickle", "plain-lightning/snapshot.pickle", "workloads/fsdp2/snapshot.pickle",
		"workloads/foreach-peak/snapshot.pickle", "../attribution/testdata/thirdparty/cs336-2.7b-one-forward.pickle.gz"} {
		t.Run(snap, func(t *testing.T) {
			r := runMemscope("summary", "--json", "--top", "100000", "../../fixtures/"+snap)
			var doc report.SummaryDoc
			if r.err != nil || json.Unmarshal([]byte(r.stdout), &doc) != nil {
				t.Fatalf("summary --json: %v", r.err)
			}
			d := doc.Files[0].Devices[0]
			var sum, unnamed int64
			for _, s := range d.TopSites {
				sum += s.Bytes
				if !s.Named {
					unnamed += s.Bytes
				}
				if s.Kind == "backward" && s.Frame == nil {
					t.Errorf("backward site %q has no frame", s.Label)
				}
			}
			if peak := d.AtPeak.Allocated; sum != peak || 10*unnamed > peak {
				t.Errorf("top sites add up to %d B with %d B named false, want the peak's %d B with at most 10%% unnamed", sum, unnamed, peak)
			}
		})
	}
}
