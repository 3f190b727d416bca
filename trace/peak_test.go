package trace

import "testing"

// TestPeakTruth: the highest Total Allocated over the trace's memory events
// is torch.cuda.max_memory_allocated() over the profiled window, and the
// highest Total Reserved is max_memory_reserved().
func TestPeakTruth(t *testing.T) {
	tr, want := loadFixture(t)
	dev := tr.PeakDevice()
	if dev.String() != "cuda:0" {
		t.Errorf("PeakDevice() = %v, want cuda:0", dev)
	}
	p := tr.Peak(dev)
	if p.Allocated != want.Window.MaxAllocated {
		t.Errorf("Peak().Allocated = %d, want %d (window.max_allocated)", p.Allocated, want.Window.MaxAllocated)
	}
	if p.MaxReserved != want.Window.MaxReserved {
		t.Errorf("Peak().MaxReserved = %d, want %d (window.max_reserved)", p.MaxReserved, want.Window.MaxReserved)
	}
	var maxAlloc int64
	for _, pt := range tr.Series(dev).Points {
		maxAlloc = max(maxAlloc, pt.Allocated)
	}
	if maxAlloc != want.Window.MaxAllocated {
		t.Errorf("max of Series().Allocated = %d, want %d", maxAlloc, want.Window.MaxAllocated)
	}
	if p.Event < 0 || tr.Memory[p.Event].TotalAllocated != p.Allocated || tr.Memory[p.Event].Time != p.Time {
		t.Errorf("Peak().Event = %d does not hold the peak", p.Event)
	}
	if len(p.Open) == 0 {
		t.Errorf("Peak().Open is empty, want the ops running at the peak")
	}
}

// TestRunningTotals: in time order, each device event's Bytes moves Total
// Allocated from the previous event's value (FORMATS.md §3.5), which holds
// only if events are ordered as the allocator emitted them.
func TestRunningTotals(t *testing.T) {
	tr, w := loadFixture(t)
	prev := map[Device]int64{}
	for i := range tr.Memory {
		m := &tr.Memory[i]
		if p, ok := prev[m.Device()]; ok && m.OnGPU() && p+m.Bytes != m.TotalAllocated {
			t.Fatalf("Memory[%d]: previous total %d + Bytes %d = %d, want Total Allocated %d", i, p, m.Bytes, p+m.Bytes, m.TotalAllocated)
		}
		prev[m.Device()] = m.TotalAllocated
	}
	if got := prev[tr.PeakDevice()]; got != w.Window.AllocatedEnd {
		t.Errorf("last Total Allocated = %d, want %d (window.allocated_end)", got, w.Window.AllocatedEnd)
	}
}

// TestSeriesSynth checks the series and the ops open at the peak.
func TestSeriesSynth(t *testing.T) {
	tr := decodeSynth(t)
	s := tr.Series(Device{Type: 1, ID: 0})
	var got []int64
	for _, p := range s.Points {
		got = append(got, p.Allocated)
	}
	want := []int64{1024, 1536, 3584, 7680, 7168}
	if len(got) != len(want) {
		t.Fatalf("Series().Allocated = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Series().Allocated = %v, want %v", got, want)
		}
	}
	p := tr.Peak(Device{Type: 1, ID: 0})
	if len(p.Open) != 1 || len(p.Open[0]) != 3 || tr.OpName(p.Open[0][2]) != "aten::mm" ||
		tr.OpName(p.Open[0][0]) != "autograd::engine::evaluate_function: MmBackward0" {
		t.Errorf("Peak().Open = %v, want evaluate_function > MmBackward0 > aten::mm", p.Open)
	}
	if d := tr.Devices(); len(d) != 2 || d[0].String() != "cuda:0" || d[1].String() != "cpu" {
		t.Errorf("Devices() = %v, want [cuda:0 cpu]", d)
	}
}

// TestPeakLiveLogits: at the Llama peak (start of backward) the largest
// blocks live are fp32 logits-sized: the log-softmax output saved in
// forward, and the gradients of log_softmax and nll_loss. Each must hold
// exactly truth.json's logits_bytes_fp32 (batch × seq × vocab × 4).
func TestPeakLiveLogits(t *testing.T) {
	tr, w := loadFixture(t)
	tb := tr.OpTable(tr.PeakDevice(), false)
	tb.Sort(ByPeakLive)
	want := map[string]bool{"aten::_log_softmax": true, "aten::_log_softmax_backward_data": true, "aten::nll_loss_backward": true}
	for _, r := range tb.Rows[:3] {
		if !want[r.Name] || r.SelfPeakLive != w.LogitsBytesFP32 {
			t.Errorf("OpTable() top peak-live row = %s %d, want one of %v holding %d (logits_bytes_fp32)", r.Name, r.SelfPeakLive, want, w.LogitsBytesFP32)
		}
	}
}
