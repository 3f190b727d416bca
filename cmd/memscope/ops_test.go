package main

import (
	"cmp"
	"compress/gzip"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report"
)

// cpuTrace is a public CPU-only trace: resnet18 inference on the CPU with
// profile_memory=True and no with_stack (trace/testdata/README.md).
const cpuTrace = "../../trace/testdata/resnet18-cpu.json.gz"

// rawTraceEvent is the part of a Chrome-trace event these tests read
// themselves, with encoding/json, to derive what ops must show.
type rawTraceEvent struct {
	Ph   string          `json:"ph"`
	Cat  string          `json:"cat"`
	Name string          `json:"name"`
	PID  json.RawMessage `json:"pid"`
	TID  json.RawMessage `json:"tid"`
	TS   float64         `json:"ts"`
	Dur  float64         `json:"dur"`
	Args struct {
		DeviceType     *int  `json:"Device Type"`
		Bytes          int64 `json:"Bytes"`
		TotalAllocated int64 `json:"Total Allocated"`
	} `json:"args"`
}

// readRawTrace decodes a gzipped trace's events.
func readRawTrace(t *testing.T, path string) []rawTraceEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []rawTraceEvent `json:"traceEvents"`
	}
	if err := json.NewDecoder(zr).Decode(&doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc.TraceEvents
}

