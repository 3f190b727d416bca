package attribution

import (
	"strings"
	"testing"

	sg "github.com/memscope/memscope/internal/snapgen"
)

// onDevices is a snapshot with, on each device given, one 20 MiB segment
// in which the trace allocates size bytes from train.py:10.
func onDevices(size int64, devices ...int) *sg.Synth {
	s := &sg.Synth{}
	for _, d := range devices {
		addr := seg + int64(d)<<32
		sgm := sg.Seg(addr, sg.Blk(size, size, "active_allocated"), sg.Blk(20*mib-size, 0, "inactive"))
		sgm["device"] = d
		s.Segments = append(s.Segments, sgm)
		for len(s.Traces) <= d {
			s.Traces = append(s.Traces, []map[string]any{})
		}
		s.Traces[d] = []map[string]any{sg.Ev("segment_alloc", addr, 20*mib, 1),
			sg.Ev("alloc", addr, size, 2, sg.Frame("forward", "/repo/train.py", 10))}
	}
	return s
}

// TestCompareSoleDevices: A recorded on GPU 0 and B on GPU 3 are the same
// job: their sole devices are compared; with more devices on a side,
// devices pair by index.
func TestCompareSoleDevices(t *testing.T) {
	d := Compare(analyzeSynth(t, onDevices(4*mib, 0)), analyzeSynth(t, onDevices(6*mib, 3)))
	if len(d.Devices) != 1 {
		t.Fatalf("Compare() = %d devices, want 1", len(d.Devices))
	}
	dd := d.Devices[0]
	if dd.Device != 0 || dd.DeviceB != 3 || dd.OnlyA || dd.OnlyB || dd.PeakA.Allocated != 4*mib || dd.PeakB.Allocated != 6*mib {
		t.Errorf("DeviceDiff = device %d vs %d (only A %v, only B %v), peaks %d vs %d; want 0 vs 3, 4 MiB vs 6 MiB",
			dd.Device, dd.DeviceB, dd.OnlyA, dd.OnlyB, dd.PeakA.Allocated, dd.PeakB.Allocated)
	}
	want := Delta{Name: "/repo/train.py:10 forward", A: 4 * mib, B: 6 * mib, Change: 2 * mib}
	if len(dd.Sites) != 1 || dd.Sites[0] != want {
		t.Errorf("Sites = %+v, want [%+v]", dd.Sites, want)
	}

	d = Compare(analyzeSynth(t, onDevices(4*mib, 0, 1)), analyzeSynth(t, onDevices(6*mib, 3)))
	var got []string
	for _, dd := range d.Devices {
		switch {
		case dd.OnlyA:
			got = append(got, "A"+itoa(dd.Device))
		case dd.OnlyB:
			got = append(got, "B"+itoa(dd.DeviceB))
		}
	}
	if len(d.Devices) != 3 || len(got) != 3 || got[0] != "A0" || got[1] != "A1" || got[2] != "B3" {
		t.Errorf("two devices against one: %v, want A0 A1 B3 each on one side", got)
	}
}

