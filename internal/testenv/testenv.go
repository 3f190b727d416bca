// Package testenv holds what the tests of several packages share about
// their environment.
package testenv

import (
	"os"
	"testing"
)

// Need stops a test that lacks a tool or an input it cannot make itself
// (python3, the go command, chromium, a committed fixture): on a
// developer's machine it skips, saying what is missing;
// under CI (CI=true) it fails, since .ci/run installs every tool and the
// checkout holds every fixture, so that nothing is quietly left untested
// there.
func Need(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (required under CI: .ci/run installs the tools, the fixtures are committed)", args...)
	}
	t.Skipf(format+"; skipping (under CI=true this fails)", args...)
}
