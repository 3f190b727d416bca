package attribution

import (
	"regexp"
	"testing"
)

// harnessName is the regular expression it replaced, written out: the two
// must agree on every name.
func TestHarnessNameIsTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^memscope/step/(-?\d+)/([A-Za-z_]+)$`)
	names := []string{
		"memscope/step/0/forward", "memscope/step/-1/setup", "memscope/step/12345/optimizer",
		"memscope/step/3/zero_grad", "memscope/step/007/Data", "memscope/step/99999999999999999999/x",
		"memscope/step//forward", "memscope/step/-/forward", "memscope/step/--1/forward",
		"memscope/step/1/", "memscope/step/1", "memscope/step/1/for ward", "memscope/step/1/forward/",
		"memscope/step/1/forward\n", "memscope/step/1/fwd2", "memscope/step/1a/forward",
		"memscope/step/１/forward", "memscope/step/1/förward", "xmemscope/step/1/forward",
		"memscope/step/", "memscope/steps/1/forward", "Optimizer.step#AdamW.step", "",
		"memscope/step/+1/forward", "memscope/step/1//forward", "memscope/step/1/_",
	}
	for _, name := range names {
		num, phase, ok := harnessName(name)
		m := re.FindStringSubmatch(name)
		switch {
		case ok != (m != nil):
			t.Errorf("%q: harnessName ok %v, the regexp matches %v", name, ok, m != nil)
		case ok && (num != m[1] || phase != m[2]):
			t.Errorf("%q: harnessName (%q, %q), the regexp (%q, %q)", name, num, phase, m[1], m[2])
		}
	}
}

// FuzzHarnessName holds harnessName to the regexp on any name.
func FuzzHarnessName(f *testing.F) {
	re := regexp.MustCompile(`^memscope/step/(-?\d+)/([A-Za-z_]+)$`)
	f.Add("memscope/step/-12/backward")
	f.Fuzz(func(t *testing.T, name string) {
		num, phase, ok := harnessName(name)
		m := re.FindStringSubmatch(name)
		if ok != (m != nil) || ok && (num != m[1] || phase != m[2]) {
			t.Fatalf("%q: harnessName (%q, %q, %v), the regexp %q", name, num, phase, ok, m)
		}
	})
}

// searchNear must give sort.Search's answer from any hint.
func TestSearchNear(t *testing.T) {
	for n := 0; n < 40; n++ {
		for answer := 0; answer <= n; answer++ {
			f := func(i int) bool { return i >= answer }
			for hint := -2; hint <= n+2; hint++ {
				if got := searchNear(n, hint, f); got != answer {
					t.Fatalf("n %d, answer %d, hint %d: got %d", n, answer, hint, got)
				}
			}
		}
	}
}
