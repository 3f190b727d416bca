package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/memscope/memscope/report"
)

// modelFile is the --focus of these tests: the Llama's modeling file.
const modelFile = `modeling_llama\.py`

// TestFocusIgnoreOnEveryCommand: every analysis command takes --focus and
// --ignore, runs with them as it does without (its JSON the same but for
// the sites), and refuses a bad regexp with exit status 2.
func TestFocusIgnoreOnEveryCommand(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"summary", llamaSnap}, 0},
		{[]string{"peak", llamaSnap}, 0},
		{[]string{"leaks", leakSnap}, 0},
		{[]string{"frag", oomSnap}, 0},
		{[]string{"oom", oomSnap}, 0},
		{[]string{"diff", mlpSnap, leakSnap}, 0},
		{[]string{"pprof", "-o", filepath.Join(dir, "mem.pb.gz"), llamaSnap}, 0},
		{[]string{"report", "-o", filepath.Join(dir, "r.html"), llamaSnap}, 0},
		{[]string{"check", "--max-leak", "0", leakSnap}, 1},
	} {
		t.Run(tt.args[0], func(t *testing.T) {
			with := append([]string{tt.args[0], "--focus", modelFile, "--ignore", "(^|/)torch/"}, tt.args[1:]...)
			if r := runMemscope(with...); r.code != tt.code {
				t.Errorf("memscope %v: exit %d, want %d (err %v)", with, r.code, tt.code, r.err)
			}
			// The flags choose sites and nothing else: the JSON but for
			// its site lists is what the command writes without them.
			switch tt.args[0] {
			case "summary", "peak", "leaks", "frag", "oom", "diff":
				plain := runMemscope(append([]string{tt.args[0], "--json"}, tt.args[1:]...)...)
				focused := runMemscope(append([]string{with[0], "--json"}, with[1:]...)...)
				var a, b any
				if plain.err != nil || focused.err != nil || json.Unmarshal([]byte(plain.stdout), &a) != nil || json.Unmarshal([]byte(focused.stdout), &b) != nil {
					t.Fatalf("%s --json with and without --focus: %v, %v", tt.args[0], plain.err, focused.err)
				}
				if a, b := withoutSites(a), withoutSites(b); !reflect.DeepEqual(a, b) {
					t.Errorf("%s --json: --focus and --ignore change more than the sites:\n%v\nwant\n%v", tt.args[0], b, a)
				}
			}
			for _, flag := range []string{"--focus", "--ignore"} {
				bad := append([]string{tt.args[0], flag, "("}, tt.args[1:]...)
				if r := runMemscope(bad...); r.code != 2 || r.err == nil || !strings.Contains(r.err.Error(), flag) {
					t.Errorf("memscope %v: exit %d, err %v; want 2 naming %s", bad, r.code, r.err, flag)
				}
			}
		})
	}
}

// withoutSites returns decoded JSON v with every site list and request
// site left out: what --focus and --ignore may change.
func withoutSites(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			switch k {
			case "sites", "top_sites", "request_site", "request_stack":
			default:
				out[k] = withoutSites(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutSites(e)
		}
		return out
	}
	return v
}

// peakSites runs peak --json with args and returns the sites of the first
// device.
func peakSites(t *testing.T, args ...string) []report.SiteJSON {
	t.Helper()
	r := runMemscope(append([]string{"peak", "--json", "--top", "-1"}, args...)...)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var doc peakDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Files[0].Devices[0].Sites
}

// TestFocusMovesSites: with --focus on the model's file, each site of the
// llama-bf16 peak moves to what its stack says: the innermost frame of the
// stack in modeling_llama.py, still with the harness line that called the
// model; a stack with no such frame (the loss the harness computes, the
// output projection) falls back to its innermost Python frame. The sites
// in activations.py and sdpa_attention.py move up to the modeling_llama.py
// lines that call them.
func TestFocusMovesSites(t *testing.T) {
	re := regexp.MustCompile(modelFile)
	before := peakSites(t, llamaSnap)
	after := peakSites(t, "--focus", modelFile, llamaSnap)
	var moved bool
	for _, s := range before {
		if s.Frame != nil && !re.MatchString(s.Frame.Filename) && s.Kind == "library" {
			moved = true // e.g. activations.py: it must not survive the focus
		}
	}
	if !moved {
		t.Fatal("no library site outside modeling_llama.py without --focus: the test shows nothing")
	}
	var total, totalBefore int64
	for _, s := range before {
		totalBefore += s.Bytes
	}
	for _, s := range after {
		total += s.Bytes
		var inner *report.FrameJSON
		for i := range s.Stack {
			if re.MatchString(s.Stack[i].Filename) {
				inner = &s.Stack[i]
				break
			}
		}
		switch s.Kind {
		case "library":
			if inner == nil || *s.Frame != *inner {
				t.Errorf("site %s: want the innermost modeling_llama.py frame of its stack, %+v", s.Label, inner)
			}
			if s.Caller == nil || !strings.HasPrefix(s.Caller.Filename, "<repo>/") {
				t.Errorf("site %s: caller %+v, want the harness line that called the model", s.Label, s.Caller)
			}
		case "python":
			if inner != nil {
				t.Errorf("site %s is a fallback but its stack has %s:%d", s.Label, inner.Filename, inner.Line)
			}
			// llama-bf16 has Python frames only (stacks="python").
			first := s.Stack[0]
			first.Folded = false // the stack marks it folded (it does not count); the site's frame is the frame itself
			if s.Frame == nil || *s.Frame != first {
				t.Errorf("site %s: want the innermost Python frame of its stack", s.Label)
			}
		case "user":
			t.Errorf("site %s: a user site, but no user file matches --focus %s", s.Label, modelFile)
		}
	}
	if total != totalBefore {
		t.Errorf("sites hold %d bytes with --focus, %d without: focus moves bytes, never drops them", total, totalBefore)
	}
}

