package trace

import (
	"fmt"
	"strings"
	"testing"
)

// kinetoBase is the epoch µs that testdata/kineto-1.10.json's offsets
// (README.md) are counted from.
const kinetoBase = 1650000000000000

func decodeKineto110(t *testing.T) *Trace {
	t.Helper()
	tr, err := Open("testdata/kineto-1.10.json")
	if err != nil {
		t.Fatalf("Open(kineto-1.10.json) error: %v", err)
	}
	if err := tr.CheckValid(); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	return tr
}

var cuda0 = Device{Type: 1, ID: 0}

// TestKinetoLegacyShape: the trace of torch 1.9–1.12 is read in full: ops
// of category Operator, memory events with Bytes only whose integer tid is
// the quoted tid of the ops, the running sum of Bytes as allocated.
func TestKinetoLegacyShape(t *testing.T) {
	tr := decodeKineto110(t)
	if got := len(tr.Ops); got != 17 {
		t.Errorf("len(Ops) = %d, want 17 (every Operator event)", got)
	}
	if got := len(tr.Memory); got != 14 {
		t.Errorf("len(Memory) = %d, want 14", got)
	}
	if got := len(tr.Calls); got != 1 || tr.Str(tr.Calls[0].Name) != "cudaLaunchKernel" {
		t.Errorf("Calls = %v, want the one cudaLaunchKernel (category Runtime)", tr.Calls)
	}
	if got := tr.Counts.Kernels[0]; got != 1 {
		t.Errorf("Counts.Kernels[0] = %d, want 1 (category Kernel)", got)
	}
	var threads []string
	for _, th := range tr.Threads {
		threads = append(threads, th.String())
	}
	// The ops' "4242" and the memory events' 4242 are one thread.
	if got := strings.Join(threads, " "); !strings.Contains(got, "4242/4242") || strings.Count(got, "4242/4242") != 1 ||
		strings.Count(got, "4242/4300") != 1 {
		t.Errorf("Threads = %s, want 4242/4242 and 4242/4300 once each", got)
	}
	if got := tr.Recorded(cuda0); got != (Recorded{}) {
		t.Errorf("Recorded(cuda:0) = %+v, want nothing recorded but Bytes", got)
	}
	if len(tr.Warnings) != 1 || !strings.Contains(tr.Warnings[0].Message, "no Total Allocated") ||
		!strings.Contains(tr.Warnings[0].Message, "live at the peak per op are not known") {
		t.Errorf("Warnings = %v, want one saying allocated is the running sum and live-at-peak is unknown", tr.Warnings)
	}

	var got []string
	for _, p := range tr.Series(cuda0).Points {
		got = append(got, fmt.Sprintf("%.0f:%d", p.TimeUS-kinetoBase, p.Allocated))
	}
	want := "1150:4096 1220:8192 1260:8704 1310:4608 1325:5120 1470:9216 1520:17408 1550:19456 " +
		"1580:15360 1700:7168 1710:6656 1720:6144 1730:2048"
	if strings.Join(got, " ") != want {
		t.Errorf("Series(cuda:0) = %s, want %s", strings.Join(got, " "), want)
	}

	p := tr.Peak(cuda0)
	if p.Allocated != 19456 || p.Time != (kinetoBase+1550)*1000 || p.Reserved != 0 {
		t.Errorf("Peak(cuda:0) = %d B (reserved %d) at %d ns, want 19456 B (0) at %d", p.Allocated, p.Reserved, p.Time, (kinetoBase+1550)*1000)
	}
	var open []string
	for _, chain := range p.Open {
		var names []string
		for _, id := range chain {
			names = append(names, tr.OpName(id))
		}
		open = append(open, strings.Join(names, " > "))
	}
	wantOpen := "ProfilerStep#1 | autograd::engine::evaluate_function: AddmmBackward0 > AddmmBackward0 > aten::mm"
	if strings.Join(open, " | ") != wantOpen {
		t.Errorf("Peak.Open = %s, want %s", strings.Join(open, " | "), wantOpen)
	}
	// Without flows, backward nodes find their forward op by sequence number
	// and name: aten::linear and aten::addmm both carry 10.
	for _, tc := range []struct {
		relUS, bytes int64
		label        string
	}{
		{1550, 2048, "aten::mm (backward of aten::addmm)"},
		{1470, 4096, "aten::threshold_backward (backward of aten::relu)"},
		{1580, -4096, "AddmmBackward0 (backward of aten::addmm)"},
		{1150, 4096, "aten::addmm"},
	} {
		var m *MemEvent
		for i := range tr.Memory {
			if e := &tr.Memory[i]; e.Time == (kinetoBase+tc.relUS)*1000 && e.Bytes == tc.bytes {
				m = e
			}
		}
		if m == nil {
			t.Fatalf("no memory event of %d bytes at %d", tc.bytes, tc.relUS)
		}
		if got := tr.Label(m.Op); got != tc.label {
			t.Errorf("Label(op of %d B at %d) = %q, want %q", tc.bytes, tc.relUS, got, tc.label)
		}
	}
	if got := tr.PeakDevice(); got != cuda0 {
		t.Errorf("PeakDevice() = %v, want cuda:0", got)
	}
	cpu := tr.Series(Device{Type: 0, ID: -1}).Points
	if len(cpu) != 1 || cpu[0].Allocated != 64 {
		t.Errorf("Series(cpu) = %v, want one point of 64 bytes", cpu)
	}
}

