package attribution

import (
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
