// Package truth reads truth.json, the file a capture writes beside its
// snapshot with what torch measured in the same process: its own peak
// counters per phase and over the recorded window, the device, the model
// shape the harness ran, and the facts a fixture was made to show (a leak's
// line, an OOM, the sites of big tensors). Tests hold memscope's numbers to
// it; `memscope budget --truth` reads the shape and phase peaks from it.
//
// Two writers share the schema memscope-truth/v1: capture/harness.py, and
// capture/plain/truthlib.py for snapshots made without the harness
// (Plain is true, with Steps and no annotations of ours in the snapshot).
// A field a writer does not write is left zero (nil for pointers); keys
// this package does not know are ignored. Read returns a File the caller
// owns.
package truth

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Schema is the schema name both writers put in File.Schema.
const Schema = "memscope-truth/v1"

// File is one truth.json. Byte counts are torch.cuda.memory_stats() values
// of the capturing process (allocated_bytes, requested_bytes,
// reserved_bytes, active_bytes: "all" pools), read after
// torch.cuda.synchronize().
type File struct {
	Schema   string `json:"schema"`   // Schema
	Scenario string `json:"scenario"` // the harness scenario (mlp-adamw, llama-bf16, oom…)
	Torch    string `json:"torch"`    // torch.__version__
	// Plain is true when capture/plain/truthlib.py wrote the file: the
	// snapshot was made with plain torch calls, no harness.
	Plain  bool   `json:"plain"`
	Script string `json:"script"` // the plain fixture's script

	DeviceName  string `json:"device_name"`  // torch.cuda.get_device_properties(0).name
	DeviceTotal int64  `json:"device_total"` // its total_memory, bytes
	// AllocConf is PYTORCH_CUDA_ALLOC_CONF as the run set it; CapBytes the
	// per-process cap (set_per_process_memory_fraction × total), 0 for none.
	AllocConf   string  `json:"alloc_conf"`
	CapBytes    int64   `json:"cap_bytes"`
	CapFraction float64 `json:"cap_fraction"` // the fraction set_per_process_memory_fraction was given

	Args Args `json:"args"` // the harness's command-line arguments

	Window Window `json:"window"`
	// Phases are the measured phases of the recorded steps, in order;
	// WarmupPhases those of the steps run before recording began (the
	// late-start fixtures), measured the same way.
	Phases       []Phase `json:"phases"`
	WarmupPhases []Phase `json:"warmup_phases"`
	// Steps and StepsRecorded: the plain fixtures' recorded steps.
	Steps         []Step `json:"steps"`
	StepsRecorded int    `json:"steps_recorded"`
	// MemoryStatsEnd is torch.cuda.memory_stats() at the end of the window.
	MemoryStatsEnd map[string]int64 `json:"memory_stats_end"`

	ParamBytes          int64 `json:"param_bytes"`           // Σ numel × element_size over model.parameters()
	OptimizerStateBytes int64 `json:"optimizer_state_bytes"` // Σ bytes of the device tensors in optimizer.state
	LogitsBytesFP32     int64 `json:"logits_bytes_fp32"`     // batch × seq × vocab × 4: one fp32 logits tensor
	// KVCacheBytes: Σ bytes of every device tensor an inference run's KV
	// cache holds at the end (kept alive through the dump); 0 elsewhere.
	KVCacheBytes int64 `json:"kv_cache_bytes"`

	// The workload fixtures' (fixtures/workloads): gradient bytes (local
	// shards for FSDP2), the frozen and trained parameters of an adapter
	// run, the private pools' reserved bytes (segments whose
	// segment_pool_id is not (0,0)), and at an OOM in the optimizer's
	// first step the state it was making (two moments per parameter).
	GradientBytes        int64 `json:"gradient_bytes"`
	FrozenParamBytes     int64 `json:"frozen_param_bytes"`
	TrainableParamBytes  int64 `json:"trainable_param_bytes"`
	PrivatePoolReserved  int64 `json:"private_pool_reserved"`
	OptimizerStateNeeded int64 `json:"optimizer_state_needed"`
	// PrivatePools are the private pools torch.cuda.memory_snapshot() held
	// at the end, keyed by segment_pool_id as Python prints the tuple:
	// "(0, 1)".
	PrivatePools map[string]PrivatePool `json:"private_pools"`

	// Batch, Seq, Prompt and NewTokens are a plain script's run shape
	// (capture/advise: sequences, tokens per sequence, a generate()'s
	// prompt and new tokens), Model its model's (0 where not written);
	// Layers a workload script's decoder layers (capture/workloads).
	Batch     int64    `json:"batch"`
	Seq       int64    `json:"seq"`
	Prompt    int64    `json:"prompt"`
	NewTokens int64    `json:"new_tokens"`
	Model     RunModel `json:"model"`
	Layers    int64    `json:"layers"`

	Leak  *Leak           `json:"leak"`  // the leak a fixture was made with; nil for none
	Sites map[string]Site `json:"sites"` // source lines of named allocations (lm_head, cross_entropy…)
	OOM   *OOM            `json:"oom"`   // nil when the fixture has no OOM
	// KeyAverages is prof.key_averages() of a profiled run, memory columns
	// only, sorted by |self device memory| descending, then name.
	KeyAverages []KeyAverage `json:"key_averages"`
}

