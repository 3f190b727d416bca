package main

import (
	"os"
	"testing"
)

// need stops a test that lacks a tool it cannot do without (the go command
// for 'go tool pprof'): on a developer's machine it skips, saying what is
// missing; under CI (CI=true) it fails, since .ci/run puts Go on the PATH,
// so that nothing is quietly left untested there.
func need(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (required under CI: .ci/run puts it on the PATH)", args...)
	}
	t.Skipf(format+"; skipping (under CI=true this fails)", args...)
}
