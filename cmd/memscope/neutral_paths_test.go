package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// absoluteLayout is where the frames of a rewritten fixture were "recorded":
// a Linux venv and a repository under another user's home.
var absoluteLayout = strings.NewReplacer(
	"<site-packages>/", "/home/ann/proj/.venv/lib/python3.12/site-packages/",
	"<python>/", "/usr/lib/python3.12/",
	"<repo>/", "/home/ann/proj/",
)

// absoluteSnapshot writes the fixture at src (a snapshot) to dst with its
// frames' neutral prefixes replaced by absoluteLayout's, as a capture made
// without --neutral-paths has them.
func absoluteSnapshot(t *testing.T, src, dst string) {
	t.Helper()
	s, err := snapshot.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	s.Stacks.RewriteFiles(absoluteLayout.Replace)
	var b bytes.Buffer
	if _, err := snapgen.WriteOptions(&b, s, 0, snapgen.Options{Repeats: 1}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

var (
	traceSite = regexp.MustCompile(`("name": ")((torch|transformers)/[^"]*\.py\()`)
	traceUser = regexp.MustCompile(`("name": ")([A-Za-z_][A-Za-z0-9_]*\.py\()`)
)

// absoluteTrace writes the profiler trace at src to dst with its python
// functions' files under absoluteLayout's folders.
func absoluteTrace(t *testing.T, src, dst string) {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	// torch.profiler names python functions by their path under sys.path
	// ("torch/nn/modules/module.py(1750): _call_impl", "harness.py(581):
	// main"); a file run as a script or found outside sys.path keeps its
	// absolute path, as these become.
	out := traceSite.ReplaceAllString(string(raw), "${1}/home/ann/proj/.venv/lib/python3.12/site-packages/$2")
	out = traceUser.ReplaceAllString(out, "${1}/home/ann/proj/$2")
	if out == string(raw) {
		t.Fatalf("%s names no neutral path to make absolute", src)
	}
	if err := os.WriteFile(dst, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// outputOf is everything a run wrote: stdout, stderr and the -o file
// (gunzipped for a profile).
func outputOf(t *testing.T, r runResult, out string) string {
	t.Helper()
	all := r.stdout + r.stderr
	if out == "" {
		return all
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("reading -o %s: %v\n%s", out, err, r.stderr)
	}
	if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
		if u, err := io.ReadAll(zr); err == nil {
			b = u
		}
	}
	return all + string(b)
}

// TestNeutralPaths: with --neutral-paths no output of any command that
// writes one names the folders of the machine that recorded the frames or
// of the one that reads them: frames from a venv and a repository under
// /home/ann, the standard library under /usr/lib/python3.12, inputs under
// the reader's home. The llama-wide, fit-lm and llama-profiled fixtures
// are made absolute for it (their own paths are neutral already). Without
// the flag the same outputs do name those folders, so the test sees them.
func TestNeutralPaths(t *testing.T) {
	fixtures, err := filepath.Abs("../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	budgetConfig, err := filepath.Abs("../../budget/testdata/llama-3.2-1b.json")
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), "home", "me")
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Chdir(work)
	runs := filepath.Join(home, "runs")
	snap := filepath.Join(runs, "llama-wide.pickle")
	absoluteSnapshot(t, filepath.Join(fixtures, "llama-wide/snapshot.pickle"), snap)
	fitA, fitB := filepath.Join(runs, "b1.pickle"), filepath.Join(runs, "b2.pickle")
	absoluteSnapshot(t, filepath.Join(fixtures, "fit-lm/b1/snapshot.pickle.gz"), fitA)
	absoluteSnapshot(t, filepath.Join(fixtures, "fit-lm/b2/snapshot.pickle.gz"), fitB)
	prof := filepath.Join(fixtures, "llama-profiled")
	profSnap, profTrace := filepath.Join(work, "profiled.pickle"), filepath.Join(work, "trace.json")
	absoluteSnapshot(t, filepath.Join(prof, "snapshot.pickle"), profSnap)
	absoluteTrace(t, filepath.Join(prof, "trace.json.gz"), profTrace)

	runDir := filepath.Join(runs, "ddp") // a capture run directory under the reader's home
	if err := os.Symlink(filepath.Join(fixtures, "capture-ddp"), runDir); err != nil {
		t.Fatal(err)
	}

	forbidden := []string{home, "/home/ann", "/usr/lib/python3.12", "site-packages/"}
	for _, tc := range []struct {
		name string
		args []string
		out  string // the -o file, "" for none
	}{
		{"summary", []string{"summary", snap}, ""},
		{"summary-json", []string{"summary", "--json", "--stacks", snap}, ""},
		{"summary-stacks", []string{"summary", "--stacks", snap}, ""},
		{"summary-run-json", []string{"summary", "--json", "--run", runDir}, ""},
		{"peak", []string{"peak", "--tree", snap}, ""},
		{"peak-json", []string{"peak", "--json", snap}, ""},
		{"leaks", []string{"leaks", snap}, ""},
		{"leaks-json", []string{"leaks", "--json", snap}, ""},
		{"frag", []string{"frag", snap}, ""},
		{"oom", []string{"oom", "--json", snap}, ""},
		{"whatif", []string{"whatif", "--json", snap}, ""},
		{"fit", []string{"fit", "--memory-limit", "8GiB", "--json", fitA, fitB}, ""},
		{"ranks", []string{"ranks", fitA, fitB}, ""},
		{"diff", []string{"diff", fitA, fitB}, ""},
		{"diff-json", []string{"diff", "--json", fitA, fitB}, ""},
		{"check", []string{"check", "--max-peak", "1KiB", snap}, ""},
		{"ops", []string{"ops", profTrace}, ""},
		{"ops-json", []string{"ops", "--json", profTrace}, ""},
		{"pprof", []string{"pprof", "-o", "mem.pb.gz", snap}, "mem.pb.gz"},
		{"budget", []string{"budget", "--config", budgetConfig, "--batch", "1", "--seq", "256", snap}, ""},
		{"advise", []string{"advise", "--json", snap}, ""},
		{"report", []string{"report", "--trace", profTrace, "-o", "report.html", profSnap, snap}, "report.html"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := runMemscope(tc.args...)
			if plain.code == 2 {
				t.Fatalf("memscope %s: %v\n%s", strings.Join(tc.args, " "), plain.err, plain.stderr)
			}
			before := outputOf(t, plain, tc.out)
			args := append([]string{tc.args[0], "--neutral-paths"}, tc.args[1:]...)
			if tc.args[0] == "report" {
				// report is neutral by default: the plain run was too.
				if leaked := leaks(before, forbidden); leaked != "" {
					t.Errorf("memscope %s: names %q without --neutral-paths=false", strings.Join(tc.args, " "), leaked)
				}
				args[1] = "--neutral-paths=false"
				before = outputOf(t, runMemscope(args...), tc.out)
				args[1] = "--neutral-paths"
			}
			if leaks(before, forbidden) == "" {
				t.Errorf("memscope %s names none of %q without the flag: the test sees nothing", strings.Join(tc.args, " "), forbidden)
			}
			r := runMemscope(args...)
			if r.code != plain.code {
				t.Fatalf("memscope %s: exit %d, want %d as without the flag\n%s", strings.Join(args, " "), r.code, plain.code, r.stderr)
			}
			if o := outputOf(t, r, tc.out); leaks(o, forbidden) != "" {
				leaked := leaks(o, forbidden)
				i := strings.Index(o, leaked)
				t.Errorf("memscope %s: the output names %q: …%s…", strings.Join(args, " "), leaked, o[max(i-80, 0):min(i+len(leaked)+40, len(o))])
			}
		})
	}

	t.Run("serve", func(t *testing.T) {
		var pages []string
		serveWith(t, func(url string) {
			for _, p := range []string{"", "api/views", "api/summary", "api/sites?at=peak", "api/moment?at=peak", "api/leaks", "api/oom", "api/steps", "api/alloc?id=1", "api/alloc?id=100"} {
				resp, err := http.Get(url + p)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				pages = append(pages, string(b))
			}
		}, "--neutral-paths", "--http", "127.0.0.1:0", snap)
		if len(pages) == 0 {
			t.Fatal("serve answered nothing")
		}
		if leaked := leaks(strings.Join(pages, "\n"), forbidden); leaked != "" {
			t.Errorf("serve --neutral-paths: an answer names %q", leaked)
		}
	})
}

// TestNeutralPathsThirdParty: the third-party snapshots, as their users
// recorded them (a uv venv on /scratch, a Windows checkout, a conda env, a
// repository under /opt), name none of their machines' folders with
// --neutral-paths.
func TestNeutralPathsThirdParty(t *testing.T) {
	dir := "../../attribution/testdata/thirdparty/"
	for _, tc := range []struct {
		file   string
		prefix []string
	}{
		{"cs336-2.7b-one-forward.pickle.gz", []string{"/home/c-kaitwang", "/scratch/c-kaitwang"}},
		{"cs336-handwritten-adam.pickle.gz", []string{"/home/brian"}},
		{"cs336-medium-inference.pickle.gz", []string{"/home/lin"}},
		{"cs336-warmup-grads.pickle.gz", []string{`D:\Dev`, "D:/Dev", `\\Dev\\`}},
		{"cs336-zero-grad-late.pickle.gz", []string{"/root/"}},
		{"dataparallel-oom.pickle.gz", []string{"/mnt/data3/haoyangsun", "/home/haoyangsun"}},
		{"verl-state.pickle.gz", []string{"/opt/tiger"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := dir + tc.file
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%s: %v", path, err)
			}
			out := filepath.Join(t.TempDir(), "report.html")
			forbidden := append([]string{"site-packages/", "lib/python3."}, tc.prefix...)
			seen := false
			for _, args := range [][]string{
				{"summary", "--stacks"},
				{"summary", "--json"},
				{"peak", "--tree"},
				{"leaks"},
				{"oom"},
				{"advise", "--json"},
				{"report", "-o", out},
			} {
				plain := runMemscope(append(args, path)...)
				seen = seen || leaks(plain.stdout, tc.prefix) != ""
				r := runMemscope(append(append(args[:1:1], "--neutral-paths"), append(args[1:], path)...)...)
				if r.code != plain.code {
					t.Fatalf("memscope %s --neutral-paths: exit %d, want %d\n%s", strings.Join(args, " "), r.code, plain.code, r.stderr)
				}
				o := ""
				if args[0] == "report" {
					o = out
				}
				if leaked := leaks(outputOf(t, r, o), forbidden); leaked != "" {
					t.Errorf("memscope %s --neutral-paths %s: the output names %q", strings.Join(args, " "), tc.file, leaked)
				}
			}
			if !seen {
				t.Errorf("%s: no output names %q without --neutral-paths: the test sees nothing", tc.file, tc.prefix)
			}
		})
	}
}

// leaks is the first of forbidden that text holds, "" for none.
func leaks(text string, forbidden []string) string {
	for _, f := range forbidden {
		if strings.Contains(text, f) {
			return f
		}
	}
	return ""
}