// Args are the harness arguments that give the model's shape. Other
// arguments are not read.
type Args struct {
	Vocab        int64 `json:"vocab"`
	Hidden       int64 `json:"hidden"`
	Intermediate int64 `json:"intermediate"`
	Layers       int64 `json:"layers"`
	Heads        int64 `json:"heads"`
	KVHeads      int64 `json:"kv_heads"`
	Seq          int64 `json:"seq"`
	Batch        int64 `json:"batch"`
	// Checkpointing is nonzero for activation checkpointing; nil when the
	// scenario has no such argument.
	Checkpointing *int `json:"checkpointing"`
}

// RunModel is the shape of a plain script's model (capture/advise).
type RunModel struct {
	Vocab        int64 `json:"vocab"`
	Hidden       int64 `json:"hidden"`
	Layers       int64 `json:"layers"`
	Heads        int64 `json:"heads"`
	KVHeads      int64 `json:"kv_heads"`
	HeadDim      int64 `json:"head_dim"`
	Intermediate int64 `json:"intermediate"`
}

// Checkpointed reports whether the harness ran with activation
// checkpointing (full: each layer's input kept).
func (a Args) Checkpointed() bool { return a.Checkpointing != nil && *a.Checkpointing != 0 }

// Window is the recorded window: the values when recording began and when
// it ended (memory_stats "current"), and each quantity's peak over it: the
// highest of the phases' peaks (the counters were reset at every phase
// boundary, and the phases partition the window) and the start value.
type Window struct {
	AllocatedStart int64 `json:"allocated_start"`
	RequestedStart int64 `json:"requested_start"`
	ReservedStart  int64 `json:"reserved_start"`
	ActiveStart    int64 `json:"active_start"`

	AllocatedEnd int64 `json:"allocated_end"`
	RequestedEnd int64 `json:"requested_end"`
	ReservedEnd  int64 `json:"reserved_end"`
	ActiveEnd    int64 `json:"active_end"`

	MaxAllocated int64 `json:"max_allocated"`
	MaxRequested int64 `json:"max_requested"`
	MaxReserved  int64 `json:"max_reserved"`
	MaxActive    int64 `json:"max_active"`
}

// Phase is one phase of one step (forward, backward, optimizer…), with
// torch's peak counters reset at its start.
type Phase struct {
	Step  int    `json:"step"` // -1 for setup outside the steps
	Phase string `json:"phase"`
	// Micro numbers a micro-batch's forward or backward inside a step
	// (gradient accumulation); nil for a phase of its own.
	Micro *int `json:"micro"`

	PeakAllocated int64 `json:"peak_allocated"` // allocated_bytes.all.peak over the phase
	PeakRequested int64 `json:"peak_requested"`
	PeakReserved  int64 `json:"peak_reserved"`
	PeakActive    int64 `json:"peak_active"`

	AllocatedEnd int64 `json:"allocated_end"` // allocated_bytes.all.current at its end
	ReservedEnd  int64 `json:"reserved_end"`
	// DeviceUsed is total − free from torch.cuda.mem_get_info at its end:
	// the driver's view, CUDA context included.
	DeviceUsed      int64 `json:"device_used"`
	NumAllocRetries int64 `json:"num_alloc_retries"`
}

