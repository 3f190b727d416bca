package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/srcpath"
)

// TestSummaryStacksPythonFrames: on the stacks="all" fixture, summary
// --stacks prints each top site's Python frames, in order, and counts the
// native ones (C++, CPython, libc) in one line; --all-frames prints every
// frame of the stack JSON carries.
func TestSummaryStacksPythonFrames(t *testing.T) {
	const snap = "../../fixtures/stacks-all/snapshot.pickle"
	var doc struct {
		Files []struct {
			Devices []struct {
				TopSites []struct {
					Stack []struct {
						Name     string `json:"name"`
						Filename string `json:"filename"`
						Line     int    `json:"line"`
					} `json:"stack"`
				} `json:"top_sites"`
			} `json:"devices"`
		} `json:"files"`
	}
	runJSON(t, &doc, "summary", "--json", "--top", "1", snap)
	stack := doc.Files[0].Devices[0].TopSites[0].Stack
	var python []string
	for _, f := range stack {
		if f.Line > 0 && strings.HasSuffix(f.Filename, ".py") {
			// as labels name a frame's file (JSON's filename is as recorded)
			python = append(python, fmt.Sprintf("%s:%d %s", srcpath.Show(f.Filename), f.Line, f.Name))
		}
	}
	native := len(stack) - len(python)
	if len(python) == 0 || native == 0 {
		t.Fatalf("the top site's stack has %d Python and %d native frames: not a stacks=\"all\" recording", len(python), native)
	}
	frames := func(args ...string) []string {
		r := runMemscope(append([]string{"summary", "--stacks", "--top", "1"}, append(args, snap)...)...)
		if r.err != nil {
			t.Fatal(r.err)
		}
		var out []string
		_, sites, _ := strings.Cut(r.stdout, "top sites live at peak")
		for _, l := range strings.Split(sites, "\n") {
			if strings.HasPrefix(l, "        ") {
				out = append(out, strings.TrimSpace(l))
			}
		}
		return out
	}
	want := append(append([]string{}, python...), fmt.Sprintf("(%d native frames of C++, CPython and libc not shown; --all-frames prints them)", native))
	if got := frames(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("summary --stacks prints\n%s\nwant the Python frames, then the count:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := frames("--all-frames"); len(got) != len(stack) {
		t.Errorf("summary --stacks --all-frames prints %d frames, want all %d", len(got), len(stack))
	}
}
