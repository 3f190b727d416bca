package attribution

import (
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/capture"
)

// TestAddDeviceUsed: a snapshot in a capture run directory gets the
// device used its run sampled; one outside a run, none.
func TestAddDeviceUsed(t *testing.T) {
	in := filepath.Join("..", "fixtures", "capture-train", "snapshot.pickle")
	dev, used, ok := capture.DeviceUsedFor(in)
	if !ok {
		t.Fatal("capture-train sampled no device used")
	}
	sum := Summarize(fixtureAnalysis(t, filepath.Dir(in)), 5)
	sum.AddDeviceUsed(in)
	for _, d := range sum.Devices {
		if d.Device == dev && (d.DeviceUsedPeak == nil || *d.DeviceUsedPeak != used) {
			t.Errorf("device %d: DeviceUsedPeak %v, want the run's %d", d.Device, d.DeviceUsedPeak, used)
		}
	}
	out := filepath.Join("..", "fixtures", "llama-bf16", "snapshot.pickle")
	sum = Summarize(fixtureAnalysis(t, filepath.Dir(out)), 5)
	sum.AddDeviceUsed(out)
	for _, d := range sum.Devices {
		if d.DeviceUsedPeak != nil {
			t.Errorf("device %d outside a run: DeviceUsedPeak %d, want none", d.Device, *d.DeviceUsedPeak)
		}
	}
}
