package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memscope/memscope/report"
)

const legacyTrace = "../../trace/testdata/kineto-1.10.json"

// TestOpsLegacyTrace: a trace of torch 1.9–1.12 (Bytes only, category
// Operator, quoted op tids) gives the per-op table whose figures follow
// from its events (trace/testdata/README.md): the peak of the running sum
// of Bytes and each op's self bytes; the live-at-peak column is left out,
// as the trace has no addresses to pair frees with.
func TestOpsLegacyTrace(t *testing.T) {
	r := runMemscope("ops", "--json", "--top", "-1", "--no-backward-labels", legacyTrace)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var doc struct {
		Kind  string `json:"kind"`
		Files []struct {
			Table report.OpsJSON `json:"table"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Files) != 1 {
		t.Fatalf("ops --json: %d tables, want 1 (cuda:0; CPU memory left out)", len(doc.Files))
	}
	tb := doc.Files[0].Table
	if tb.Device != "cuda:0" || tb.PeakBytes != 19456 || tb.PeakEpochUS != 1650000000001550 || tb.Events != 13 ||
		tb.AllocatedFrom != "sum_of_bytes" || tb.LiveAtPeakKnown {
		t.Errorf("ops --json: %s peak %d at %.0f µs, %d events, from %q, live known %v; want cuda:0 19456 at 1650000000001550, 13, sum_of_bytes, false",
			tb.Device, tb.PeakBytes, tb.PeakEpochUS, tb.Events, tb.AllocatedFrom, tb.LiveAtPeakKnown)
	}
	self := map[string]int64{}
	for _, row := range tb.Rows {
		self[row.Name] = row.SelfAlloc
	}
	for name, want := range map[string]int64{"aten::mm": 10240, "aten::addmm": 4096, "aten::relu": 4096,
		"aten::threshold_backward": 4096, "aten::sum": 512, "aten::ones_like": 512, "ProfilerStep#1": 0} {
		if self[name] != want {
			t.Errorf("ops --json: %s self alloc = %d, want %d", name, self[name], want)
		}
	}
	if !strings.Contains(r.stderr, "no Total Allocated") {
		t.Errorf("ops stderr = %q, want the warning that allocated is the running sum of Bytes", r.stderr)
	}

	r = runMemscope("ops", legacyTrace)
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, want := range []string{"peak allocated 19.00 KiB (running sum of Bytes", "live at the peak are not known",
		"  10.00 KiB    10.00 KiB       2 aten::mm (backward of aten::addmm)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("ops text lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "live at peak") {
		t.Errorf("ops text has a live-at-peak column for a trace without addresses:\n%s", r.stdout)
	}
}