// Step is one recorded step of a plain fixture.
type Step struct {
	Step      int    `json:"step"`
	FloorEnd  int64  `json:"floor_end"`      // allocated at the step's end
	Peak      int64  `json:"peak_allocated"` // the highest phase peak of the step
	PeakPhase string `json:"peak_phase"`     // the phase that reached it
}

// PrivatePool is one private pool at the end: the sums of its segments'
// total_size and allocated_size, and how many segments it holds.
type PrivatePool struct {
	Reserved  int64 `json:"reserved"`
	Allocated int64 `json:"allocated"`
	Segments  int   `json:"segments"`
}

// PoolID parses a PrivatePools key, "(0, 1)", into the pool's two numbers.
func PoolID(key string) ([2]int64, error) {
	var id [2]int64
	if _, err := fmt.Sscanf(key, "(%d, %d)", &id[0], &id[1]); err != nil {
		return id, fmt.Errorf("private pool key %q: %w", key, err)
	}
	return id, nil
}

// Leak is where a fixture leaks and how fast.
type Leak struct {
	File         string `json:"file"`
	Line         int64  `json:"line"`
	Function     string `json:"function"`
	Steps        int    `json:"steps"` // steps that leaked
	BytesPerStep int64  `json:"bytes_per_step"`
}

// Site is a source line.
type Site struct {
	File string `json:"file"`
	Line int64  `json:"line"`
}

// OOM is what torch reported about the out-of-memory errors of a fixture.
// The harness writes Failed and Observer; the plain fixtures the line that
// raised it and when (File, Line, Step, Phase).
type OOM struct {
	Failed   *OOMFailure      `json:"failed"`   // the step that raised OutOfMemoryError; nil when none did
	Observer []OOMObservation `json:"observer"` // each call of torch._C._cuda_attach_out_of_memory_observer's callback, in order

	File    string `json:"file"`
	Line    int64  `json:"line"`
	Step    int    `json:"step"`
	Phase   string `json:"phase"`
	Batch   int64  `json:"batch"`
	Message string `json:"message"`
	NumOOMs int64  `json:"num_ooms"` // memory_stats()["num_ooms"] after it
}

// OOMFailure is the harness's step that failed, with the peaks of the
// phase it failed in (which never appended its Phase row).
type OOMFailure struct {
	Step          int    `json:"step"`
	Batch         int64  `json:"batch"`
	Message       string `json:"message"` // the first line of the error's message
	PeakAllocated int64  `json:"peak_allocated_in_phase"`
	PeakRequested int64  `json:"peak_requested_in_phase"`
	PeakReserved  int64  `json:"peak_reserved_in_phase"`
	PeakActive    int64  `json:"peak_active_in_phase"`
}

// OOMObservation is one call of the out-of-memory observer.
// The allocator passes (device, request, device_allocated, device_free);
// the harness adds memory_stats "current" at that moment.
type OOMObservation struct {
	Device      int   `json:"device"`
	Request     int64 `json:"request"`      // bytes the failed allocation asked for
	DeviceLimit int64 `json:"device_limit"` // the observer's device_allocated argument
	DeviceFree  int64 `json:"device_free"`  // the device's free bytes then
	Allocated   int64 `json:"allocated"`
	Requested   int64 `json:"requested"`
	Reserved    int64 `json:"reserved"`
}

// KeyAverage is one row of prof.key_averages(): bytes allocated minus
// freed within the operator, its children included (DeviceMemoryUsage) or
// not (Self…), summed over its Count calls.
type KeyAverage struct {
	Name                  string `json:"name"`
	Count                 int    `json:"count"`
	DeviceMemoryUsage     int64  `json:"device_memory_usage"`
	SelfDeviceMemoryUsage int64  `json:"self_device_memory_usage"`
	CPUMemoryUsage        int64  `json:"cpu_memory_usage"`
	SelfCPUMemoryUsage    int64  `json:"self_cpu_memory_usage"`
}

// Read reads the truth.json at path. Errors name the file.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err // *PathError: names the file
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &f, nil
}

// Fixtures returns the folders directly under root that hold a
// truth.json, sorted; an error when there are none.
func Fixtures(root string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(root, "*", "truth.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no fixtures (no */truth.json) under %s", root)
	}
	dirs := make([]string, len(files))
	for i, f := range files {
		dirs[i] = filepath.Dir(f)
	}
	slices.Sort(dirs)
	return dirs, nil
}