// TestKinetoLegacyOpTable: per-op self and total bytes follow from the
// events (README.md); nothing is known live at the peak.
func TestKinetoLegacyOpTable(t *testing.T) {
	tr := decodeKineto110(t)
	tb := tr.OpTable(cuda0, false)
	if tb.Events != 13 || tb.NoOp != 0 || tb.Unattributed != 0 || tb.LiveAtPeak != 0 || tb.Peak.Allocated != 19456 {
		t.Errorf("table: %d events, %d outside ops, %d unattributed, %d live at peak, peak %d; want 13, 0, 0, 0, 19456",
			tb.Events, tb.NoOp, tb.Unattributed, tb.LiveAtPeak, tb.Peak.Allocated)
	}
	if tb.Recorded.Addr || tb.Recorded.TotalAllocated {
		t.Errorf("table Recorded = %+v, want no Addr, no Total Allocated", tb.Recorded)
	}
	type row struct {
		name                           string
		calls, allocs                  int
		selfAlloc, totalAlloc, selfNet int64
	}
	want := []row{
		{"aten::mm", 2, 2, 10240, 10240, 10240},
		{"aten::addmm", 1, 1, 4096, 4096, 4096},
		{"aten::relu", 1, 1, 4096, 4096, 4096},
		{"aten::threshold_backward", 1, 1, 4096, 4096, 4096},
		{"aten::ones_like", 1, 1, 512, 512, 512},
		{"aten::sum", 1, 1, 512, 512, 512},
		{"AddmmBackward0", 1, 0, 0, 10240, -4096},
		{"ProfilerStep#1", 1, 0, 0, 9216, -17408},
		{"aten::linear", 1, 0, 0, 4096, 0},
		{"autograd::engine::evaluate_function: AddmmBackward0", 1, 0, 0, 10240, 0},
	}
	rows := map[string]Stats{}
	for _, r := range tb.Rows {
		rows[r.Name] = r
		if r.SelfPeakLive != 0 || r.TotalPeakLive != 0 {
			t.Errorf("%s: live at peak %d/%d, want 0 (unknown without addresses)", r.Name, r.SelfPeakLive, r.TotalPeakLive)
		}
	}
	for _, w := range want {
		r, ok := rows[w.name]
		if !ok {
			t.Errorf("no row %s", w.name)
			continue
		}
		got := row{r.Name, r.Calls, r.Allocs, r.SelfAlloc, r.TotalAlloc, r.SelfNet}
		if got != w {
			t.Errorf("row %s = %+v, want %+v", w.name, got, w)
		}
	}
	// BySelf ranks a row by the larger of the bytes its own events
	// allocated and freed: ProfilerStep#1 frees 17408 bytes itself (the
	// frees at 1310 and 1700-1730), AddmmBackward0 4096 (at 1580), ranked
	// with aten::addmm's 4096 allocated, ties by name.
	for i, name := range []string{"ProfilerStep#1", "aten::mm", "AddmmBackward0", "aten::addmm", "aten::relu",
		"aten::threshold_backward", "aten::ones_like", "aten::sum"} {
		if tb.Rows[i].Name != name {
			t.Errorf("Rows[%d] = %s, want %s (sorted by self bytes allocated or freed, ties by name)", i, tb.Rows[i].Name, name)
		}
	}
	tb.Sort(BySelfAlloc)
	for i, w := range want[:6] {
		if tb.Rows[i].Name != w.name {
			t.Errorf("Sort(BySelfAlloc): Rows[%d] = %s, want %s (sorted by self bytes allocated, ties by name)", i, tb.Rows[i].Name, w.name)
		}
	}
}

func TestNumericID(t *testing.T) {
	for in, want := range map[string]string{
		`"4242"`: `4242`, `4242`: `4242`, `"-1"`: `-1`, `"Spans"`: `"Spans"`, `""`: `""`, `"-"`: `"-"`,
		`"stream 7"`: `"stream 7"`, `"12345678901234567890"`: `"12345678901234567890"`, `"0x1f"`: `"0x1f"`,
	} {
		if got := string(numericID([]byte(in))); got != want {
			t.Errorf("numericID(%s) = %s, want %s", in, got, want)
		}
	}
}
