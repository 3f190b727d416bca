package trace

import (
	"cmp"
	"slices"
	"testing"

	"github.com/memscope/memscope/internal/truth"
)

// TestKeyAveragesTruth compares KeyAverages with the rows torch's
// prof.key_averages() wrote into truth.json for the same run: the 15 rows
// with the largest |self_device_memory_usage| must match exactly, self,
// total and count.
func TestKeyAveragesTruth(t *testing.T) {
	tr, want := loadFixture(t)
	rows := tr.KeyAverages()
	ours := map[string]KeyAverage{}
	for _, r := range rows {
		if _, dup := ours[r.Name]; !dup {
			ours[r.Name] = r
		}
	}
	truthRows := slices.Clone(want.KeyAverages)
	slices.SortStableFunc(truthRows, func(a, b truth.KeyAverage) int {
		return cmp.Compare(abs64(b.SelfDeviceMemoryUsage), abs64(a.SelfDeviceMemoryUsage))
	})
	if len(truthRows) < 15 {
		t.Fatalf("truth.json has %d key_averages rows, want at least 15", len(truthRows))
	}
	for _, w := range truthRows[:15] {
		t.Run(w.Name, func(t *testing.T) {
			got, ok := ours[w.Name]
			if !ok {
				t.Fatalf("KeyAverages() has no row %q", w.Name)
			}
			if got.SelfDeviceMemory != w.SelfDeviceMemoryUsage {
				t.Errorf("KeyAverages()[%q].SelfDeviceMemory = %d, want %d", w.Name, got.SelfDeviceMemory, w.SelfDeviceMemoryUsage)
			}
			if got.DeviceMemory != w.DeviceMemoryUsage {
				t.Errorf("KeyAverages()[%q].DeviceMemory = %d, want %d", w.Name, got.DeviceMemory, w.DeviceMemoryUsage)
			}
			if got.Count != w.Count {
				t.Errorf("KeyAverages()[%q].Count = %d, want %d", w.Name, got.Count, w.Count)
			}
		})
	}
}

// TestKeyAveragesAllRows checks every CPU-side row torch reported with
// memory, beyond the top 15, and the CPU memory columns.
func TestKeyAveragesAllRows(t *testing.T) {
	tr, want := loadFixture(t)
	ours := map[string]KeyAverage{}
	for _, r := range tr.KeyAverages() {
		ours[r.Name] = r
	}
	checked := 0
	seen := map[string]bool{}
	for _, w := range want.KeyAverages {
		// torch lists a name twice when it also ran on the GPU (a
		// gpu_user_annotation row, always zero); the first is the CPU row.
		if seen[w.Name] {
			continue
		}
		seen[w.Name] = true
		if w.DeviceMemoryUsage == 0 && w.SelfDeviceMemoryUsage == 0 && w.SelfCPUMemoryUsage == 0 {
			continue
		}
		got := ours[w.Name]
		if got.SelfDeviceMemory != w.SelfDeviceMemoryUsage || got.DeviceMemory != w.DeviceMemoryUsage ||
			got.SelfCPUMemory != w.SelfCPUMemoryUsage || got.CPUMemory != w.CPUMemoryUsage || got.Count != w.Count {
			t.Errorf("KeyAverages()[%q] = self %d total %d cpu self %d cpu %d count %d, want %d %d %d %d %d",
				w.Name, got.SelfDeviceMemory, got.DeviceMemory, got.SelfCPUMemory, got.CPUMemory, got.Count,
				w.SelfDeviceMemoryUsage, w.DeviceMemoryUsage, w.SelfCPUMemoryUsage, w.CPUMemoryUsage, w.Count)
		}
		checked++
	}
	if checked < 15 {
		t.Errorf("checked %d rows with memory, want at least 15", checked)
	}
}
