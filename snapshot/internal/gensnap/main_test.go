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
	err := run([]string{"-o", out, "-size", "1MB", "-from", "../../testdata/synthetic.pickle"}, &stdout, &stderr)
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
	if err := run([]string{"-size", "1MB"}, &stdout, &stderr); err == nil {
		t.Errorf("run() without -o = nil error, want one")
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"1GB", 1 << 30}, {"1GiB", 1 << 30}, {"64MB", 64 << 20}, {"1.5g", 3 << 29}, {"512k", 512 << 10}, {"100", 100},
	}
	for _, tt := range tests {
		if got, err := parseSize(tt.in); err != nil || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v, want %d", tt.in, got, err, tt.want)
		}
	}
	if _, err := parseSize("lots"); err == nil {
		t.Errorf("parseSize(\"lots\") = nil error, want one")
	}
}
