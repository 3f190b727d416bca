package trace

import (
	"bytes"
	"compress/gzip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memscope/memscope/internal/truth"
)

// TestDecodeForms decodes the synthetic trace in every shape torch writes
// and checks that they give the same memory events at the same absolute
// times.
func TestDecodeForms(t *testing.T) {
	ref, err := Decode(strings.NewReader(synthTrace("object")), "object.json")
	if err != nil {
		t.Fatalf("Decode(object) error: %v", err)
	}
	gz := func(s string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.String()
	}
	floats := strings.NewReplacer(`"Bytes": 4096,`, `"Bytes": 4096.0,`, `"Bytes": -512,`, `"Bytes": -5.12e2,`).Replace(synthTrace("object"))
	tests := []struct {
		name, input string
		base        bool
	}{
		{"object", synthTrace("object"), true},
		{"base-after-events", synthTrace("base-last"), true},
		{"legacy-array-absolute-ts", synthTrace("array"), false},
		{"gzip", gz(synthTrace("object")), true},
		{"float-bytes", floats, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Decode(strings.NewReader(tc.input), tc.name)
			if err != nil {
				t.Fatalf("Decode() error: %v", err)
			}
			if len(tr.Warnings) != 0 {
				t.Errorf("Decode().Warnings = %v, want none", tr.Warnings)
			}
			if tr.Meta.HasBaseTime != tc.base {
				t.Errorf("Meta.HasBaseTime = %v, want %v", tr.Meta.HasBaseTime, tc.base)
			}
			if !slices.Equal(tr.Memory, ref.Memory) {
				t.Errorf("Memory = %+v, want %+v", tr.Memory, ref.Memory)
			}
			if len(tr.Ops) != 7 || len(tr.PyFuncs) != 3 || len(tr.Flows) != 1 {
				t.Errorf("len(Ops, PyFuncs, Flows) = %d, %d, %d, want 7, 3, 1", len(tr.Ops), len(tr.PyFuncs), len(tr.Flows))
			}
		})
	}
}

// TestDecodeSynthFields checks the kept fields of the synthetic trace.
func TestDecodeSynthFields(t *testing.T) {
	tr, err := Decode(strings.NewReader(synthTrace("base-last")), "synth.json")
	if err != nil {
		t.Fatal(err)
	}
	first := tr.Memory[0] // A1 and C share t=130; file order keeps A1 first
	if want := int64(synthBase + 130_000); first.Time != want {
		t.Errorf("Memory[0].Time = %d, want %d (base + ts)", first.Time, want)
	}
	if got, want := first.TimeUS(), float64(synthBase/1000+130); got != want {
		t.Errorf("Memory[0].TimeUS() = %f, want %f", got, want)
	}
	if first.Bytes != 1024 || first.Addr != 4096 || first.Device() != (Device{1, 0}) || first.TotalAllocated != 1024 {
		t.Errorf("Memory[0] = %+v, want 1024 bytes at 4096 on cuda:0, total 1024", first)
	}
	if got := tr.Memory[1].Device().String(); got != "cpu" {
		t.Errorf("Memory[1].Device() = %s, want cpu", got)
	}
	threads := map[string]bool{}
	for _, th := range tr.Threads {
		threads[th.String()] = true
	}
	for _, want := range []string{"1/1", "1/autograd"} {
		if !threads[want] {
			t.Errorf("Threads = %v, want %s among them", tr.Threads, want)
		}
	}
	if len(tr.Meta.Devices) != 1 || tr.Meta.Devices[0].Name != "NVIDIA H200" || tr.Meta.Devices[0].NumSMs != 132 {
		t.Errorf("Meta.Devices = %+v, want one NVIDIA H200 with 132 SMs", tr.Meta.Devices)
	}
	if set, known := tr.Meta.ProfileMemory(); !set || !known {
		t.Errorf("Meta.ProfileMemory() = %v, %v, want true, true", set, known)
	}
	if tr.Meta.TraceName != "t.json" || tr.Meta.SchemaVersion != 1 {
		t.Errorf("Meta = %+v, want traceName t.json, schemaVersion 1", tr.Meta)
	}
	if tr.Counts.Kernels[0] != 1 || tr.Counts.ByCat["kernel"] != 1 || tr.Counts.Events != 21 {
		t.Errorf("Counts = %+v, want 1 kernel on device 0 of 21 events", tr.Counts)
	}
}

// TestFixtureMeta checks the fixture's metadata against the device torch
// reported in truth.json.
func TestFixtureMeta(t *testing.T) {
	tr, want := loadFixture(t)
	if len(tr.Meta.Devices) == 0 {
		t.Fatalf("Meta.Devices is empty, want the H200")
	}
	if d := tr.Meta.Devices[0]; d.Name != want.DeviceName || d.TotalGlobalMem != want.DeviceTotal {
		t.Errorf("Meta.Devices[0] = %s %d, want %s %d", d.Name, d.TotalGlobalMem, want.DeviceName, want.DeviceTotal)
	}
	if !tr.Meta.HasBaseTime || tr.Meta.Distributed != nil {
		t.Errorf("Meta = base %v distributed %v, want a base time and no distributedInfo", tr.Meta.HasBaseTime, tr.Meta.Distributed)
	}
	if len(tr.Warnings) != 0 {
		t.Errorf("Warnings = %v, want none", tr.Warnings)
	}
}

// TestDistributedInfo reads the distributedInfo key of a multi-rank trace.
func TestDistributedInfo(t *testing.T) {
	in := strings.Replace(synthTrace("object"), `"schemaVersion": 1,`,
		`"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8, "pg_count": 2, "pg_config": [{"pg_name": "0"}], "nccl_version": "2.21.5"},`, 1)
	tr, err := Decode(strings.NewReader(in), "rank3.json")
	if err != nil {
		t.Fatal(err)
	}
	d := tr.Meta.Distributed
	if d == nil || d.Backend != "nccl" || d.Rank != 3 || d.WorldSize != 8 || string(d.NCCLVersion) != `"2.21.5"` {
		t.Errorf("Meta.Distributed = %+v, want nccl rank 3 of 8, NCCL 2.21.5", d)
	}
}

// fixtureDir is the llama-profiled capture: a trace, memory timelines and
// torch's own figures (truth.json) from one H200 run.
var fixtureDir = filepath.Join("..", "fixtures", "llama-profiled")

var (
	fixtureOnce  sync.Once
	fixtureTrace *Trace
	fixtureErr   error
	fixtureTruth *truth.File
)

// loadFixture decodes the fixture trace and reads its truth.json once per
// test binary.
func loadFixture(t testing.TB) (*Trace, *truth.File) {
	t.Helper()
	fixtureOnce.Do(func() {
		fixtureTrace, fixtureErr = Open(filepath.Join(fixtureDir, "trace.json.gz"))
		if fixtureErr != nil {
			return
		}
		fixtureTruth, fixtureErr = truth.Read(filepath.Join(fixtureDir, "truth.json"))
	})
	if fixtureErr != nil {
		t.Fatalf("loading fixture: %v", fixtureErr)
	}
	return fixtureTrace, fixtureTruth
}

// TestFixtureCheckValid: the decoded fixture satisfies the model invariants.
func TestFixtureCheckValid(t *testing.T) {
	tr, _ := loadFixture(t)
	if err := tr.CheckValid(); err != nil {
		t.Fatalf("CheckValid() = %v", err)
	}
}