// TestFocusOtherCommands: --focus changes the sites that summary, diff,
// pprof, report, oom, leaks and check name, in the way the stacks say.
func TestFocusOtherCommands(t *testing.T) {
	re := regexp.MustCompile(modelFile)
	t.Run("summary", func(t *testing.T) {
		r := runMemscope("summary", "--json", "--top", "50", "--focus", modelFile, llamaSnap)
		var doc report.SummaryDoc
		if r.err != nil || json.Unmarshal([]byte(r.stdout), &doc) != nil {
			t.Fatalf("summary --json: %v", r.err)
		}
		for _, s := range doc.Files[0].Devices[0].TopSites {
			if s.Kind == "user" || s.Kind == "library" && !re.MatchString(s.Frame.Filename) {
				t.Errorf("summary --focus %s: site %s (%s)", modelFile, s.Label, s.Kind)
			}
		}
	})
	t.Run("diff", func(t *testing.T) {
		wide := "../../fixtures/llama-wide/snapshot.pickle"
		plain := runMemscope("diff", llamaSnap, wide)
		focus := runMemscope("diff", "--focus", modelFile, llamaSnap, wide)
		if plain.err != nil || focus.err != nil {
			t.Fatal(plain.err, focus.err)
		}
		// The loss is computed in the harness's own line (truth.json):
		// a site without --focus, gone with it (its stack has no model
		// frame). The gradient autograd made for it is named after the
		// site its forward block has under the filter, "… (backward,
		// autograd)": a row of its own either way.
		const loss = "harness.py:389 __call__\n"
		if !strings.Contains(plain.stdout, loss) || strings.Contains(focus.stdout, loss) {
			t.Errorf("diff: %q should be a site without --focus and not with it", loss)
		}
	})
	t.Run("pprof", func(t *testing.T) {
		p, _ := runPProf(t, "--focus", modelFile, llamaSnap)
		if len(p.Location) == 0 {
			t.Fatal("no location kept")
		}
		// A stack with no frame in focus keeps one location, as summary
		// names its site: its innermost Python frame, or a synthetic
		// function with no file for a block with no Python frame.
		for _, s := range p.Sample {
			if len(s.Location) == 1 {
				continue
			}
			for _, l := range s.Location {
				if fn := l.Line[0].Function; !re.MatchString(fn.Filename) {
					t.Errorf("pprof --focus kept %s:%d", fn.Filename, l.Line[0].Line)
				}
			}
		}
	})
	t.Run("report", func(t *testing.T) {
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a.html"), filepath.Join(dir, "b.html")
		if r := runMemscope("report", "-o", a, llamaSnap); r.err != nil {
			t.Fatal(r.err)
		}
		if r := runMemscope("report", "-o", b, "--focus", `harness\.py`, llamaSnap); r.err != nil {
			t.Fatal(r.err)
		}
		pa, _ := os.ReadFile(a)
		pb, _ := os.ReadFile(b)
		// Without focus the model's lines are sites ("called from" the
		// harness); with the focus on the harness they fold into its line.
		if !strings.Contains(string(pa), "(called from") || strings.Contains(string(pb), "(called from") {
			t.Errorf("report: library sites with their caller should be on the page without --focus and not with --focus harness.py")
		}
	})
	t.Run("oom", func(t *testing.T) {
		r := runMemscope("oom", "--json", "--focus", "nothing-matches", oomSnap)
		var doc oomDoc
		if r.err != nil || json.Unmarshal([]byte(r.stdout), &doc) != nil {
			t.Fatalf("oom --json: %v", r.err)
		}
		for _, s := range doc.Files[0].Devices[0].Live.Sites {
			if s.Kind == "user" || s.Kind == "library" {
				t.Errorf("oom --focus nothing-matches: site %s (%s)", s.Label, s.Kind)
			}
		}
	})
	t.Run("leaks and check", func(t *testing.T) {
		tr := readFixtureTruth(t, "leak")
		r := runMemscope("leaks", "--json", "--focus", "nothing-matches", leakSnap)
		var doc leaksDoc
		if r.err != nil || json.Unmarshal([]byte(r.stdout), &doc) != nil {
			t.Fatalf("leaks --json: %v", r.err)
		}
		// The planted clone has no Python frame inside the harness's line:
		// with no frame in focus the site is still that line, as the
		// innermost Python frame.
		s := doc.Files[0].Devices[0].Sites[0]
		if s.Kind != "python" || s.Frame.Filename != tr.Leak.File || s.Frame.Line != tr.Leak.Line {
			t.Errorf("leak site with --focus nothing-matches = %s (%s), want %s:%d as a python site", s.Label, s.Kind, tr.Leak.File, tr.Leak.Line)
		}
		c := runMemscope("check", "--max-leak", "0", "--focus", "nothing-matches", leakSnap)
		if c.code != 1 || c.err == nil || !strings.Contains(c.err.Error(), s.Label) {
			t.Errorf("check --focus: exit %d, %v; want 1 naming %s", c.code, c.err, s.Label)
		}
	})
}
