package testenv

import (
	"os/exec"
	"testing"
)

// Chromium returns the path of Debian's chromium or a compatible browser
// on PATH; without one it stops the test as Need does.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Need(t, "the browser test: no chromium on PATH (apt-get install chromium)")
	return ""
}
