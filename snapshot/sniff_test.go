package snapshot

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"
)

func TestProfilerFile(t *testing.T) {
	for _, tc := range []struct {
		name, head string
		want       int
	}{
		{"kineto", "\n{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [", chromeTrace},
		{"traceEvents first", `{"traceEvents": [{"ph": "X"}]}`, chromeTrace},
		{"metadata first", `{"trace_id": "x", "with_stack": 1, "traceEvents": [`, chromeTrace},
		{"legacy array", ` [{"name": "aten::mm", "ph": "X", "ts": 1, "args": {"a": 1}}]`, chromeTrace},
		{"timeline", `[[1795973421518214, 1795973421518300], [[0, 1, 2`, memoryTimeline},
		{"raw timeline", `[[-1, 1, 4194304, 0], [`, memoryTimeline},
		{"json snapshot", `{"segments": [{"device": 0, "blocks": []}], "device_traces": [[]]}`, notProfiler},
		{"bare segments", `[{"device": 0, "address": 1, "blocks": [{"state": "inactive", "ph": 1}]}]`, notProfiler},
		{"segments mention traceEvents", `{"segments": [], "x": "traceEvents"}`, notProfiler},
		{"empty array", `[]`, notProfiler},
		{"frame named ph", `[{"device": 0, "frames": [{"name": "\"ph\""}], "blocks": []}]`, notProfiler},
	} {
		if got := profilerFile([]byte(tc.head)); got != tc.want {
			t.Errorf("profilerFile(%s) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestDecodeProfilerFiles: a trace or memory timeline, gzipped or not, is
// refused from its first bytes with the command to use instead; the rest
// of the file is never read.
func TestDecodeProfilerFiles(t *testing.T) {
	gz := func(s string) []byte {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write([]byte(s))
		w.Close()
		return z.Bytes()
	}
	traceHead := "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\"},\n"
	failing := errors.New("read past the first bytes")
	for _, tc := range []struct {
		name string
		r    io.Reader
		want string
	}{
		{"trace.json", io.MultiReader(strings.NewReader(traceHead), iotest.ErrReader(failing)), "a torch.profiler trace (Chrome trace), not a memory snapshot: for its per-operator memory run 'memscope ops trace.json', or give it beside this run's snapshot with --trace trace.json"},
		{"trace.json.gz", bytes.NewReader(gz(traceHead + strings.Repeat(`{"ph": "i", "name": "[memory]"},`, 1e5))), "a torch.profiler trace"},
		{"mt.json", io.MultiReader(strings.NewReader(`[[1, 2], [[0,`), iotest.ErrReader(failing)), "an export_memory_timeline file, not a memory snapshot: for its bytes by category run 'memscope ops mt.json'"},
	} {
		s, err := Decode(tc.r, tc.name)
		if err == nil || s != nil {
			t.Fatalf("Decode(%s) = %v, %v; want an error", tc.name, s, err)
		}
		msg := err.Error()
		if !errLine.MatchString(msg) || !strings.HasPrefix(msg, "decoding "+tc.name+" at byte 0: ") || !strings.Contains(msg, tc.want) {
			t.Errorf("Decode(%s) error = %q, want one line at byte 0 saying %q", tc.name, msg, tc.want)
		}
	}
	// The real fixtures.
	for _, path := range []string{"../fixtures/llama-profiled/trace.json.gz", "../fixtures/llama-profiled/memory_timeline.raw.json.gz"} {
		if _, err := os.Stat(path); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "not a memory snapshot: for its") {
			t.Errorf("Open(%s) error = %v, want it recognised as a profiler file", path, err)
		}
	}
}
