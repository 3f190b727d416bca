package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memscope/memscope/report"
)

// TestAdvise: on the plain training run the first fix is a loss fix whose
// new peak fits a device the peak does not; an inference recording is said
// to be out of advise's reach; a bad --device-memory is a usage error.
func TestAdvise(t *testing.T) {
	r := runMemscope("advise", "--json", "--device-memory", "8GiB", adviseTrain)
	if r.code != 0 {
		t.Fatalf("advise --json: exit %d: %v", r.code, r.err)
	}
	var doc report.FilesDoc[report.AdviceFileJSON]
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.Files[0].Devices[0]
	if !d.Training || len(d.Fixes) == 0 {
		t.Fatalf("advise train-none = training %v, %d fixes; want training with fixes", d.Training, len(d.Fixes))
	}
	if f := d.Fixes[0]; f.Term != "logits and loss" || f.Fit == nil || f.Fit.Verdict != "fits" || d.Fit.Verdict != "does not fit" {
		t.Errorf("advise train-none: first fix %q on %q, fit %+v, peak's fit %+v; want the loss fixed to fit 8 GiB where the peak does not",
			f.Name, f.Term, f.Fit, d.Fit)
	}
	r = runMemscope("advise", "--device-memory", "8GiB", adviseInfer)
	if r.code != 0 || !strings.Contains(r.stdout, "inference: weights ") || !strings.Contains(r.stdout, "more decode steps of this cache's growth") {
		t.Errorf("advise infer-dynamic: exit %d, output:\n%s\nwant the inference breakdown and the headroom in decode steps", r.code, r.stdout)
	}
	if r = runMemscope("advise", "--device-memory", "lots", adviseTrain); r.code != 2 {
		t.Errorf("advise --device-memory lots: exit %d, want 2", r.code)
	}
}
