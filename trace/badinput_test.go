package trace

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fixtureJSON returns the decompressed fixture trace.
func fixtureJSON(t testing.TB) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtureDir, "trace.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var offsetRE = regexp.MustCompile(`at byte \d+`)

// TestBadInput: unreadable input gives one-line errors that name the file
// and, where a position makes sense, the byte offset.
func TestBadInput(t *testing.T) {
	full := fixtureJSON(t)
	noMemory := regexp.MustCompile(`(?s)\{\s*"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "\[memory\]".*?\n  \},`).ReplaceAll(full, nil)
	random := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	var gzTrunc bytes.Buffer
	zw := gzip.NewWriter(&gzTrunc)
	zw.Write(full[:2000])
	zw.Close()
	tests := []struct {
		name   string
		in     []byte
		want   string
		offset bool
	}{
		{"empty", nil, "empty file", true},
		{"whitespace", []byte("  \n"), "empty file", true},
		{"random", random, "not", true},
		{"string", []byte(`"hello"`), "not a Chrome trace: top-level JSON value is a string", true},
		{"object-without-events", []byte(`{"schemaVersion": 1, "a": [1, 2]}`), "no traceEvents", true},
		{"events-not-array", []byte(`{"traceEvents": {}}`), "traceEvents is an object", true},
		{"array-of-numbers", []byte(`[1, 2, 3]`), "none an event object", true},
		{"truncated-header", full[:300], "unexpected end of file", true},
		{"syntax-error-early", append(append([]byte{}, full[:500]...), []byte("}}}")...), "at byte", true},
		{"truncated-gzip-header", gzTrunc.Bytes()[:15], "gzip", false},
		{"no-memory-events", noMemory, "profile_memory=True", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Decode(bytes.NewReader(tc.in), tc.name+".json")
			if err == nil {
				t.Fatalf("Decode(%s) = %d memory events, want an error", tc.name, len(tr.Memory))
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, tc.name+".json") || strings.Contains(msg, "\n") {
				t.Errorf("Decode(%s) error = %q, want one line naming the file and saying %q", tc.name, msg, tc.want)
			}
			if tc.offset && !offsetRE.MatchString(msg) {
				t.Errorf("Decode(%s) error = %q, want a byte offset", tc.name, msg)
			}
		})
	}
}

// TestDamagedTrace: a trace cut or corrupted after some events keeps the
// events before the damage and says what was lost.
func TestDamagedTrace(t *testing.T) {
	full := fixtureJSON(t)
	whole, err := Decode(bytes.NewReader(full), "whole.json")
	if err != nil {
		t.Fatal(err)
	}
	var gzCut bytes.Buffer
	zw := gzip.NewWriter(&gzCut)
	zw.Write(full)
	zw.Close()
	corrupt := append([]byte{}, full...)
	copy(corrupt[len(full)/2:], "#####")
	tests := []struct {
		name string
		in   []byte
	}{
		{"cut-half", full[:len(full)/2]},
		{"cut-near-end", full[:len(full)-200]},
		{"garbage-in-middle", corrupt},
		{"gzip-cut", gzCut.Bytes()[:gzCut.Len()*3/4]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Decode(bytes.NewReader(tc.in), tc.name+".json")
			if err != nil {
				t.Fatalf("Decode(%s) error: %v, want the valid part", tc.name, err)
			}
			if len(tr.Memory) == 0 || len(tr.Memory) > len(whole.Memory) {
				t.Errorf("Decode(%s) kept %d memory events, want 1..%d", tc.name, len(tr.Memory), len(whole.Memory))
			}
			t.Log(tr.Warnings)
			if len(tr.Warnings) == 0 || !strings.Contains(tr.Warnings[len(tr.Warnings)-1].Message, "lost") ||
				tr.Warnings[len(tr.Warnings)-1].Offset <= 0 {
				t.Errorf("Decode(%s).Warnings = %v, want one saying what was lost, with an offset", tc.name, tr.Warnings)
			}
		})
	}
}
