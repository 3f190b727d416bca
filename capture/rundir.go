package capture

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Run is run.json: what memscope ran for a capture and how it ended.
type Run struct {
	Schema  string   `json:"schema"`
	Command []string `json:"command"` // the user's command, as given
	// Argv is the command memscope ran: the interpreter (or torchrun) with
	// the harness in front of the user's script.
	Argv     []string  `json:"argv"`
	Nproc    int       `json:"nproc"` // processes per node under torchrun; 1 without
	Started  time.Time `json:"started"`
	WallS    float64   `json:"wall_s"`
	ExitCode int       `json:"exit_code"`
	Signal   string    `json:"signal,omitempty"` // the signal that ended it, if one did
	Check    *Check    `json:"check,omitempty"`
	Options  []string  `json:"options"` // the harness options (--max-entries …)
}

// Check is what the harness's preflight check found (harness.py check).
type Check struct {
	Schema       string       `json:"schema"`
	Python       string       `json:"python"`
	Executable   string       `json:"executable"`
	Torch        string       `json:"torch"`
	CUDA         bool         `json:"cuda"`
	Devices      []DeviceInfo `json:"devices"`
	Transformers string       `json:"transformers,omitempty"`
	Torchvision  string       `json:"torchvision,omitempty"`
}

// CaptureRank is one process's capture.json (schema memscope-capture/v1).
type CaptureRank struct {
	Schema    string `json:"schema"`
	Rank      int    `json:"rank"`
	World     int    `json:"world"`
	LocalRank int    `json:"local_rank"`
	// Coords are the rank's node, local rank and the parallel coordinates
	// the job stated (MEMSCOPE_COORDS="dp=3,tp=1,pp=0"); nil from a
	// harness before they were written.
	Coords       map[string]int    `json:"coords"`
	Device       int               `json:"device"`
	DeviceName   string            `json:"device_name"`
	DeviceTotal  int64             `json:"device_total"`
	Torch        string            `json:"torch"`
	Script       []string          `json:"script"`
	ExitCode     int               `json:"exit_code"`
	Exception    *Exception        `json:"exception"`
	WallS        float64           `json:"wall_s"`
	Steps        int               `json:"steps"` // steps that had a phase
	MeasureSteps []int             `json:"measure_steps"`
	ProfileSteps []int             `json:"profile_steps"`
	Phases       []PhaseRow        `json:"phases"`
	Peak         Numbers           `json:"peak"`            // over the whole run
	DeviceUsed   int64             `json:"device_used_max"` // the driver's view, max sampled
	OOM          []OOMEvent        `json:"oom"`
	Files        map[string]string `json:"files"`
	// MemoryStatsEnd is torch.cuda.memory_stats() at the process's exit
	// (num_alloc_retries, num_ooms, …).
	MemoryStatsEnd map[string]float64 `json:"memory_stats_end"`
}

// Exception is how a script ended when it raised.
type Exception struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	OOM     bool   `json:"oom"`
}

// PhaseRow is one measured interval of a capture: a phase, or "other"
// (between phases), with torch's peaks inside it.
type PhaseRow struct {
	Step          int    `json:"step"`
	Phase         string `json:"phase"`
	PeakAllocated int64  `json:"peak_allocated"`
	PeakRequested int64  `json:"peak_requested"`
	PeakReserved  int64  `json:"peak_reserved"`
	PeakActive    int64  `json:"peak_active"`
	AllocatedEnd  int64  `json:"allocated_end"`
	DeviceUsed    int64  `json:"device_used"`
}

// OOMEvent is one call of the allocator's OOM observer.
type OOMEvent struct {
	Device      int    `json:"device"`
	Request     int64  `json:"request"`
	DeviceLimit int64  `json:"device_limit"` // the device total, or the cap of a memory fraction
	DeviceFree  int64  `json:"device_free"`
	Step        int    `json:"step"`
	Phase       string `json:"phase"`
	Allocated   int64  `json:"allocated"`
	Reserved    int64  `json:"reserved"`
}

// RunDir is a capture run directory as read: run.json and each process's
// capture.json, and the names of the files they left.
type RunDir struct {
	Dir   string
	Run   *Run           // nil when run.json is missing (the harness was run by hand)
	Ranks []*CaptureRank // by rank
	// Missing ranks wrote no capture.json (killed, or never started).
	Missing []int
	// Files lists the run directory's snapshot, trace and steps files.
	Files    []string
	Warnings []RunWarning
}

// RunWarningKind says what a run directory lacks.
type RunWarningKind int

const (
	// NoRunJSON: the directory has capture.json files but no run.json
	// (the harness was run without memscope capture).
	NoRunJSON RunWarningKind = iota + 1
	// MissingRanks: some processes wrote no capture.json (killed, or
	// never started); RunWarning.Ranks lists them, of RunWarning.World.
	MissingRanks
)

