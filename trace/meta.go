package trace

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Meta is the trace's top-level metadata.
type Meta struct {
	SchemaVersion int
	// BaseTimeNS is baseTimeNanoseconds (Kineto, torch ≥ 2.4): ts values are
	// relative to it. HasBaseTime is false for older traces, whose ts are
	// absolute epoch microseconds.
	BaseTimeNS      int64
	HasBaseTime     bool
	DisplayTimeUnit string
	TraceName       string
	Devices         []DeviceProperties
	Distributed     *DistributedInfo
	// Other holds the remaining scalar top-level keys (trace_id,
	// profile_memory, with_stack, cuda_runtime_version, …) as raw JSON text.
	Other map[string]string
}

// ProfileMemory reports whether the trace says it was recorded with
// profile_memory=True (absent in older traces).
func (m *Meta) ProfileMemory() (set, known bool) {
	v, ok := m.Other["profile_memory"]
	if !ok {
		return false, false
	}
	return v == "1" || v == "true", true
}

// DeviceProperties is one entry of deviceProperties.
type DeviceProperties struct {
	ID                          int    `json:"id"`
	Name                        string `json:"name"`
	TotalGlobalMem              int64  `json:"totalGlobalMem"`
	ComputeMajor                int    `json:"computeMajor"`
	ComputeMinor                int    `json:"computeMinor"`
	MaxThreadsPerBlock          int    `json:"maxThreadsPerBlock"`
	MaxThreadsPerMultiprocessor int    `json:"maxThreadsPerMultiprocessor"`
	RegsPerBlock                int    `json:"regsPerBlock"`
	WarpSize                    int    `json:"warpSize"`
	SharedMemPerBlock           int64  `json:"sharedMemPerBlock"`
	NumSMs                      int    `json:"numSms"`
	RegsPerMultiprocessor       int    `json:"regsPerMultiprocessor"`
	SharedMemPerBlockOptin      int64  `json:"sharedMemPerBlockOptin"`
	SharedMemPerMultiprocessor  int64  `json:"sharedMemPerMultiprocessor"`
}

// DistributedInfo is the distributedInfo key written when torch.distributed
// was initialized.
type DistributedInfo struct {
	Backend   string         `json:"backend"`
	Rank      int            `json:"rank"`
	WorldSize int            `json:"world_size"`
	PGCount   int            `json:"pg_count"`
	PGConfig  jsontext.Value `json:"pg_config"`
	// NCCLVersion is kept as raw JSON text: a string in current releases.
	NCCLVersion jsontext.Value `json:"nccl_version"`
}

// maxMetaValue bounds the raw text kept for one top-level key; larger values
// are skipped so that metadata cannot grow memory with the file.
const maxMetaValue = 1 << 20

// readMeta reads the value of one top-level key other than traceEvents.
func (d *decoder) readMeta(key string) error {
	switch key {
	case "baseTimeNanoseconds":
		v, err := d.dec.ReadValue()
		if err != nil {
			return err
		}
		n, ok := parseInt(v)
		if !ok {
			d.warn(fmt.Sprintf("baseTimeNanoseconds is %.40s, not an integer; times left relative", v))
			return nil
		}
		d.t.Meta.BaseTimeNS, d.t.Meta.HasBaseTime = n, true
		return nil
	case "deviceProperties", "distributedInfo":
		if d.dec.PeekKind() == '[' || d.dec.PeekKind() == '{' {
			v, err := d.dec.ReadValue()
			if err != nil {
				return err
			}
			if len(v) > maxMetaValue {
				d.warn(key + " larger than 1 MiB; ignored")
				return nil
			}
			d.decodeMetaValue(key, v)
			return nil
		}
	}
	switch d.dec.PeekKind() {
	case '{', '[':
		return d.dec.SkipValue()
	}
	v, err := d.dec.ReadValue()
	if err != nil {
		return err
	}
	switch key {
	case "schemaVersion":
		n, _ := parseInt(v)
		d.t.Meta.SchemaVersion = int(n)
	case "displayTimeUnit", "traceName":
		s := unquote(string(v))
		if key == "traceName" {
			d.t.Meta.TraceName = s
		} else {
			d.t.Meta.DisplayTimeUnit = s
		}
	default:
		if len(v) <= 4096 && len(d.t.Meta.Other) < 1024 {
			if d.t.Meta.Other == nil {
				d.t.Meta.Other = map[string]string{}
			}
			d.t.Meta.Other[key] = string(v)
		}
	}
	return nil
}

func (d *decoder) decodeMetaValue(key string, v jsontext.Value) {
	var err error
	switch key {
	case "deviceProperties":
		var props []DeviceProperties
		if err = json.Unmarshal(v, &props); err == nil {
			d.t.Meta.Devices = props
		}
	case "distributedInfo":
		var info DistributedInfo
		if err = json.Unmarshal(v, &info); err == nil {
			info.PGConfig = info.PGConfig.Clone()
			info.NCCLVersion = info.NCCLVersion.Clone()
			d.t.Meta.Distributed = &info
		}
	}
	if err != nil {
		d.warn(fmt.Sprintf("%s not understood: %v", key, oneLine(err)))
	}
}
