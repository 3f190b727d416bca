package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/units"
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

// TestAdviseOOMRun: on the run that ran out of memory at AdamW's first
// step, advise --json holds the failed step against the cap: its need does
// not fit, the first fix does, and with torch's cap given (cap_bytes) bf16
// moments do not fit (the step needs 1,683,358,208 B of a 1,677,721,600 B
// cap) where the OOM's bracket alone cannot tell. The text says the same.
// memscope oom's verdict does not send the reader to memscope oom;
// summary's finding does.
func TestAdviseOOMRun(t *testing.T) {
	const snap = "../../fixtures/workloads/oom-first-step/snapshot.pickle"
	tr := readFixtureTruth(t, "workloads/oom-first-step")
	bf16 := func(args ...string) (report.AdviceJSON, string) {
		t.Helper()
		r := runMemscope(append([]string{"advise", "--json"}, append(args, snap)...)...)
		if r.code != 0 {
			t.Fatalf("advise --json %v: exit %d: %v", args, r.code, r.err)
		}
		var doc report.FilesDoc[report.AdviceFileJSON]
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatal(err)
		}
		d := doc.Files[0].Devices[0]
		if d.OOM == nil || d.OOM.Fit.Verdict != "does not fit" || len(d.Fixes) == 0 || d.Fixes[0].Limit == nil || d.Fixes[0].Limit.Verdict != "fits" {
			t.Fatalf("advise %v: oom %+v, fixes %+v; want the failed step not fitting and the first fix fitting", args, d.OOM, d.Fixes)
		}
		for _, f := range d.Fixes {
			if strings.Contains(f.Name, "bf16") {
				return d, f.Limit.Verdict
			}
		}
		t.Fatalf("advise %v: no bf16 moments among %+v", args, d.Fixes)
		return d, ""
	}
	if d, v := bf16(); v != "cannot tell" || d.OOM.Limit.Source != "cap" || tr.CapBytes < d.OOM.Limit.Low || tr.CapBytes >= d.OOM.Limit.High {
		t.Errorf("bracket: bf16 moments %q, limit %+v; want cannot tell, the cap's bracket holding torch's %d", v, d.OOM.Limit, tr.CapBytes)
	}
	if d, v := bf16("--device-memory", fmt.Sprint(tr.CapBytes)); v != "does not fit" || d.OOM.Limit.Source != "given" {
		t.Errorf("--device-memory %d: bf16 moments %q, limit %+v; want does not fit, the given limit", tr.CapBytes, v, d.OOM.Limit)
	}
	r := runMemscope("advise", snap)
	if r.code != 0 || !strings.Contains(r.stdout, "fixes for the failed step, those that fit under the cap first") ||
		!strings.Contains(r.stdout, "does not fit: at least") || !strings.Contains(r.stdout, "fits under the cap, ") {
		t.Errorf("advise: exit %d, output:\n%s\nwant the fixes held against the cap", r.code, r.stdout)
	}
	r = runMemscope("oom", snap)
	if text := strings.Join(strings.Fields(r.stdout), " "); r.code != 0 || strings.Contains(text, "'memscope oom'") ||
		!strings.Contains(text, "shrink what is live at this moment or raise the limit") {
		t.Errorf("oom: exit %d, output:\n%s\nwant a verdict that does not point at memscope oom", r.code, r.stdout)
	}
	r = runMemscope("summary", snap)
	if r.code != 0 || !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), "'memscope oom' lists it by site and category") {
		t.Errorf("summary: exit %d, output:\n%s\nwant the OOM finding to point at memscope oom", r.code, r.stdout)
	}
}

// TestAdviseServingPool: verl's state-only dump (a vLLM rollout beside a
// Megatron actor) is advised as vLLM's KV pool, with the setting that
// sizes it and the trainer's gradients and optimizer state beside it;
// summary --json says the same numbers.
func TestAdviseServingPool(t *testing.T) {
	const snap = "../../attribution/testdata/thirdparty/verl-state.pickle.gz"
	r := runMemscope("summary", "--json", snap)
	if r.code != 0 {
		t.Fatalf("summary --json: exit %d: %v", r.code, r.err)
	}
	var doc report.SummaryDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.Files[0].Devices[0]
	inf := d.Inference
	if inf == nil || inf.Engine != "vLLM" || inf.Growing || inf.KVCache != d.Categories["kv cache"] ||
		inf.Trainer != d.Categories["gradient"]+d.Categories["optimizer state"] || inf.Trainer == 0 {
		t.Fatalf("inference %+v, categories %+v; want vLLM's pool and the trainer's bytes", inf, d.Categories)
	}
	r = runMemscope("advise", snap)
	text := strings.Join(strings.Fields(r.stdout), " ")
	for _, want := range []string{"is vLLM's pool, allocated once at start-up and sized by gpu_memory_utilization",
		"gradients and optimizer state (" + units.Bytes(inf.Trainer) + ") share this GPU"} {
		if r.code != 0 || !strings.Contains(text, want) {
			t.Errorf("advise: exit %d, output:\n%s\nwant %q", r.code, r.stdout, want)
		}
	}
}
