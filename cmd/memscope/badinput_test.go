package main

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadSnapshot: unreadable input gives exit status 2 and one line naming
// the file and the byte offset, never a panic.
func TestBadSnapshot(t *testing.T) {
	dir := t.TempDir()
	fixture, err := os.ReadFile("../../fixtures/mlp-adamw/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	random := make([]byte, 1<<16)
	rand.New(rand.NewSource(7)).Read(random)
	files := map[string][]byte{
		"empty.pickle":     {},
		"truncated.pickle": fixture[:len(fixture)/2],
		"random.bin":       random,
		// pickle.dumps(collections.OrderedDict) at protocol 4: a class reference
		"global.pickle": []byte("\x80\x04\x95\x1e\x00\x00\x00\x00\x00\x00\x00\x8c\x0bcollections\x94\x8c\x0bOrderedDict\x94\x93\x94."),
		// BINUNICODE8 claiming 2^40 bytes
		"huge.pickle": []byte("\x80\x04\x8d\x00\x00\x00\x00\x00\x01\x00\x00abc"),
	}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			r := runMemscope("summary", path)
			if r.code != 2 || r.err == nil {
				t.Fatalf("summary %s: exit %d, err %v; want exit 2 with an error", name, r.code, r.err)
			}
			msg := r.err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, path) || !strings.Contains(msg, "byte") {
				t.Errorf("summary %s: error %q; want one line naming the file and a byte offset", name, msg)
			}
		})
	}
}
