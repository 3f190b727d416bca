package budget

import "strings"

// GPU is a device the budget can be held against.
type GPU struct {
	Name string `json:"name"`
	// Memory is the total memory CUDA reports (nvidia-smi's "Total", or
	// torch.cuda.get_device_properties().total_memory), which is a little
	// less than the marketed capacity. Figures are typical; a board or
	// driver may differ by a few hundred MiB: pass bytes when it matters.
	Memory int64 `json:"memory"`
	// Workspace is the cuBLAS workspace per handle torch uses on it.
	Workspace int64 `json:"workspace"`
}

const (
	mib          = 1 << 20
	olderCublasW = 8*mib + 128*1024 // ":4096:2:16:8": 2 × 4 MiB + 8 × 16 KiB
)

// gpus are the devices known by name. H200's memory is what torch reported
// on the machine that made fixtures/; the others are nvidia-smi totals.
var gpus = []GPU{
	{"H100", 81559 * mib, CublasWorkspace},
	{"H100-NVL", 95830 * mib, CublasWorkspace},
	{"H200", 150109880320, CublasWorkspace},
	{"A100-40GB", 40960 * mib, olderCublasW},
	{"A100-80GB", 81920 * mib, olderCublasW},
	{"A10G", 23028 * mib, olderCublasW},
	{"L4", 23034 * mib, olderCublasW},
	{"L40S", 46068 * mib, olderCublasW},
	{"RTX-4090", 24564 * mib, olderCublasW},
	{"RTX-3090", 24576 * mib, olderCublasW},
	{"RTX-A6000", 49140 * mib, olderCublasW},
	{"V100-16GB", 16384 * mib, olderCublasW},
	{"V100-32GB", 32768 * mib, olderCublasW},
	{"T4", 15360 * mib, olderCublasW},
}

// aliases map other spellings to a name in gpus.
var aliases = map[string]string{"A100": "A100-80GB", "H100-SXM": "H100", "H100-PCIE": "H100",
	"H100-80GB": "H100", "4090": "RTX-4090", "3090": "RTX-3090", "A6000": "RTX-A6000", "V100": "V100-32GB"}

// normGPU upper-cases a GPU name and turns spaces and underscores into
// dashes, dropping an "NVIDIA" prefix and "GeForce".
func normGPU(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	s = strings.NewReplacer(" ", "-", "_", "-").Replace(s)
	s = strings.TrimPrefix(s, "NVIDIA-")
	s = strings.Replace(s, "GEFORCE-", "", 1)
	return s
}

// LookupGPU finds a GPU by name: "H100", "h200", "A100-40GB", "RTX 4090",
// "NVIDIA GeForce RTX 4090".
func LookupGPU(name string) (GPU, bool) {
	k := normGPU(name)
	if a, ok := aliases[k]; ok {
		k = a
	}
	for _, g := range gpus {
		if normGPU(g.Name) == k {
			return g, true
		}
	}
	return GPU{}, false
}

// GPUNames lists the names LookupGPU knows, for help and messages.
func GPUNames() []string {
	names := make([]string, len(gpus))
	for i, g := range gpus {
		names[i] = g.Name
	}
	return names
}

// WorkspaceIn is the cuBLAS workspace memory of a run in mode on g: one
// workspace of g's size per thread that runs matmuls (as DefaultWorkspace
// counts them on Hopper), or -1 (the default) when g's size is unknown.
func (g GPU) WorkspaceIn(mode Mode) int64 {
	if g.Workspace <= 0 {
		return -1
	}
	return g.Workspace * DefaultWorkspace(mode) / CublasWorkspace
}

// Fit is a prediction held against a device.
type Fit struct {
	Device string `json:"device"` // name, or "" for a size
	Memory int64  `json:"memory"`
	// Need is the predicted allocated peak plus the memory outside the
	// allocator; Headroom is Memory − Need, and HeadroomPercent that as a
	// percentage of Memory.
	Need            int64      `json:"need"`
	Headroom        int64      `json:"headroom"`
	HeadroomPercent float64    `json:"headroom_percent"`
	Verdict         FitVerdict `json:"verdict"`
}

// FitVerdict says whether a prediction fits a device; package report
// words it.
type FitVerdict int

const (
	Fits       FitVerdict = iota + 1 // at least MinHeadroom of the device left
	Tight                            // it fits with less than MinHeadroom left
	DoesNotFit                       // Need is more than the device's memory
)

// MinHeadroom is the share of the device to keep free: the caching
// allocator reserves more than it allocates (5–26% more at the peak in
// fixtures/), and a longer batch than the one predicted may come.
const MinHeadroom = 0.05

// FitOn holds p against a device of memory bytes, called name ("" if none).
func (p *Prediction) FitOn(name string, memory int64) Fit {
	return FitNeed(name, memory, p.DeviceBytes())
}

// FitNeed holds a need of bytes against a device of memory bytes, called
// name ("" if none).
func FitNeed(name string, memory, need int64) Fit {
	f := Fit{Device: name, Memory: memory, Need: need}
	f.Headroom = memory - f.Need
	if memory > 0 {
		f.HeadroomPercent = 100 * float64(f.Headroom) / float64(memory)
	}
	switch {
	case f.Headroom < 0:
		f.Verdict = DoesNotFit
	case float64(f.Headroom) < MinHeadroom*float64(memory):
		f.Verdict = Tight
	default:
		f.Verdict = Fits
	}
	return f
}