// RunWarning is a non-fatal problem of a run directory: what it lacks.
// package report words it.
type RunWarning struct {
	Kind  RunWarningKind
	Ranks []int // MissingRanks: the ranks that wrote no capture.json
	World int   // MissingRanks: the processes the run had
}

// Kind of a run directory.
const (
	KindCapture = "capture"
	KindSweep   = "sweep"
)

// DirKind says whether dir holds a sweep (results.json) or a capture
// (run.json or capture*.json), or returns an error saying it holds neither.
func DirKind(dir string) (string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory: --run takes a run directory", dir)
	}
	if exists(filepath.Join(dir, "results.json")) {
		return KindSweep, nil
	}
	if exists(filepath.Join(dir, "run.json")) {
		return KindCapture, nil
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "capture*.json")); len(m) > 0 {
		return KindCapture, nil
	}
	return "", fmt.Errorf("%s holds no results.json, run.json or capture.json: not a memscope run directory", dir)
}

// ReadRun reads a capture run directory.
func ReadRun(dir string) (*RunDir, error) {
	a := &RunDir{Dir: dir}
	var run Run
	switch err := readJSON(filepath.Join(dir, "run.json"), RunSchema, &run); {
	case err == nil:
		a.Run = &run
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	if a.Run != nil && (a.Run.Nproc < 0 || a.Run.Nproc > MaxRanks) {
		return nil, fmt.Errorf("%s: nproc %d is out of range (want 0 to %d)", filepath.Join(dir, "run.json"), a.Run.Nproc, MaxRanks)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	world := 0
	for _, e := range entries {
		name := e.Name()
		if _, ok := ParseRankFile(name, "capture", ".json"); ok {
			var c CaptureRank
			if err := readJSON(filepath.Join(dir, name), CaptureSchema, &c); err != nil {
				return nil, err
			}
			if c.World < 0 || c.World > MaxRanks || c.Rank < 0 || c.Rank >= max(c.World, MaxRanks) {
				return nil, fmt.Errorf("%s: rank %d of world %d is out of range (want a world of 0 to %d and a rank below it)",
					filepath.Join(dir, name), c.Rank, c.World, MaxRanks)
			}
			a.Ranks = append(a.Ranks, &c)
			world = max(world, c.World)
			continue
		}
		for _, kind := range []struct{ base, ext string }{
			{"snapshot", ".pickle"}, {"snapshot.oom", ".pickle"}, {"trace", ".json.gz"}, {"steps", ".jsonl"},
		} {
			if _, ok := ParseRankFile(name, kind.base, kind.ext); ok {
				a.Files = append(a.Files, name)
			}
		}
	}
	sort.Slice(a.Ranks, func(i, j int) bool { return a.Ranks[i].Rank < a.Ranks[j].Rank })
	if a.Run == nil && len(a.Ranks) == 0 {
		return nil, fmt.Errorf("%s holds no run.json or capture.json: not a capture run directory", dir)
	}
	if a.Run == nil {
		a.Warnings = append(a.Warnings, RunWarning{Kind: NoRunJSON})
	}
	if a.Run != nil && a.Run.Nproc > 1 {
		world = max(world, a.Run.Nproc) // at least; several nodes make it larger
	}
	have := map[int]bool{}
	for _, r := range a.Ranks {
		have[r.Rank] = true
	}
	for r := range max(world, 1) {
		if !have[r] {
			a.Missing = append(a.Missing, r)
		}
	}
	if len(a.Missing) > 0 {
		a.Warnings = append(a.Warnings, RunWarning{Kind: MissingRanks, Ranks: a.Missing, World: max(world, 1)})
	}
	return a, nil
}

// MaxRanks bounds the processes of one run (nproc, world sizes, rank
// indexes): beyond the largest training jobs, and small enough that the
// ranks a directory lacks can be listed. A run.json that claims more is
// refused before anything is allocated for it.
const MaxRanks = 1 << 17

// DeviceUsedFor returns, for the snapshot at path when it sits in a
// capture run directory, its rank's device and the highest device used
// (the driver's view) the run sampled for it; ok is false outside a run
// or when nothing was sampled.
func DeviceUsedFor(path string) (device int, used int64, ok bool) {
	run, err := ReadRun(filepath.Dir(path))
	if err != nil {
		return 0, 0, false
	}
	for _, r := range run.Ranks {
		if filepath.Base(r.Files["snapshot"]) == filepath.Base(path) && r.DeviceUsed > 0 {
			return r.Device, r.DeviceUsed, true
		}
	}
	return 0, 0, false
}
