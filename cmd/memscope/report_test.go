package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memscope/memscope/report"
)

// fakeECharts writes a file that passes report.CheckECharts.
func fakeECharts(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	putECharts(t, dir, version)
	return filepath.Join(dir, filepath.FromSlash(report.EChartsFile))
}

// TestReportCommand runs memscope report with a fresh cache directory
// (XDG_CACHE_HOME) and, for the cases that look for echarts, from a
// directory two levels below an empty one, so that no build installed on
// this machine is found.
func TestReportCommand(t *testing.T) {
	const llama = "../../fixtures/llama-bf16/snapshot.pickle"
	const oom = "../../fixtures/oom/snapshot.pickle"
	llamaAbs, err := filepath.Abs(llama)
	if err != nil {
		t.Fatal(err)
	}
	good := fakeECharts(t, report.EChartsVersion)
	wrong := fakeECharts(t, "5.4.2")
	hint := "set MEMSCOPE_ECHARTS to an echarts.min.js of version " + report.EChartsVersion
	for _, c := range []struct {
		name string
		env  string // MEMSCOPE_ECHARTS
		// cache and above are builds put in the cache and in the
		// node_modules of the directory above the one memscope runs in
		// (which is then an empty one); "" puts none.
		cache, above string
		isolate      bool // run in an empty directory even with neither
		args         []string
		code         int
		// in and notIn are strings the page must and must not hold; stderr
		// what the command must say (each of its lines).
		in, notIn []string
		stderr    string
	}{
		{name: "cdn", isolate: true, args: []string{llamaAbs},
			in:     []string{`src="` + report.EChartsURL + `"`, "needs network access", `id="f0d0-timeline"`, report.EChartsCacheInstall},
			stderr: "the charts need network; to inline it, run 'npm install --prefix {cache}/memscope/echarts-" + report.EChartsVersion + " --no-save --no-audit --no-fund echarts@" + report.EChartsVersion + "' or " + hint},
		{name: "offline-none", isolate: true, args: []string{"--offline", llamaAbs}, code: 2,
			stderr: "--offline: no echarts " + report.EChartsVersion + " build found, so the page would load it from the network; to inline it, run 'npm install --prefix {cache}/memscope/echarts-"},
		{name: "offline-env", env: good, isolate: true, args: []string{"--offline", llamaAbs},
			in: []string{"/*fake*/"}, notIn: []string{report.EChartsURL}, stderr: "inlined from " + good},
		{name: "cache", cache: report.EChartsVersion, args: []string{"--offline", llamaAbs},
			in: []string{"/*fake*/"}, notIn: []string{report.EChartsURL}, stderr: "inlined from {cache}/memscope/echarts-" + report.EChartsVersion + "/node_modules/echarts/dist/echarts.min.js: it works offline"},
		{name: "parent-node-modules", above: report.EChartsVersion, args: []string{"--offline", llamaAbs},
			in: []string{"/*fake*/"}, notIn: []string{report.EChartsURL}, stderr: "inlined from {above}/node_modules/echarts/dist/echarts.min.js: it works offline"},
		{name: "cache-wrong-version", cache: "5.4.2", above: report.EChartsVersion, args: []string{"--offline", llamaAbs},
			in: []string{"/*fake*/"}, stderr: "not echarts " + report.EChartsVersion},
		{name: "flag", args: []string{"--echarts", good, llama},
			in: []string{"/*fake*/"}, notIn: []string{report.EChartsURL}, stderr: "it works offline"},
		{name: "env", env: good, args: []string{llama},
			in: []string{"/*fake*/"}, notIn: []string{report.EChartsURL}, stderr: "inlined from " + good},
		{name: "env-wrong-version", env: wrong, args: []string{llama},
			in: []string{`src="` + report.EChartsURL + `"`}, stderr: "not echarts " + report.EChartsVersion},
		{name: "flag-wrong-version", args: []string{"--echarts", wrong, llama}, code: 2, stderr: "--echarts"},
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
			cache, above := t.TempDir(), t.TempDir()
			t.Setenv("XDG_CACHE_HOME", cache)
			putECharts(t, filepath.Join(cache, report.EChartsCacheDir), c.cache)
			putECharts(t, above, c.above)
			if c.isolate || c.above != "" {
				wd := filepath.Join(above, "run")
				if err := os.Mkdir(wd, 0o755); err != nil {
					t.Fatal(err)
				}
				t.Chdir(wd)
			}
			out := filepath.Join(t.TempDir(), "r.html")
			r := runMemscope(append([]string{"report", "-o", out}, c.args...)...)
			if r.code != c.code {
				t.Fatalf("memscope report %s: exit %d, want %d\nstderr: %s", strings.Join(c.args, " "), r.code, c.code, r.stderr)
			}
			if want := strings.NewReplacer("{cache}", cache, "{above}", above).Replace(c.stderr); !strings.Contains(r.stderr, want) {
				t.Errorf("stderr = %q, want it to say %q", r.stderr, want)
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

// putECharts puts a build of version under the npm prefix dir; "" puts none.
func putECharts(t *testing.T, dir, version string) {
	t.Helper()
	if version == "" {
		return
	}
	p := filepath.Join(dir, filepath.FromSlash(report.EChartsFile))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`/*fake*/t.version="`+version+`";`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEChartsPlaces: report looks for the build at $MEMSCOPE_ECHARTS, in
// the cache, in node_modules of the working directory and each one above
// it, then next to the executable, each place once.
func TestEChartsPlaces(t *testing.T) {
	root := filepath.VolumeName(os.TempDir()) + string(filepath.Separator)
	file := filepath.FromSlash(report.EChartsFile)
	var got []string
	for _, p := range echartsPlaces("env.js", filepath.Join(root, "cache"), filepath.Join(root, "w", "run"), filepath.Join(root, "w", "memscope")) {
		got = append(got, p.path+" "+p.how)
	}
	want := []string{
		"env.js $MEMSCOPE_ECHARTS",
		filepath.Join(root, "cache", filepath.FromSlash(report.EChartsCacheDir), file) + " ",
		filepath.Join(root, "w", "run", file) + " ",
		filepath.Join(root, "w", file) + " ", // also next to the executable: listed once
		filepath.Join(root, file) + " ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("echartsPlaces = %q, want %q", got, want)
	}
	if got := echartsPlaces("", "", "", ""); len(got) != 0 {
		t.Errorf("echartsPlaces with nothing known = %q, want none", got)
	}
}
