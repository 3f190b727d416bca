package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: a write that completes replaces the file and returns its
// size; one that fails leaves the old file as it was and no temporary
// beside it.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(name, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := Write(name, func(w io.Writer) error { _, err := io.WriteString(w, "new content"); return err })
	if b, _ := os.ReadFile(name); err != nil || n != 11 || string(b) != "new content" {
		t.Fatalf("Write = %d, %v; file %q; want 11, nil, the new content", n, err, b)
	}
	boom := errors.New("render failed")
	if _, err := Write(name, func(w io.Writer) error { io.WriteString(w, "half"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("Write(failing) error = %v, want %v", err, boom)
	}
	if b, _ := os.ReadFile(name); string(b) != "new content" {
		t.Errorf("after a failed write the file holds %q, want the old content", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries in the folder, want the file alone (no temporary left)", len(ents))
	}
}

func TestOverwrites(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pickle")
	if err := os.WriteFile(in, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.pickle")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.pickle")
	if err := os.WriteFile(other, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		inputs []string
		want   string
		ok     bool
	}{
		{filepath.Join(dir, "new.html"), []string{in}, "", false}, // not there yet
		{other, []string{"", in, filepath.Join(dir, "missing")}, "", false},
		{in, []string{other, "", in}, in, true},
		{link, []string{other, in}, in, true}, // the same file by another name
		{dir, []string{in, dir + "/."}, dir + "/.", true},
	} {
		got, ok := Overwrites(tt.name, tt.inputs...)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Overwrites(%s, %q) = %q, %v; want %q, %v", filepath.Base(tt.name), tt.inputs, got, ok, tt.want, tt.ok)
		}
	}
}
