package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memscope/memscope/report"
)

// rawGoOutput matches what a user should never read: Go's fmt verbs gone
// wrong, printed nil pointers, maps and structs, panics and goroutine
// dumps, placeholders, and numbers that are not numbers.
var rawGoOutput = regexp.MustCompile(`%!|\(MISSING\)|<nil>|map\[|&\{|\[\]string|\[\]int|runtime error|goroutine \d|panic:|invalid memory address|\bNaN\b|[+-]Inf\b|TODO|not implemented`)

// cliCase is one command line of the fixture table and what it must do.
type cliCase struct {
	args []string
	code int    // exit status
	kind string // the JSON document's kind, for --json runs
}

// fixtureCases lists, for one fixture folder, every command that reads
// what the folder holds, in text and in JSON where the command has it.
func fixtureCases(t *testing.T, dir, tmp string) []cliCase {
	t.Helper()
	var out []cliCase
	both := func(code int, kind string, args ...string) {
		out = append(out, cliCase{args: args, code: code})
		if kind != "" {
			out = append(out, cliCase{args: append([]string{args[0], "--json"}, args[1:]...), code: code, kind: kind})
		}
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "snapshot*.pickle"))
	gz, _ := filepath.Glob(filepath.Join(dir, "snapshot*.pickle.gz")) // the serving what-if fixtures
	snaps = append(snaps, gz...)
	for _, s := range snaps {
		both(0, "summary", "summary", s)
		both(0, "peak", "peak", s)
		both(0, "peak", "peak", "--at", "end", s)
		out = append(out, cliCase{args: []string{"peak", "--tree", s}})
		both(0, "leaks", "leaks", s)
		both(0, "frag", "frag", s)
		both(0, "oom", "oom", s)
		both(0, "whatif", "whatif", "--conf", "expandable_segments:True", s)
		both(0, "diff", "diff", s, s)
		check := 0
		if r := runMemscope("summary", "--json", s); r.err == nil {
			var doc report.SummaryDoc
			if json.Unmarshal([]byte(r.stdout), &doc) == nil {
				for _, d := range doc.Files[0].Devices {
					if d.OOMs > 0 {
						check = 1 // a recorded OOM fails the gate
					}
				}
			}
		}
		both(check, "check", "check", s)
		both(0, "advise", "advise", s)
		both(0, "ranks", "ranks", s)
		out = append(out, cliCase{args: []string{"pprof", "-o", filepath.Join(tmp, "p.pb.gz"), s}})
		out = append(out, cliCase{args: []string{"report", "-o", filepath.Join(tmp, "r.html"), s}})
	}
	traces, _ := filepath.Glob(filepath.Join(dir, "*.json*"))
	for _, tr := range traces {
		base := filepath.Base(tr)
		if !strings.HasPrefix(base, "trace") && !strings.HasPrefix(base, "memory_timeline") {
			continue
		}
		both(0, "ops", "ops", tr)
		if strings.HasPrefix(base, "trace") {
			both(0, "ops", "ops", "--by", "module", tr)
		}
		out = append(out, cliCase{args: []string{"report", "-o", filepath.Join(tmp, "t.html"), "--trace", tr}})
	}
	if fileExists(filepath.Join(dir, "results.json")) || fileExists(filepath.Join(dir, "run.json")) {
		kind := "capture"
		if fileExists(filepath.Join(dir, "results.json")) {
			kind = "sweep"
		} else {
			both(0, "summary", "summary", dir) // the run's snapshot(s)
		}
		both(0, kind, "summary", "--run", dir)
		out = append(out, cliCase{args: []string{"report", "-o", filepath.Join(tmp, "run.html"), "--run", dir}})
		both(0, "diff", "diff", dir, dir)
	}
	return out
}

// TestEveryCommandOnEveryFixture runs every command that reads a fixture
// on every fixture, in text and JSON: each exits as it should, writes
// output, prints nothing raw from Go, and writes JSON of the documented
// schema and kind.
func TestEveryCommandOnEveryFixture(t *testing.T) {
	dirs, err := filepath.Glob("../../fixtures/*")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tmp := t.TempDir()
			cases := fixtureCases(t, dir, tmp)
			if len(cases) == 0 { // a folder of runs: fixtures/sweep-paths/NAME
				subs, _ := filepath.Glob(filepath.Join(dir, "*"))
				for _, sub := range subs {
					if st, err := os.Stat(sub); err == nil && st.IsDir() {
						cases = append(cases, fixtureCases(t, sub, tmp)...)
					}
				}
			}
			if len(cases) == 0 {
				t.Fatalf("%s holds nothing memscope reads", dir)
			}
			for _, c := range cases {
				ran++
				r := runMemscope(c.args...)
				line := "memscope " + strings.Join(c.args, " ")
				if r.code != c.code {
					t.Errorf("%s: exit %d, want %d: %v\n%s", line, r.code, c.code, r.err, r.stderr)
					continue
				}
				if m := rawGoOutput.FindString(r.stdout + r.stderr); m != "" {
					t.Errorf("%s prints %q, raw Go output:\n%s%s", line, m, clipOutput(r.stdout), clipOutput(r.stderr))
				}
				if r.stdout == "" && r.stderr == "" {
					t.Errorf("%s writes nothing", line)
				}
				if c.kind == "" {
					continue
				}
				var head struct{ Schema, Kind string }
				if err := json.Unmarshal([]byte(r.stdout), &head); err != nil {
					t.Errorf("%s: not one JSON document: %v", line, err)
					continue
				}
				if head.Schema != report.Schema || head.Kind != c.kind {
					t.Errorf("%s: schema %q kind %q, want %q %q", line, head.Schema, head.Kind, report.Schema, c.kind)
				}
			}
		})
	}
	t.Logf("%d command lines", ran)
	if ran < 400 {
		t.Errorf("ran %d command lines: the table lost fixtures", ran)
	}
}

func clipOutput(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…\n"
	}
	return s
}

// fileExists reports whether p is a regular file.
func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