// opsTables runs ops with args and returns the tables of its JSON document.
func opsTables(t *testing.T, args ...string) []report.OpsJSON {
	t.Helper()
	r := runMemscope(append([]string{"ops", "--json"}, args...)...)
	if r.err != nil {
		t.Fatalf("ops --json %v: %v", args, r.err)
	}
	var doc struct {
		Kind  string `json:"kind"`
		Files []struct {
			Table *report.OpsJSON `json:"table"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	var out []report.OpsJSON
	for _, f := range doc.Files {
		if f.Table == nil {
			t.Fatalf("ops --json %v: a file entry without a table", args)
		}
		out = append(out, *f.Table)
	}
	return out
}

// TestOpsCPUOnlyTrace: a trace whose [memory] events are all CPU memory
// (Device Type 0) is valid input: ops shows its CPU table without --cpu and
// says the trace holds CPU memory only. Every figure checked is derived
// here from the file's own events: the count of memory events, the highest
// Total Allocated, and per operator the bytes of the events whose innermost
// enclosing cpu_op on the same thread it is (allocated, and net of frees),
// the events in no op making the "(none)" row.
func TestOpsCPUOnlyTrace(t *testing.T) {
	events := readRawTrace(t, cpuTrace)
	var ops, mems []rawTraceEvent
	for _, e := range events {
		switch {
		case e.Ph == "X" && e.Cat == "cpu_op":
			ops = append(ops, e)
		case e.Name == "[memory]":
			if e.Args.DeviceType == nil || *e.Args.DeviceType != 0 {
				t.Fatalf("%s: a [memory] event not of Device Type 0: the file is not CPU-only", cpuTrace)
			}
			mems = append(mems, e)
		}
	}
	var peak int64
	alloc, net := map[string]int64{}, map[string]int64{}
	for _, m := range mems {
		peak = max(peak, m.Args.TotalAllocated)
		name := "(none)"
		var in *rawTraceEvent
		for i := range ops {
			o := &ops[i]
			if string(o.PID) != string(m.PID) || string(o.TID) != string(m.TID) || m.TS < o.TS || m.TS > o.TS+o.Dur {
				continue
			}
			if in == nil || o.TS > in.TS || o.TS == in.TS && o.Dur < in.Dur {
				in = o
			}
		}
		if in != nil {
			name = in.Name
		}
		net[name] += m.Args.Bytes
		alloc[name] += max(m.Args.Bytes, 0)
	}
	if len(mems) == 0 || len(ops) == 0 || alloc["aten::mkldnn_convolution"] == 0 {
		t.Fatalf("%s: %d memory events, %d ops; want both, and convolutions that allocate", cpuTrace, len(mems), len(ops))
	}

	r := runMemscope("ops", cpuTrace)
	if r.err != nil || r.code != 0 {
		t.Fatalf("ops on a CPU-only trace: exit %d, %v; want 0 and its table", r.code, r.err)
	}
	for _, want := range []string{cpuTrace + ", cpu: ", "CPU memory only", "peak allocated " + units.Bytes(peak) + " (Total Allocated)",
		"aten::mkldnn_convolution", "aten::max_pool2d_with_indices"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("ops text lacks %q:\n%s", want, r.stdout)
		}
	}

	tables := opsTables(t, "--top", "-1", cpuTrace)
	if len(tables) != 1 {
		t.Fatalf("ops --json: %d tables, want 1 (cpu)", len(tables))
	}
	tb := tables[0]
	if tb.Device != "cpu" || !tb.CPUOnly || tb.Events != len(mems) || tb.PeakBytes != peak || tb.AllocatedFrom != "total_allocated" {
		t.Errorf("ops --json: device %s, cpu_only %v, %d events, peak %d, from %s; want cpu, true, %d, %d, total_allocated",
			tb.Device, tb.CPUOnly, tb.Events, tb.PeakBytes, tb.AllocatedFrom, len(mems), peak)
	}
	rows := map[string]report.OpRowJSON{}
	for _, row := range tb.Rows {
		rows[row.Name] = row
	}
	for name, a := range alloc {
		if got := rows[name]; got.SelfAlloc != a || got.SelfNet != net[name] {
			t.Errorf("ops --json: %s self alloc %d, self net %d; want %d, %d (from the file's events)", name, got.SelfAlloc, got.SelfNet, a, net[name])
		}
	}

	// --cpu changes nothing; --device names a GPU the trace does not have.
	if with := opsTables(t, "--top", "-1", "--cpu", cpuTrace); len(with) != 1 || len(with[0].Rows) != len(tb.Rows) {
		t.Errorf("ops --cpu: %d tables, want the same one", len(with))
	}
	if r := runMemscope("ops", "--device", "0", cpuTrace); r.code != 2 || r.err == nil || !strings.Contains(r.err.Error(), "none on a GPU") {
		t.Errorf("ops --device 0 on a CPU-only trace: exit %d, %v; want 2, none on a GPU", r.code, r.err)
	}
}

// TestOpsByModuleWithoutModules: --by module on a trace with no module
// information (no python_function events: recorded without with_stack)
// says so and how to record one, instead of an empty table; on a trace
// recorded with_stack=True module_calls counts its nn.Module calls.
func TestOpsByModuleWithoutModules(t *testing.T) {
	for _, e := range readRawTrace(t, cpuTrace) {
		if e.Cat == "python_function" {
			t.Fatalf("%s has python_function events; the test needs a trace without", cpuTrace)
		}
	}
	r := runMemscope("ops", "--by", "module", cpuTrace)
	if r.err != nil || r.code != 0 {
		t.Fatalf("ops --by module: exit %d, %v", r.code, r.err)
	}
	for _, want := range []string{"no module information", "torch.profiler.profile(..., profile_memory=True, with_stack=True)", "--by op"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("ops --by module without modules lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "self alloc") {
		t.Errorf("ops --by module without modules prints a table:\n%s", r.stdout)
	}
	tables := opsTables(t, "--by", "module", cpuTrace)
	if len(tables) != 1 || tables[0].ModuleCalls == nil || *tables[0].ModuleCalls != 0 || len(tables[0].Rows) != 0 {
		t.Errorf("ops --by module --json: %+v; want one table, module_calls 0, no rows", tables)
	}

	const profiled = "../../fixtures/llama-profiled/trace.json.gz"
	calls := 0
	for _, e := range readRawTrace(t, profiled) {
		if e.Cat == "python_function" && strings.HasPrefix(e.Name, "nn.Module: ") {
			calls++
		}
	}
	tables = opsTables(t, "--by", "module", profiled)
	if len(tables) != 1 || tables[0].ModuleCalls == nil || *tables[0].ModuleCalls != calls || calls == 0 || len(tables[0].Rows) == 0 {
		t.Errorf("ops --by module --json on %s: %d tables; want one with module_calls %d and rows", profiled, len(tables), calls)
	}
	if r := runMemscope("ops", "--by", "module", profiled); strings.Contains(r.stdout, "no module information") {
		t.Errorf("ops --by module on a trace with modules says it has none:\n%s", r.stdout)
	}
}

// TestOpsNegativeNetMatchesKeyAverages: operators whose net is a free
// (backward nodes freeing saved activations, zero_grad freeing gradients:
// key_averages() shows negative self memory) are in the default table with
// their negative self and total net, as torch's key_averages() wrote them
// into truth.json. memscope/step/N/backward is left out: key_averages sums
// memory events by time on every thread, so that range on the main thread
// takes the autograd thread's frees, which memscope charges to the
// autograd thread's ops.
func TestOpsNegativeNetMatchesKeyAverages(t *testing.T) {
	const tr = "../../fixtures/llama-profiled/trace.json.gz"
	truth := readFixtureTruth(t, "llama-profiled")
	byTime := regexp.MustCompile(`^memscope/step/\d+/backward$`)
	type want struct {
		name        string
		self, total int64
		count       int
	}
	var frees []want
	seen := map[string]bool{}
	for _, k := range truth.KeyAverages {
		// A name torch lists twice (a gpu_user_annotation row, zero) is
		// the CPU row first.
		if seen[k.Name] {
			continue
		}
		seen[k.Name] = true
		if k.SelfDeviceMemoryUsage < 0 && !byTime.MatchString(k.Name) {
			frees = append(frees, want{k.Name, k.SelfDeviceMemoryUsage, k.DeviceMemoryUsage, k.Count})
		}
	}
	if len(frees) < 10 {
		t.Fatalf("truth.json has %d key_averages rows with negative self memory, want at least 10", len(frees))
	}

	rows := map[string]report.OpRowJSON{}
	for _, row := range opsTables(t, "--top", "-1", "--no-backward-labels", tr)[0].Rows {
		rows[row.Name] = row
	}
	for _, w := range frees {
		got, ok := rows[w.name]
		if !ok {
			t.Errorf("ops --json has no row %q", w.name)
			continue
		}
		if got.SelfNet != w.self || got.TotalNet != w.total || got.Calls != w.count {
			t.Errorf("ops --json %q: self net %d, total net %d, calls %d; want key_averages' %d, %d, %d",
				w.name, got.SelfNet, got.TotalNet, got.Calls, w.self, w.total, w.count)
		}
	}

	// The default table (30 rows, backward labels on) holds the five
	// largest frees, with their net figures in the text.
	def := opsTables(t, tr)[0].Rows
	freed := func(r report.OpRowJSON) int64 { return max(r.SelfAlloc, r.SelfAlloc-r.SelfNet) }
	for i := 1; i < len(def); i++ {
		if freed(def[i]) > freed(def[i-1]) {
			t.Errorf("default order: %s (%d bytes moved) after %s (%d)", def[i].Name, freed(def[i]), def[i-1].Name, freed(def[i-1]))
		}
	}
	slices.SortFunc(frees, func(a, b want) int { return cmp.Compare(a.self, b.self) }) // the largest free first
	text := runMemscope("ops", tr).stdout
	for _, w := range frees[:5] {
		found := false
		for _, r := range def {
			found = found || r.Name == w.name
		}
		if !found {
			t.Errorf("default ops --json lacks %q (self net %d)", w.name, w.self)
		}
		line := regexp.MustCompile(`(?m)^.*\s` + regexp.QuoteMeta(units.Bytes(w.self)) + `\s+` + regexp.QuoteMeta(units.Bytes(w.total)) +
			`\s.*\s` + regexp.QuoteMeta(w.name) + `$`)
		if !line.MatchString(text) {
			t.Errorf("default ops text has no row %q with self net %s and total net %s:\n%s", w.name, units.Bytes(w.self), units.Bytes(w.total), text)
		}
	}
}
