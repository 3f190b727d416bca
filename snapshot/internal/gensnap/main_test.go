package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

func TestRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "big.pickle")
	var stdout, stderr bytes.Buffer
	err := run([]string{"-o", out, "-size", "1MiB", "-from", "../../testdata/synthetic.pickle"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run() = %v (stderr %q)", err, stderr.String())
	}
	st, err := os.Stat(out)
	if err != nil || st.Size() < 1<<20 {
		t.Fatalf("output %v, %v; want a file of at least 1 MiB", st, err)
	}
	if !strings.Contains(stdout.String(), "trace entries") {
		t.Errorf("run() printed %q, want a summary", stdout.String())
	}
	if _, err := snapshot.Open(out); err != nil {
		t.Errorf("Open(generated) = %v", err)
	}
	if err := run([]string{"-size", "1MiB"}, &stdout, &stderr); err == nil {
		t.Errorf("run() without -o = nil error, want one")
	}
}
