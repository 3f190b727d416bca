package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/memscope/memscope/capture"
)

// TestProgressWords: the capture and sweep progress values read as the
// lines the commands print.
func TestProgressWords(t *testing.T) {
	var b bytes.Buffer
	p := Progress{W: &b}
	check := &capture.Check{Torch: "2.11.0", Devices: []capture.DeviceInfo{{Name: "NVIDIA H200"}, {Name: "NVIDIA H200"}}}
	p.CaptureStarted(check, "run1")
	p.SweepStarted(capture.SweepConfig{Workload: "mlp", Precisions: []string{"fp32", "bf16"}, Out: "sw"}, check, 24<<30)
	ms := 152.4
	p.PointDone(3, 9, 75*time.Second, "mlp", &capture.Point{Precision: "bf16", Batch: 8, Stage: "ladder", Fits: true,
		Peak: capture.Numbers{Allocated: 3 << 30, Reserved: 4 << 30}, StepTimeMS: &ms})
	p.PointDone(4, 9, 80*time.Second, "mlp", &capture.Point{Precision: "bf16", Batch: 16, Stage: "ladder", Role: "first-fail",
		OOM: true, OOMInfo: &capture.OOMInfo{Phase: "backward"}})
	p.PointDone(5, 9, 81*time.Second, "mlp", &capture.Point{Precision: "fp32", Batch: 1, Stage: "ladder", Error: "exit 1"})
	p.CaptureStarted(&capture.Check{Torch: "2.11.0"}, "r")
	want := `memscope: capture: torch 2.11.0, 2 × NVIDIA H200; writing run1
memscope: sweep: mlp, fp32,bf16; torch 2.11.0, 2 × NVIDIA H200; limit 24.00 GiB; writing sw
memscope: [3/9 1:15] mlp bf16 batch 8 (ladder): fits, peak 3.00 GiB allocated, 4.00 GiB reserved, 152 ms/step
memscope: [4/9 1:20] mlp bf16 batch 16 (first-fail): out of memory in backward
memscope: [5/9 1:21] mlp fp32 batch 1 (ladder): error: exit 1
memscope: capture: torch 2.11.0, no CUDA device; writing r
`
	if b.String() != want {
		t.Errorf("progress lines:\n%s\nwant:\n%s", b.String(), want)
	}
}
