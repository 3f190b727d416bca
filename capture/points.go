package capture

import (
	"fmt"
	"os"
	"path/filepath"
)

// pointDoc is the harness's point.json (schema memscope-point/v1), the
// fields memscope reads.
type pointDoc struct {
	Schema          string             `json:"schema"`
	Rank            int                `json:"rank"`
	World           int                `json:"world"`
	Torch           string             `json:"torch"`
	DeviceName      string             `json:"device_name"`
	DeviceTotal     int64              `json:"device_total"`
	MemoryLimit     int64              `json:"memory_limit"`
	Steps           int                `json:"steps"`
	Parameters      int64              `json:"parameters"`
	ParamBytes      int64              `json:"param_bytes"`
	WorkloadFacts   map[string]any     `json:"workload_facts"`
	Phases          map[string]Numbers `json:"phases"`
	Peak            Numbers            `json:"peak"`
	DeviceUsed      int64              `json:"device_used"`
	StepTimeMS      *float64           `json:"step_time_ms"`
	Fits            bool               `json:"fits"`
	OOM             *pointOOM          `json:"oom"`
	OOMObserver     []oomEvent         `json:"oom_observer"`
	NumAllocRetries int64              `json:"num_alloc_retries"`
	Files           map[string]string  `json:"files"`
}

type pointOOM struct {
	Message string `json:"message"`
	Step    *int   `json:"step"`
	Phase   string `json:"phase"`
}

type oomEvent struct {
	Device      int   `json:"device"`
	Request     int64 `json:"request"`
	DeviceLimit int64 `json:"device_limit"`
	DeviceFree  int64 `json:"device_free"`
	Allocated   int64 `json:"allocated"`
	Reserved    int64 `json:"reserved"`
}

// readPoint reads the point.json files of one point's folder (one per rank
// when nproc > 1) into p, which holds the point's identity and exit status.
// A rank that wrote nothing is recorded as missing; the point fits only when
// every rank fits, and ran out of memory when any rank did. It returns the
// first rank's document for the sweep's facts (nil when none was written).
func readPoint(runDir string, p *Point, nproc int) *pointDoc {
	dir := filepath.Join(runDir, "points", p.ID)
	world := max(nproc, 1)
	var first *pointDoc
	p.Fits = true
	p.Phases = map[string]Numbers{}
	for rank := range world {
		path := filepath.Join(dir, RankFile("point", ".json", rank, world))
		var d pointDoc
		if err := readJSON(path, PointSchema, &d); err != nil {
			p.Fits = false
			if world > 1 {
				p.Ranks = append(p.Ranks, RankPeak{Rank: rank, Missing: true})
			}
			if !os.IsNotExist(err) {
				p.Error = firstNonEmpty(p.Error, err.Error())
			}
			continue
		}
		if first == nil {
			first = &d
			p.Steps = d.Steps
		}
		p.Fits = p.Fits && d.Fits
		if d.OOM != nil && !p.OOM {
			p.OOM = true
			p.OOMInfo = &OOMInfo{Message: d.OOM.Message, Step: d.OOM.Step, Phase: d.OOM.Phase, Rank: rank}
			if n := len(d.OOMObserver); n > 0 {
				p.OOMInfo.Request = d.OOMObserver[n-1].Request
			}
		}
		for name, n := range d.Phases {
			p.Phases[name] = maxNumbers(p.Phases[name], n)
		}
		p.Peak = maxNumbers(p.Peak, d.Peak)
		p.DeviceUsed = max(p.DeviceUsed, d.DeviceUsed)
		if d.StepTimeMS != nil && (p.StepTimeMS == nil || *d.StepTimeMS > *p.StepTimeMS) {
			p.StepTimeMS = d.StepTimeMS
		}
		p.NumAllocRetries = max(p.NumAllocRetries, d.NumAllocRetries)
		for k, f := range d.Files {
			if p.Files == nil {
				p.Files = map[string]string{}
			}
			if rank == 0 || world == 1 {
				p.Files[k] = filepath.ToSlash(filepath.Join("points", p.ID, f))
			}
		}
		if world > 1 {
			p.Ranks = append(p.Ranks, RankPeak{Rank: rank, Peak: d.Peak, DeviceUsed: d.DeviceUsed,
				Fits: d.Fits, OOM: d.OOM != nil})
		}
	}
	if p.OOM {
		p.Fits = false
		p.Error = "" // the ranks that did not report were stopped by torchrun after the OOM
	}
	if !p.Fits && !p.OOM && p.Error == "" {
		p.Error = fmt.Sprintf("exited with status %d without a result (see points/%s/log.txt)", p.ExitCode, p.ID)
	}
	return first
}

func maxNumbers(a, b Numbers) Numbers {
	return Numbers{max(a.Allocated, b.Allocated), max(a.Requested, b.Requested),
		max(a.Reserved, b.Reserved), max(a.Active, b.Active)}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
