package main

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/memscope/memscope/report"
)

// TestFitCommand: 'memscope fit' on the Llama recorded at batches 1, 2 and
// 4 (fixtures/fit-lm, batches read from the folder names) under the 6 GiB
// cap torch's frontier was measured at: the largest batch that fits is
// torch's, 10 (fixtures/fit-lm/cap6144MiB/frontier.txt), and 11 under
// expandable segments (cap6144MiB-expandable); the run at the frontier
// has torch's peaks to the byte (its truth.json: 5,694,898,176 B
// allocated, 6,404,702,208 B reserved), and the next batch dies in step 1's
// backward, as torch's did.
func TestFitCommand(t *testing.T) {
	dir := "../../fixtures/fit-lm/"
	var doc report.ResultDoc[report.FitJSON]
	runJSON(t, &doc, "fit", "--json", "--memory-limit", "6GiB", "--conf", "expandable_segments:True",
		dir+"b1/snapshot.pickle.gz", dir+"b2/snapshot.pickle.gz", dir+"b4/snapshot.pickle.gz")
	r := doc.Result
	if len(r.Inputs) != 3 || r.Inputs[0].Batch != 1 || r.Inputs[2].Batch != 4 || r.Template != 2 {
		t.Fatalf("inputs %+v, template %d", r.Inputs, r.Template)
	}
	if len(r.Frontiers) != 2 || r.Frontiers[0].LargestFit != 10 || r.Frontiers[1].LargestFit != 11 {
		t.Fatalf("frontiers %+v: want 10 under the recorded settings and 11 under expandable segments", r.Frontiers)
	}
	var at *report.FitPointJSON
	for i, p := range r.Frontiers[0].Points {
		if p.Batch == 10 {
			at = &r.Frontiers[0].Points[i]
		}
	}
	if at == nil || at.PeakAllocated != 5694898176 || at.PeakReserved != 6404702208 {
		t.Errorf("at batch 10: %+v, want torch's 5694898176 B allocated and 6404702208 B reserved", at)
	}
	ff := r.Frontiers[0].FirstFail
	if ff == nil || ff.Batch != 11 || ff.OOM == nil || ff.OOM.Step != 1 || ff.OOM.Phase != "backward" {
		t.Errorf("first fail %+v: want batch 11 out of memory in step 1's backward", ff)
	}
	if r.Capacity != 6<<30 || r.CapFrom != "--memory-limit" {
		t.Errorf("capacity %d from %q", r.Capacity, r.CapFrom)
	}
}

// TestFitUsage: fit's refusals name what is missing.
func TestFitUsage(t *testing.T) {
	snap := "../../fixtures/fit-lm/b2/snapshot.pickle.gz"
	plain := "../../fixtures/mlp-adamw/snapshot.pickle"
	if _, err := os.Stat(plain); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fit", "--memory-limit", "6GiB", snap}, "missing SNAP argument"},
		{[]string{"fit", snap, "../../fixtures/fit-lm/b4/snapshot.pickle.gz"}, "--memory-limit SIZE or --device-memory GPU"},
		{[]string{"fit", "--memory-limit", "6GiB", "--batches", "1", snap, plain}, "--batches names 1 batches for 2 files"},
		{[]string{"fit", "--memory-limit", "6GiB", snap, plain}, "none in its name"},
	} {
		r := runMemscope(c.args...)
		if r.err == nil || !strings.Contains(r.err.Error(), c.want) {
			t.Errorf("%v: %v; want an error saying %q", c.args, r.err, c.want)
		}
	}
}

