package attribution

import "testing"

// TestAnalysisAdvise: every device with recorded events gets Device.Advise's
// advice; a device with none is left out unless it is the only one.
func TestAnalysisAdvise(t *testing.T) {
	opt := AdviseOptions{Ranks: 8, LossChunks: 8}
	both := onDevices(4*mib, 0, 1)
	quiet := onDevices(4*mib, 0, 1)
	quiet.Traces[1] = []map[string]any{} // device 1: segments, no events
	alone := onDevices(4*mib, 0)
	alone.Traces[0] = []map[string]any{}
	for _, tt := range []struct {
		name    string
		an      *Analysis
		devices int
		want    []int
	}{
		{"two with events", analyzeSynth(t, both), 2, []int{0, 1}},
		{"one quiet of two", analyzeSynth(t, quiet), 2, []int{0}},
		{"the only, quiet", analyzeSynth(t, alone), 1, []int{0}},
	} {
		if len(tt.an.Devices) != tt.devices {
			t.Fatalf("%s: %d devices analysed, want %d", tt.name, len(tt.an.Devices), tt.devices)
		}
		got := tt.an.Advise(opt)
		var devs []int
		for _, da := range got {
			devs = append(devs, da.Device)
		}
		if len(devs) != len(tt.want) {
			t.Fatalf("%s: Advise = devices %v, want %v (analysis has %d)", tt.name, devs, tt.want, len(tt.an.Devices))
		}
		for i, da := range got {
			d := tt.an.Devices[0]
			for _, x := range tt.an.Devices {
				if x.Device == da.Device {
					d = x
				}
			}
			want := d.Advise(opt)
			if da.Device != tt.want[i] || da.Timeline != d.Timeline || da.Advice.Peak != want.Peak || len(da.Advice.Fixes) != len(want.Fixes) {
				t.Errorf("%s: Advise[%d] = device %d, peak %d, %d fixes; want device %d, Device.Advise's peak %d, %d fixes",
					tt.name, i, da.Device, da.Advice.Peak, len(da.Advice.Fixes), tt.want[i], want.Peak, len(want.Fixes))
			}
		}
	}
}
