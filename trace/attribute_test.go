package trace

import (
	"strings"
	"testing"
)

func decodeSynth(t *testing.T) *Trace {
	t.Helper()
	tr, err := Decode(strings.NewReader(synthTrace("object")), "synth.json")
	if err != nil {
		t.Fatalf("Decode(synth) error: %v", err)
	}
	return tr
}

// memAt finds the memory event with the given Bytes and relative time.
func memAt(t *testing.T, tr *Trace, relUS int64, bytes int64) *MemEvent {
	t.Helper()
	for i := range tr.Memory {
		if m := &tr.Memory[i]; m.Time == synthBase+relUS*1000 && m.Bytes == bytes {
			return m
		}
	}
	t.Fatalf("no memory event of %d bytes at %d µs", bytes, relUS)
	return nil
}

// TestAttribution checks the rules of FORMATS.md §3.7 on the synthetic
// trace: innermost op on the same thread, ties to the latest start, python
// fallback, module through the forward link.
func TestAttribution(t *testing.T) {
	tr := decodeSynth(t)
	opName := func(id OpID) string {
		if id == NoOp {
			return "(none)"
		}
		return tr.OpName(id)
	}
	pyName := func(id PyID) string {
		if id == NoPy {
			return "(none)"
		}
		return tr.Str(tr.PyFuncs[id].Name)
	}
	tests := []struct {
		name       string
		relUS      int64
		bytes      int64
		op, py     string
		module     string
		label      string
		opThreadID string
	}{
		{"innermost", 130, 1024, "aten::mm", "(none)", "nn.Module: Linear_0", "aten::mm", "1/1"},
		{"tie-latest-start", 135, 512, "aten::empty", "(none)", "nn.Module: Linear_0", "aten::empty", "1/1"},
		{"annotation", 200, 2048, "fwd", "(none)", "nn.Module: Net_0", "fwd", "1/1"},
		{"python-fallback", 400, -512, "(none)", "<built-in function free>", "(none)", "(no op)", ""},
		{"backward", 335, 4096, "aten::mm", "(none)", "nn.Module: Linear_0",
			"aten::mm (backward of aten::linear in nn.Module: Linear_0)", "1/autograd"},
		{"cpu-memory", 130, 64, "aten::mm", "(none)", "nn.Module: Linear_0", "aten::mm", "1/1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := memAt(t, tr, tc.relUS, tc.bytes)
			if got := opName(m.Op); got != tc.op {
				t.Errorf("Memory(%d µs).Op = %s, want %s", tc.relUS, got, tc.op)
			}
			if got := pyName(m.Py); got != tc.py {
				t.Errorf("Memory(%d µs).Py = %s, want %s", tc.relUS, got, tc.py)
			}
			if got := pyName(m.Module); got != tc.module {
				t.Errorf("Memory(%d µs).Module = %s, want %s", tc.relUS, got, tc.module)
			}
			if got := tr.Label(m.Op); got != tc.label {
				t.Errorf("Label(Memory(%d µs).Op) = %q, want %q", tc.relUS, got, tc.label)
			}
			if m.Op != NoOp {
				if got := tr.Threads[tr.Ops[m.Op].Thread].String(); got != tc.opThreadID {
					t.Errorf("thread of Memory(%d µs).Op = %s, want %s", tc.relUS, got, tc.opThreadID)
				}
			}
		})
	}
	if got := tr.ModulePath(memAt(t, tr, 130, 1024).Module); got != "Net_0/Linear_0" {
		t.Errorf("ModulePath(Linear_0) = %q, want Net_0/Linear_0", got)
	}
}

// TestForwardBySequence drops the fwdbwd flows: the sequence number must
// still link MmBackward0 to aten::linear.
func TestForwardBySequence(t *testing.T) {
	var kept []string
	for _, line := range strings.Split(synthTrace("object"), "\n") {
		if !strings.Contains(line, `"fwdbwd"`) {
			kept = append(kept, line)
		}
	}
	tr, err := Decode(strings.NewReader(strings.Join(kept, "\n")), "noflows.json")
	if err != nil {
		t.Fatal(err)
	}
	m := memAt(t, tr, 335, 4096)
	if got, want := tr.Label(m.Op), "aten::mm (backward of aten::linear in nn.Module: Linear_0)"; got != want {
		t.Errorf("Label(backward aten::mm) without flows = %q, want %q", got, want)
	}
}