// TestFitHTML: fit --html writes a self-contained page whose table holds
// the frontier the text gives (resnet50 under 8 GiB: 94, torch's) and
// whose chart draws every run the search made; it loads nothing.
func TestFitHTML(t *testing.T) {
	dir := "../../fixtures/fit-conv/"
	out := t.TempDir() + "/fit.html"
	var doc report.ResultDoc[report.FitJSON]
	runJSON(t, &doc, "fit", "--json", "--html", out, "--memory-limit", "8GiB",
		dir+"b2/snapshot.pickle.gz", dir+"b4/snapshot.pickle.gz", dir+"b8/snapshot.pickle.gz")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if doc.Result.Frontiers[0].LargestFit != 94 {
		t.Fatalf("largest fit %d, torch's is 94", doc.Result.Frontiers[0].LargestFit)
	}
	for _, want := range []string{`id="fit-curve"`, "<td>recorded settings</td>", `<td class="num">94</td>`, "95: step 1 forward"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Every run the search made is a point of the chart: fits as the
	// reserved series' data, OOMs as the triangles'.
	fits, ooms := 0, 0
	for _, p := range doc.Result.Frontiers[0].Points {
		if p.Fits {
			fits++
		} else {
			ooms++
		}
	}
	if n := strings.Count(page, `"name":"recorded settings: reserved"`); n != 1 {
		t.Errorf("%d reserved series", n)
	}
	if fits < 5 || ooms < 1 {
		t.Errorf("%d runs that fit and %d that did not", fits, ooms)
	}
	if regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`).MatchString(page) {
		t.Error("the page loads something from elsewhere")
	}
}

// TestFitCompare: --compare SNAP@N holds the prediction at N against a
// recording made there: generate() at 24 (fixtures/fit-gen/recorded-b24)
// makes every request the fit from batches 1, 2 and 4 predicts at its
// predicted size, but 756 fewer of them (one per layer and decode step),
// all at the generate call.
func TestFitCompare(t *testing.T) {
	dir := "../../fixtures/fit-gen/"
	var doc report.ResultDoc[report.FitJSON]
	runJSON(t, &doc, "fit", "--json", "--memory-limit", "1536MiB", "--compare", dir+"recorded-b24/snapshot.pickle.gz@24",
		dir+"b1/snapshot.pickle.gz", dir+"b2/snapshot.pickle.gz", dir+"b4/snapshot.pickle.gz")
	if len(doc.Result.Compared) != 1 {
		t.Fatalf("compared %+v", doc.Result.Compared)
	}
	c := doc.Result.Compared[0]
	if c.Batch != 24 || c.Exact != c.Recorded || c.Predicted-c.Recorded != 756 || len(c.PredictedOnly) != 1 ||
		c.PredictedOnly[0].Count != 756 || !strings.HasPrefix(c.PredictedOnly[0].Site, "fitwork.py:98 gen") {
		t.Errorf("compared %+v", c)
	}
	if r := runMemscope("fit", "--memory-limit", "1GiB", "--compare", "x@0", dir+"b1/snapshot.pickle.gz", dir+"b2/snapshot.pickle.gz"); r.err == nil || !strings.Contains(r.err.Error(), "1 or more") {
		t.Errorf("--compare x@0: %v", r.err)
	}
}

// TestBudgetFromRecordings: 'memscope budget --batch 10 --device-memory
// 6912MiB' given the Llama recorded at 1, 2 and 4 budgets from fit's
// curve: the cap is the device less the 768 MiB outside the allocator
// (6 GiB, the cap torch's frontier was measured under), the step at 10
// needs torch's peaks there to the byte (cap6144MiB/b10/truth.json:
// 5,694,898,176 B allocated, 6,404,702,208 B reserved) and fits; advise's
// chunked loss is carried along the curve, past the frontier of 10, with
// its next batch an OOM; checkpointing is named as not carried. 'fit --at'
// gives the same need. The model's flags, or no --batch or device, are
// refused with the reason. advise --frontier gives the same fixes.
func TestBudgetFromRecordings(t *testing.T) {
	dir := "../../fixtures/fit-lm/"
	snaps := []string{dir + "b1/snapshot.pickle.gz", dir + "b2/snapshot.pickle.gz", dir + "b4/snapshot.pickle.gz"}
	var doc report.ResultDoc[report.FitJSON]
	runJSON(t, &doc, append([]string{"budget", "--json", "--batch", "10", "--device-memory", "6912MiB"}, snaps...)...)
	r := doc.Result
	if doc.Kind != "fit" || r.Capacity != 6<<30 || !strings.Contains(r.CapFrom, "768.00 MiB") {
		t.Fatalf("kind %q, capacity %d from %q: want fit's document under 6 GiB", doc.Kind, r.Capacity, r.CapFrom)
	}
	if n := r.Need; n == nil || n.Batch != 10 || !n.Fits || n.PeakAllocated != 5694898176 || n.PeakReserved != 6404702208 {
		t.Errorf("need %+v: want batch 10 fitting at torch's 5694898176 B allocated, 6404702208 B reserved", r.Need)
	}
	chunked, ckpt := false, false
	for _, f := range r.Fixes {
		switch {
		case strings.HasPrefix(f.Fix, "chunked cross-entropy"):
			chunked = true
			if !f.Carried || f.LargestFit <= r.Frontiers[0].LargestFit || f.FirstFail == nil || f.FirstFail.Fits || f.FirstFail.Batch != f.LargestFit+1 || f.Shrunk == 0 {
				t.Errorf("chunked loss %+v: want it carried past %d, its next batch an OOM", f, r.Frontiers[0].LargestFit)
			}
		case strings.HasPrefix(f.Fix, "full activation checkpointing"):
			ckpt = true
			if f.Carried || f.Why == "" {
				t.Errorf("checkpointing %+v: want it not carried, with the reason", f)
			}
		}
	}
	if !chunked || !ckpt {
		t.Errorf("fixes %+v: want the chunked loss and checkpointing", r.Fixes)
	}
	var fitDoc report.ResultDoc[report.FitJSON]
	runJSON(t, &fitDoc, append([]string{"fit", "--json", "--at", "10", "--memory-limit", "6GiB"}, snaps...)...)
	if a, b := fitDoc.Result.Need, r.Need; a == nil || b == nil || *a != *b || fitDoc.Result.Fixes != nil {
		t.Errorf("fit --at 10: need %+v, fixes %v; budget's %+v and no fixes without --advise", a, fitDoc.Result.Fixes, b)
	}
	var adv report.ResultDoc[report.FitJSON]
	runJSON(t, &adv, append([]string{"advise", "--frontier", "--json", "--device-memory", "6912MiB"}, snaps...)...)
	if a, b := fmt.Sprintf("%+v", adv.Result.Fixes), fmt.Sprintf("%+v", r.Fixes); !reflect.DeepEqual(adv.Result.Fixes, r.Fixes) || adv.Result.Need != nil {
		t.Errorf("advise --frontier: fixes %s, need %+v; want budget's %s and no need", a, adv.Result.Need, b)
	}
	text := runMemscope(append([]string{"budget", "--batch", "10", "--device-memory", "6912MiB"}, snaps...)...)
	if text.err != nil || !strings.Contains(text.stdout, "at batch 10 the step needs 5.96 GiB reserved") || !strings.Contains(text.stdout, "with advise's fixes") {
		t.Errorf("budget's text: %v\n%s", text.err, text.stdout)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"budget", "--batch", "10", "--config", "x.json", "--device-memory", "H100"}, "--config: with two or more snapshots"},
		{[]string{"budget", "--device-memory", "H100"}, "give the batch to budget at: --batch N"},
		{[]string{"budget", "--batch", "10"}, "--device-memory SIZE or a GPU name"},
		{[]string{"advise", "--frontier"}, "--frontier: give the device"},
		{[]string{"fit", "--at", "-1", "--memory-limit", "6GiB"}, "--at -1"},
	} {
		r := runMemscope(append(c.args, snaps...)...)
		if r.err == nil || !strings.Contains(r.err.Error(), c.want) {
			t.Errorf("%v: %v; want an error saying %q", c.args, r.err, c.want)
		}
	}
}
