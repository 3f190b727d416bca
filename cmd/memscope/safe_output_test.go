package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
)

// TestSafeOutput: control characters in frame names, file names and
// annotation (phase) names never reach the terminal: text output and pprof
// labels write them as escapes; the HTML page escapes markup.
func TestSafeOutput(t *testing.T) {
	const evil = "\x1b]0;pwned\x07\x1b[2J\r\u202e"
	root := fuzzBase(0)
	seg := root["segments"].([]any)[0].(map[string]any)
	for _, b := range seg["blocks"].([]any) {
		b.(map[string]any)["frames"] = []any{snapgen.Frame("fwd"+evil+"<script>x</script>", "model"+evil+".py", 3)}
	}
	for _, e := range root["device_traces"].([]any)[0].([]any) {
		e.(map[string]any)["frames"] = []any{snapgen.Frame("step"+evil, "train"+evil+".py", 5)}
	}
	for _, a := range root["external_annotations"].([]any) {
		a := a.(map[string]any)
		if a["name"] == "## forward ##" {
			a["name"] = "## forward" + evil + " ##"
		}
	}
	dir := t.TempDir()
	snap := filepath.Join(dir, "evil.pickle")
	writeSnapshot(t, snap, root)
	clean := func(what, s string) {
		t.Helper()
		for _, r := range s {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r == 0x202e {
				t.Errorf("%s: control character %U in the output:\n%q", what, r, s)
				return
			}
		}
	}
	for _, args := range [][]string{
		{"summary", snap}, {"summary", "--stacks", snap}, {"peak", snap}, {"peak", "--tree", snap},
		{"peak", "--at", "end", snap}, {"leaks", snap}, {"frag", snap}, {"oom", snap}, {"diff", snap, snap},
		{"check", "--max-peak", "1KiB", snap},
	} {
		r := runMemscope(args...)
		if r.code == 2 {
			t.Fatalf("%s: exit 2: %v", strings.Join(args, " "), r.err)
		}
		clean(strings.Join(args, " "), r.stdout+r.stderr)
	}
	if r := runMemscope("peak", snap); !strings.Contains(r.stdout, `\x1b]0;pwned\a`) {
		t.Errorf("peak: the escaped name is missing:\n%s", r.stdout)
	}

	p, _ := runPProf(t, snap)
	for _, fn := range p.Function {
		clean("pprof function", fn.Name+fn.SystemName+fn.Filename)
	}
	for _, s := range p.Sample {
		for k, v := range s.Label {
			clean("pprof label "+k, strings.Join(v, ""))
		}
	}

	page := filepath.Join(dir, "evil.html")
	if r := runMemscope("report", "-o", page, snap); r.err != nil {
		t.Fatal(r.err)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(html, []byte("<script>x</script>")) {
		t.Errorf("report: a frame name's markup is in the page unescaped")
	}
}
