package capture

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Schemas of the files in run directories. The harness's own files
// (capture.json, point.json) carry theirs too.
const (
	ResultsSchema = "memscope-sweep/v1"
	RunSchema     = "memscope-run/v1"
	CaptureSchema = "memscope-capture/v1"
	PointSchema   = "memscope-point/v1"
	CheckSchema   = "memscope-check/v1"
)

// Results is results.json: a batch-size sweep's settings and every point it
// measured, in the order measured.
type Results struct {
	Schema   string       `json:"schema"`
	Workload WorkloadInfo `json:"workload"`
	// Mode is train or infer; Optimizer adamw or sgd; MicroBatch the
	// gradient-accumulation micro-batch (0: the whole batch at once).
	Mode       string `json:"mode"`
	Optimizer  string `json:"optimizer"`
	MicroBatch int    `json:"micro_batch"`
	Warmup     int    `json:"warmup"` // warm-up steps per point, not measured
	Steps      int    `json:"steps"`  // measured steps per point
	// Nproc processes per point under torchrun (1: no torchrun), with
	// Parallel none, ddp or fsdp.
	Nproc    int    `json:"nproc"`
	Parallel string `json:"parallel"`
	// MemoryFraction is the torch.cuda.set_per_process_memory_fraction cap
	// (0: none) and MemoryLimit the bytes it allows (the device's total
	// without a cap).
	MemoryFraction float64    `json:"memory_fraction"`
	MemoryLimit    int64      `json:"memory_limit"`
	Ladder         []int      `json:"ladder"`
	Precisions     []string   `json:"precisions"`
	Bisect         bool       `json:"bisect"`
	Device         DeviceInfo `json:"device"`
	Torch          string     `json:"torch"`
	Python         string     `json:"python"`
	Command        []string   `json:"command"` // memscope's own command line
	Started        time.Time  `json:"started"`
	WallS          float64    `json:"wall_s"`
	Points         []Point    `json:"points"`
	Warnings       []string   `json:"warnings"`
}

// WorkloadInfo says what was trained.
type WorkloadInfo struct {
	Name       string         `json:"name"`    // mlp, llama, vit or pkg.module:factory
	Options    []string       `json:"options"` // the workload flags passed to the harness
	Parameters int64          `json:"parameters"`
	ParamBytes int64          `json:"param_bytes"`
	Facts      map[string]any `json:"facts,omitempty"` // what the harness reported (vocab, layers…)
}

// DeviceInfo is one CUDA device.
type DeviceInfo struct {
	Name  string `json:"name"`
	Total int64  `json:"total"`
}

// Numbers are the allocator's four peak numbers of one phase or point.
type Numbers struct {
	Allocated int64 `json:"allocated"`
	Requested int64 `json:"requested"`
	Reserved  int64 `json:"reserved"`
	Active    int64 `json:"active"`
}

// Point stages and snapshot roles.
const (
	StageLadder   = "ladder"
	StageBisect   = "bisect"
	StageSnapshot = "snapshot" // a re-run of a known point with recording on

	RoleSafe       = "safe"
	RoleLargestFit = "largest-fit"
	RoleFirstFail  = "first-fail"
)

// Point is one batch size at one precision, measured in a fresh process.
type Point struct {
	ID        string `json:"id"` // its folder under points/
	Precision string `json:"precision"`
	Batch     int    `json:"batch"`
	Stage     string `json:"stage"`
	Role      string `json:"role,omitempty"` // snapshot points: safe, largest-fit, first-fail

	// Fits: every step ran. OOM: the allocator ran out of memory (an
	// outcome, not an error). Error: the point could not be measured (a
	// crash); neither Fits nor OOM holds then.
	Fits     bool     `json:"fits"`
	OOM      bool     `json:"oom"`
	OOMInfo  *OOMInfo `json:"oom_info,omitempty"`
	Error    string   `json:"error,omitempty"`
	ExitCode int      `json:"exit_code"`

	// Phases holds each phase's peaks (forward, backward, optimizer), the
	// highest over the measured steps; Peak the highest over all phases.
	Phases          map[string]Numbers `json:"phases"`
	Peak            Numbers            `json:"peak"`
	DeviceUsed      int64              `json:"device_used"` // the driver's view, max over phases
	StepTimeMS      *float64           `json:"step_time_ms"`
	NumAllocRetries int64              `json:"num_alloc_retries"`
	Steps           int                `json:"steps,omitempty"` // measured steps run (after warm-up)
	Files           map[string]string  `json:"files,omitempty"` // snapshot, trace: paths in the run dir
	Ranks           []RankPeak         `json:"ranks,omitempty"` // several processes: each one's peaks
	WallS           float64            `json:"wall_s"`
}

// OOMInfo is where and how a point ran out of memory.
type OOMInfo struct {
	Message string `json:"message"`
	Step    *int   `json:"step"`
	Phase   string `json:"phase"`
	Request int64  `json:"request"` // bytes asked for, from the OOM observer (0: not seen)
	Rank    int    `json:"rank"`
}

// RankPeak is one process's peaks in a multi-process point or capture.
type RankPeak struct {
	Rank       int     `json:"rank"`
	Peak       Numbers `json:"peak"`
	DeviceUsed int64   `json:"device_used"`
	Fits       bool    `json:"fits"`
	OOM        bool    `json:"oom"`
	Missing    bool    `json:"missing,omitempty"` // it wrote nothing (killed)
}

// ReadResults reads DIR/results.json.
func ReadResults(dir string) (*Results, error) {
	path := filepath.Join(dir, "results.json")
	var r Results
	if err := readJSON(path, ResultsSchema, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// WriteResults writes r to DIR/results.json.
func WriteResults(dir string, r *Results) error {
	return writeJSON(filepath.Join(dir, "results.json"), r)
}

// errNoSchema is a JSON file with no "schema" field.
var errNoSchema = errors.New(`no "schema" field`)

// readJSON decodes path into v after checking its "schema" field against
// want: the same name and major version.
// maxJSONFile bounds the run files read whole (run.json, capture.json,
// results): the harness writes kilobytes.
const maxJSONFile = 64 << 20

func readJSON(path, want string, v any) error {
	if st, err := os.Stat(path); err == nil && st.Size() > maxJSONFile {
		return fmt.Errorf("reading %s: %d bytes, more than a memscope %s file holds (%d at most)", path, st.Size(), want, maxJSONFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if head.Schema == "" {
		return fmt.Errorf("reading %s: %w: not a memscope %s file", path, errNoSchema, want)
	}
	if head.Schema != want {
		name, _, _ := strings.Cut(want, "/")
		if strings.HasPrefix(head.Schema, name+"/") {
			return fmt.Errorf("reading %s: schema %q: this memscope reads %s", path, head.Schema, want)
		}
		return fmt.Errorf("reading %s: schema %q, want %s", path, head.Schema, want)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
