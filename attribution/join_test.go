package attribution

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/snapshot"
	"github.com/memscope/memscope/trace"
)

// TestJoinLlama joins the llama-profiled snapshot with the trace of the same
// run: the allocations inside the trace's window find their operator, and
// the peak is held by the loss and the output projection.
func TestJoinLlama(t *testing.T) {
	f := fixtureByName(t, "llama-profiled")
	tr, err := trace.Open(filepath.Join("../fixtures/llama-profiled/trace.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	d := f.an.Devices[0]
	j := d.JoinTrace(tr)
	if j.InOverlap == 0 {
		t.Fatal("no allocation inside the trace's window")
	}
	if j.Matched != j.InOverlap || j.SizeMismatch != 0 {
		t.Errorf("join matched %d of %d allocations in the overlap, %d with another block size; want all, none", j.Matched, j.InOverlap, j.SizeMismatch)
	}
	rows, covered := j.ByOp(d.Peak)
	if covered < 0.95 {
		t.Errorf("bytes live at the peak attributed to an operator = %.1f%%, want ≥ 95%%", 100*covered)
	}
	// The largest operator rows at the peak: the fp32 log-softmax of the
	// logits and its gradient, each exactly the fp32 logits' size.
	logits := f.truth.LogitsBytesFP32
	var logSoftmax bool
	for _, r := range rows[:min(4, len(rows))] {
		t.Logf("%12d %s", r.Bytes.Bytes, r.Label)
		if strings.Contains(r.Label, "_log_softmax") && r.Bytes.Bytes == logits {
			logSoftmax = true
		}
	}
	if !logSoftmax {
		t.Errorf("no aten::_log_softmax row of %d bytes (the fp32 logits) among the top operators at the peak", logits)
	}
	found := false
	for _, r := range rows {
		if strings.Contains(r.Label, "aten::mm") || strings.Contains(r.Label, "aten::linear") || strings.Contains(r.Label, "aten::matmul") {
			found = true
		}
	}
	if !found {
		t.Error("no linear/mm operator (the lm_head) holds memory at the peak")
	}
}

// TestCategoriesMatchProfiler compares the categories at the peak with the
// profiler's own memory timeline of the same run. The profiler calls
// autograd's intermediate gradients AUTOGRAD_DETAIL (they are born and die
// inside backward: temporaries here) and leaves activations it cannot trace
// through UNKNOWN; memscope's unknown holds non-tensor blocks such as the
// cuBLAS workspace, which the profiler's timeline does not count. So:
// parameter, optimizer state, input and gradient compare one to one;
// temporary with TEMPORARY+AUTOGRAD_DETAIL; activation with
// ACTIVATION+UNKNOWN.
func TestCategoriesMatchProfiler(t *testing.T) {
	f := fixtureByName(t, "llama-profiled")
	mt, err := trace.OpenMemoryTimeline("../fixtures/llama-profiled/memory_timeline.json")
	if err != nil {
		t.Fatal(err)
	}
	// Compare at the profiler's own peak, which must be the same moment
	// (the two record one allocation a microsecond or two apart).
	d := f.an.Devices[0]
	pi, _ := mt.Peak()
	if gap := mt.TimesUS[pi] - d.Peak.TimeUS; gap < -1000 || gap > 1000 {
		t.Fatalf("profiler peak at %d µs, memscope's at %d µs: not the same moment", mt.TimesUS[pi], d.Peak.TimeUS)
	}
	prof := mt.Bytes[pi]
	c := d.Peak.Categories
	for _, row := range []struct {
		name string
		ours int64
		want int64
	}{
		{"parameter", c[Parameter].Bytes, prof[trace.Parameter]},
		{"optimizer state", c[OptimizerState].Bytes, prof[trace.OptimizerState]},
		{"input", c[Input].Bytes, prof[trace.Input]},
		{"gradient", c[Gradient].Bytes, prof[trace.Gradient]},
		{"temporary", c[Temporary].Bytes, prof[trace.Temporary] + prof[trace.AutogradDetail]},
		{"activation", c[Activation].Bytes, prof[trace.Activation] + prof[trace.Unknown]},
	} {
		if row.want == 0 && row.ours == 0 {
			continue
		}
		if diff := math.Abs(float64(row.ours-row.want)) / math.Max(float64(row.want), 1); diff > 0.10 {
			t.Errorf("%s at the peak = %d, profiler %d: off by %.1f%%, want ≤ 10%%", row.name, row.ours, row.want, 100*diff)
		}
	}
}

func fixtureByName(t *testing.T, name string) *fixture {
	t.Helper()
	for _, f := range loadFixtures(t) {
		if f.name == name {
			return f
		}
	}
	t.Fatalf("fixture %s not found", name)
	return nil
}

// TestTraceTimeline: the trace's series in the replay's shape peaks where
// the snapshot's replay does, at torch's max_memory_allocated.
func TestTraceTimeline(t *testing.T) {
	f := fixtureByName(t, "llama-profiled")
	tr, err := trace.Open("../fixtures/llama-profiled/trace.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	pts := TraceTimeline(tr, tr.PeakDevice())
	var peak snapshot.Point
	for _, p := range pts {
		if p.Allocated > peak.Allocated {
			peak = p
		}
		if p.Requested != NotRecorded || p.Active != NotRecorded {
			t.Fatalf("point %d: requested/active = %d/%d, want NotRecorded", p.Index, p.Requested, p.Active)
		}
	}
	d := f.an.Devices[0]
	if peak.Allocated != f.truth.Window.MaxAllocated || peak.Allocated != d.Timeline.PeakAllocated.Bytes {
		t.Errorf("trace timeline peak = %d, want %d (torch) = replay's %d", peak.Allocated, f.truth.Window.MaxAllocated, d.Timeline.PeakAllocated.Bytes)
	}
	if gap := peak.TimeUS - d.Timeline.PeakAllocated.TimeUS; gap < -1000 || gap > 1000 {
		t.Errorf("trace peak at %d µs, replay's at %d µs", peak.TimeUS, d.Timeline.PeakAllocated.TimeUS)
	}
}