// TestCompareFixByAllocatingFrame: the plain Llama run against the same
// run with a chunked loss (capture/advise/train.py), whose forward is
// called from another line of the script (train.py:115, not :113) and
// whose weights are built from another line (:100, not :95). Sites pair
// by the frame that allocated: the weights are one row that did not
// change, the fp32 logits made in transformers' fixed_cross_entropy one
// row that went away (the chunked loss makes its own), and the model's
// forward frames each one row with both callers named.
func TestCompareFixByAllocatingFrame(t *testing.T) {
	const dir = "../fixtures/advise/"
	a, b := fixtureAnalysis(t, dir+"train-none"), fixtureAnalysis(t, dir+"train-chunked-loss")
	tr := readTruth(t, dir+"train-none")
	dd := Compare(a, b).Devices[0]

	// Every byte at each peak is in one row, once.
	var sumA, sumB int64
	rows := map[string]Delta{}
	for _, r := range dd.Sites {
		sumA, sumB = sumA+r.A, sumB+r.B
		if _, dup := rows[r.Name]; dup {
			t.Errorf("site %q is two rows", r.Name)
		}
		if strings.Contains(r.Name, "called from") {
			t.Errorf("site %q names its caller: the caller is not part of the key", r.Name)
		}
		rows[r.Name] = r
	}
	if sumA != dd.PeakA.Allocated || sumB != dd.PeakB.Allocated {
		t.Errorf("Σ site bytes = %d, %d; want the peaks' allocated %d, %d", sumA, sumB, dd.PeakA.Allocated, dd.PeakB.Allocated)
	}

	find := func(sub string) Delta {
		t.Helper()
		var found []Delta
		for _, r := range dd.Sites {
			if strings.HasSuffix(r.Name, sub) { // not the frame's backward row, "… (backward, autograd)"
				found = append(found, r)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%d site rows name %q, want 1: %+v", len(found), sub, found)
		}
		return found[0]
	}
	const script = "<repo>/capture/advise/train.py:"
	// The weights: the same bytes in both runs, built from line 95, then 100.
	params := a.Primary().Peak.Categories[Parameter].Bytes
	for _, r := range dd.Sites {
		if r.CallerA == script+"95 main" {
			if r.CallerB != script+"100 main" || r.A != params || r.B != params || r.Change != 0 {
				t.Errorf("the weights' row = %+v, want %d B on both sides (the parameter category), called from %s95 and %s100", r, params, script, script)
			}
			if r.A < tr.ParamBytes || r.A > tr.ParamBytes+tr.ParamBytes/100 {
				t.Errorf("the weights' row holds %d B, want torch's %d parameter bytes rounded to blocks", r.A, tr.ParamBytes)
			}
		}
	}
	// The full loss's cross_entropy: its fp32 log-softmax, torch's batch ×
	// seq × vocab × 4, and the 4-byte loss in a 512-byte block, in A; none
	// in B.
	if r := find("loss_utils.py:40 fixed_cross_entropy"); r.A != tr.LogitsBytesFP32+512 || r.B != 0 || r.CallerA != script+"113 main" || r.CallerB != "" {
		t.Errorf("the loss row = %+v, want A %d (torch's fp32 logits + 512), B 0, called from %s113 in A only", r, tr.LogitsBytesFP32+512, script)
	}
	// The model's forward frames: one row each, A's and B's own bytes at
	// that frame summed over every caller, both callers named.
	frameBytes := func(an *Analysis, key string) (n int64) {
		for _, s := range an.Primary().Peak.Sites {
			if SiteKey(an.Snapshot.Stacks, s.Site) == key {
				n += s.Bytes
			}
		}
		return n
	}
	r := find("models/llama/modeling_llama.py:175 forward")
	if r.CallerA != script+"113 main" || r.CallerB != script+"115 main" || r.CallersA != 1 || r.CallersB != 1 {
		t.Errorf("modeling_llama.py:175's callers = %q (%d), %q (%d); want %s113, %s115", r.CallerA, r.CallersA, r.CallerB, r.CallersB, script, script)
	}
	if wa, wb := frameBytes(a, r.Name), frameBytes(b, r.Name); r.A != wa || r.B != wb || r.Change != wb-wa || wa == 0 || wb == 0 {
		t.Errorf("modeling_llama.py:175's row = %d -> %d, want %d -> %d (each peak's blocks allocated there)", r.A, r.B, wa, wb)
	}
	paired := 0
	for _, r := range dd.Sites {
		if r.CallerA != "" && r.CallerB != "" && r.CallerA != r.CallerB {
			paired++
		}
	}
	if paired < 4 {
		t.Errorf("%d rows pair a frame called from different lines of the two runs, want at least 4 (the forward's)", paired)
	}
}
