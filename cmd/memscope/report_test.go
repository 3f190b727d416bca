package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memscope/memscope/report"
)

// TestReportCommand runs memscope report; every page inlines the echarts
// build memscope carries, whatever the environment once used to find one.
func TestReportCommand(t *testing.T) {
	const llama = "../../fixtures/llama-bf16/snapshot.pickle"
	const oom = "../../fixtures/oom/snapshot.pickle"
	llamaAbs, err := filepath.Abs(llama)
	if err != nil {
		t.Fatal(err)
	}
	lib := `<script data-echarts="` + report.EChartsVersion + `">`
	offline := "with ECharts " + report.EChartsVersion + " inlined: it works offline"
	for _, c := range []struct {
		name string
		env  string // MEMSCOPE_ECHARTS, which no longer matters
		args []string
		code int
		// in and notIn are strings the page must and must not hold; stderr
		// what the command must say (each of its lines).
		in, notIn []string
		stderr    string
	}{
		{name: "default", args: []string{llamaAbs}, in: []string{lib, `id="f0d0-timeline"`}, notIn: []string{"cdn.jsdelivr", "<script src"}, stderr: offline},
		{name: "offline", args: []string{"--offline", llamaAbs}, in: []string{lib}, notIn: []string{"cdn.jsdelivr"}, stderr: offline},
		{name: "env-ignored", env: "no-such-echarts.min.js", args: []string{llama}, in: []string{lib}, stderr: offline},
		{name: "echarts-flag-gone", args: []string{"--echarts", "echarts.min.js", llama}, code: 2, stderr: "unknown flag: --echarts"},
		{name: "two-files", args: []string{"--title", "two runs", llama, oom},
			in: []string{`id="f0d0-timeline"`, `id="f1d0-timeline"`, "<title>memscope · two runs</title>", "llama-bf16/snapshot.pickle · device 0"}},
		{name: "too-many-devices", args: slices.Repeat([]string{oom}, 17), code: 2, stderr: "at most 16"},
		{name: "trace", args: []string{"--trace", "../../fixtures/llama-profiled/trace.json.gz", "../../fixtures/llama-profiled/snapshot.pickle"},
			in: []string{`id="ops"`, "Operators (profiler trace)", "aten::"}},
		{name: "trace-alone", args: []string{"--trace", "../../fixtures/llama-profiled/trace.json.gz"},
			in: []string{`id="ops"`, "aten::_log_softmax", "<title>memscope · ../../fixtures/llama-profiled/trace.json.gz</title>"}, notIn: []string{`id="f0d0-timeline"`}},
		{name: "capture-dir", args: []string{"../../fixtures/capture-train"},
			in: []string{`id="f0d0-timeline"`, "capture-train/snapshot.pickle"}},
		{name: "sweep-dir", args: []string{"../../fixtures/sweep-llama"}, code: 2, stderr: "is a sweep run: summarize it with memscope summary --run"},
		{name: "sweep-run-alone", args: []string{"--run", "../../fixtures/sweep-llama"},
			in: []string{`id="run-sweep"`, "Batch-size sweep"}, notIn: []string{`id="f0d0-timeline"`}},
		{name: "capture-run", args: []string{"--run", "../../capture/testdata/run-fake-2ranks", llama},
			in: []string{`id="run-ranks"`, "Capture run", `id="f0d0-timeline"`}},
		{name: "no-input", args: []string{}, code: 2, stderr: "missing SNAP"},
		{name: "not-a-run", args: []string{"--run", "../../fixtures/oom", oom}, code: 2, stderr: "not a memscope run directory"},
		{name: "unreadable", args: []string{"no-such.pickle"}, code: 2, stderr: "no-such.pickle"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("MEMSCOPE_ECHARTS", c.env)
			out := filepath.Join(t.TempDir(), "r.html")
			r := runMemscope(append([]string{"report", "-o", out}, c.args...)...)
			if r.code != c.code {
				t.Fatalf("memscope report %s: exit %d, want %d\nstderr: %s", strings.Join(c.args, " "), r.code, c.code, r.stderr)
			}
			if !strings.Contains(r.stderr, c.stderr) {
				t.Errorf("stderr = %q, want it to say %q", r.stderr, c.stderr)
			}
			if c.code != 0 {
				if _, err := os.Stat(out); err == nil {
					t.Errorf("exit %d, but %s was written", r.code, out)
				}
				return
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			page := string(b)
			for _, s := range c.in {
				if !strings.Contains(page, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			for _, s := range c.notIn {
				if strings.Contains(page, s) {
					t.Errorf("page holds %q", s)
				}
			}
		})
	}
}