// TestOpTableSynth checks self and total figures, peak-live bytes and the
// python fallback row on the synthetic trace.
func TestOpTableSynth(t *testing.T) {
	tr := decodeSynth(t)
	dev := tr.PeakDevice()
	if dev != (Device{Type: 1, ID: 0}) {
		t.Fatalf("PeakDevice() = %v, want cuda:0", dev)
	}
	tb := tr.OpTable(dev, false)
	if tb.Peak.Allocated != 7680 || tb.LiveAtPeak != 7680 || tb.Events != 5 || tb.NoOp != 1 || tb.Unattributed != 0 {
		t.Errorf("OpTable() = peak %d live %d events %d noop %d unattributed %d, want 7680 7680 5 1 0",
			tb.Peak.Allocated, tb.LiveAtPeak, tb.Events, tb.NoOp, tb.Unattributed)
	}
	type fig struct {
		calls, allocs                  int
		self, total, selfNet, totalNet int64
		selfLive, totalLive            int64
	}
	want := map[string]fig{
		"aten::mm":                 {2, 2, 5120, 5120, 5120, 5120, 5120, 5120},
		"aten::empty":              {1, 1, 512, 512, 512, 512, 512, 512},
		"aten::linear":             {1, 0, 0, 1536, 0, 1536, 0, 1536},
		"fwd":                      {1, 1, 2048, 3584, 2048, 3584, 2048, 3584},
		"MmBackward0":              {1, 0, 0, 4096, 0, 4096, 0, 4096},
		"<built-in function free>": {0, 0, 0, 0, -512, -512, 0, 0},
	}
	got := map[string]Stats{}
	for _, r := range tb.Rows {
		got[r.Name] = r
	}
	for name, w := range want {
		r := got[name]
		g := fig{r.Calls, r.Allocs, r.SelfAlloc, r.TotalAlloc, r.SelfNet, r.TotalNet, r.SelfPeakLive, r.TotalPeakLive}
		if g != w {
			t.Errorf("OpTable()[%q] = %+v, want %+v", name, g, w)
		}
	}
	if tb.Rows[0].Name != "aten::mm" {
		t.Errorf("OpTable().Rows[0] = %s, want aten::mm (largest self)", tb.Rows[0].Name)
	}
	tb.Sort(ByTotal)
	if tb.Rows[0].Name != "aten::mm" || tb.Rows[1].Name != "MmBackward0" && tb.Rows[1].Name != "autograd::engine::evaluate_function: MmBackward0" {
		t.Errorf("Sort(ByTotal) = %s, %s…, want aten::mm then a 4096-byte backward row", tb.Rows[0].Name, tb.Rows[1].Name)
	}

	split := tr.OpTable(dev, true)
	found := false
	for _, r := range split.Rows {
		if r.Name == "aten::mm (backward of aten::linear in nn.Module: Linear_0)" {
			found = r.SelfAlloc == 4096
		}
	}
	if !found {
		t.Errorf("OpTable(split) has no backward aten::mm row of 4096 bytes: %+v", split.Rows)
	}
}

// TestModuleTableSynth checks per-module figures: backward memory counts for
// the forward op's module, totals include nested modules.
func TestModuleTableSynth(t *testing.T) {
	tr := decodeSynth(t)
	tb := tr.ModuleTable(tr.PeakDevice())
	got := map[string]Stats{}
	for _, r := range tb.Rows {
		got[r.Name] = r
	}
	lin, net := got["nn.Module: Linear_0"], got["nn.Module: Net_0"]
	if lin.SelfAlloc != 5632 || lin.TotalAlloc != 5632 || lin.Path != "Net_0/Linear_0" {
		t.Errorf("ModuleTable()[Linear_0] = self %d total %d path %q, want 5632 5632 Net_0/Linear_0", lin.SelfAlloc, lin.TotalAlloc, lin.Path)
	}
	if net.SelfAlloc != 2048 || net.TotalAlloc != 7680 || net.TotalPeakLive != 7680 {
		t.Errorf("ModuleTable()[Net_0] = self %d total %d live %d, want 2048 7680 7680", net.SelfAlloc, net.TotalAlloc, net.TotalPeakLive)
	}
	if tb.Unattributed != 1 {
		t.Errorf("ModuleTable().Unattributed = %d, want 1 (the free outside any module)", tb.Unattributed)
	}
}

// TestOpTableFixture checks properties that must hold on the real trace:
// every byte of the device's events lands in exactly one self figure, and
// the live-at-peak figures add up.
func TestOpTableFixture(t *testing.T) {
	tr, _ := loadFixture(t)
	dev := tr.PeakDevice()
	var net, alloc int64
	for i := range tr.Memory {
		if m := &tr.Memory[i]; m.Device() == dev {
			net += m.Bytes
			alloc += max(m.Bytes, 0)
		}
	}
	for _, tb := range []*Table{tr.OpTable(dev, false), tr.OpTable(dev, true)} {
		var selfNet, selfAlloc, live int64
		for _, r := range tb.Rows {
			selfNet += r.SelfNet
			selfAlloc += r.SelfAlloc
			live += r.SelfPeakLive
		}
		if selfNet != net || selfAlloc != alloc || live != tb.LiveAtPeak {
			t.Errorf("OpTable() sums = net %d alloc %d live %d, want %d %d %d", selfNet, selfAlloc, live, net, alloc, tb.LiveAtPeak)
		}
		if tb.Unattributed != 0 {
			t.Errorf("OpTable().Unattributed = %d, want 0 (every event has an op or a python function)", tb.Unattributed)
		}
	}
}
