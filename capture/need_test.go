package capture

import (
	"os"
	"testing"
)

// need stops a test that lacks a tool it cannot do without (python3 for
// the harness's torch-free tests): on a developer's machine it skips,
// saying what is missing; under CI (CI=true) it fails, since .ci/run
// installs it, so that nothing is quietly left untested there.
func need(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (required under CI: .ci/run installs it)", args...)
	}
	t.Skipf(format+"; skipping (under CI=true this fails)", args...)
}
