package snapshot

import (
	"os"
	"testing"
)

// need stops a test that lacks an input it cannot make itself (a committed
// fixture): on a developer's machine it skips, saying what is missing;
// under CI (CI=true) it fails, since the checkout holds every fixture, so
// that nothing is quietly left untested there.
func need(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (required under CI: the fixtures are committed)", args...)
	}
	t.Skipf(format+"; skipping (under CI=true this fails)", args...)
}
