package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	sg "github.com/memscope/memscope/internal/snapgen"
)

// TestDiffSoleDevices: the text and JSON of a diff say which device of each
// side was compared when the sole devices differ in index.
func TestDiffSoleDevices(t *testing.T) {
	one := func(dev int, size int64) *attribution.Analysis {
		sgm := sg.Seg(seg, sg.Blk(size, size, "active_allocated"), sg.Blk(20*mib-size, 0, "inactive"))
		sgm["device"] = dev
		traces := make([][]map[string]any, dev+1)
		traces[dev] = []map[string]any{sg.Ev("segment_alloc", seg, 20*mib, 1), sg.Ev("alloc", seg, size, 2)}
		return synthAnalysis(t, &sg.Synth{Segments: []map[string]any{sgm}, Traces: traces})
	}
	d := attribution.Compare(one(0, 4*mib), one(3, 6*mib))
	var b bytes.Buffer
	if err := diffText(&b, "a.pickle", "b.pickle", d, 5); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "device 0 of A against device 3 of B (the sole device of each)") ||
		!strings.Contains(b.String(), "+2.00 MiB") {
		t.Errorf("diff text:\n%s\nwant device 0 of A against device 3 of B, +2.00 MiB", b.String())
	}
	if j := diffDevicesJSON(d); len(j) != 1 || j[0].Device != 0 || j[0].DeviceB != 3 || j[0].PeakB.Allocated != 6*mib {
		t.Errorf("diff JSON = %+v, want device 0, device_b 3, B's peak 6 MiB", j)
	}
}

// TestCallersText: a diff's site row says who called the allocating frame
// once when both runs called it from the same line, each side's otherwise.
func TestCallersText(t *testing.T) {
	for _, tc := range []struct {
		r    attribution.Delta
		want string
	}{
		{attribution.Delta{Name: "f.py:1 g"}, ""},
		{attribution.Delta{CallerA: "train.py:9 main", CallerB: "train.py:9 main", CallersA: 1, CallersB: 1}, "called from train.py:9 main"},
		{attribution.Delta{CallerA: "train.py:202 fwd", CallerB: "train_ckpt.py:52 fwd", CallersA: 1, CallersB: 3},
			"called from train.py:202 fwd (A), train_ckpt.py:52 fwd and 2 more (B)"},
		{attribution.Delta{CallerB: "train_ckpt.py:52 fwd", CallersB: 1}, "called from train_ckpt.py:52 fwd (B)"},
		{attribution.Delta{CallerA: "train.py:202 fwd", CallersA: 1}, "called from train.py:202 fwd (A)"},
	} {
		if got := callersText(tc.r); got != tc.want {
			t.Errorf("callersText(%+v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}
