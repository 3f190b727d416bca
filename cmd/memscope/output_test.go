package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/memscope/memscope/internal/atomicfile"
)

// fullDisk is a writer that fails with ENOSPC once n bytes were written.
type fullDisk struct {
	w io.Writer
	n int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	if len(p) > d.n {
		k, _ := d.w.Write(p[:d.n])
		d.n = 0
		return k, &os.PathError{Op: "write", Path: "out", Err: syscall.ENOSPC}
	}
	d.n -= len(p)
	return d.w.Write(p)
}

// TestOutputAtomic: report and pprof write -o through a temporary file
// renamed once complete. On a disk that fills up halfway the old file
// is intact, no temporary file is left, and the command fails naming the
// file; a target that is the command's input is refused before anything is
// written.
func TestOutputAtomic(t *testing.T) {
	const fixture = "../../fixtures/mlp-adamw/snapshot.pickle"
	dir := t.TempDir()
	snap := filepath.Join(dir, "snap.pickle")
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snap, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"report", "pprof"} {
		t.Run(cmd, func(t *testing.T) {
			out := filepath.Join(dir, cmd+".out")
			if r := runMemscope(cmd, "-o", out, snap); r.err != nil {
				t.Fatalf("%s: %v", cmd, r.err)
			}
			old, err := os.ReadFile(out)
			if err != nil || len(old) < 1<<10 {
				t.Fatalf("%s wrote %d bytes (%v); want more than 1 KiB to cut", cmd, len(old), err)
			}
			if st, _ := os.Stat(out); st.Mode().Perm() != 0o644 {
				t.Errorf("%s: mode %v, want 0644", out, st.Mode().Perm())
			}

			atomicfile.Fault = func(w io.Writer) io.Writer { return &fullDisk{w: w, n: len(old) / 2} }
			r := runMemscope(cmd, "-o", out, snap)
			atomicfile.Fault = nil
			if r.err == nil || !strings.Contains(r.err.Error(), "no space left on device") || !strings.Contains(r.err.Error(), out) {
				t.Fatalf("%s on a full disk: exit %d, err %v; want an error naming %s and the full disk", cmd, r.code, r.err, out)
			}
			if now, _ := os.ReadFile(out); !bytes.Equal(now, old) {
				t.Errorf("%s on a full disk: %s changed (%d bytes, was %d)", cmd, out, len(now), len(old))
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp-*")); len(left) > 0 {
				t.Errorf("%s on a full disk: temporary files left: %v", cmd, left)
			}

			r = runMemscope(cmd, "-o", snap, snap)
			if r.code != 2 || r.err == nil || !strings.Contains(r.err.Error(), "an input of this command: refusing to write over it") {
				t.Errorf("%s -o %s %s: exit %d, err %v; want 2, refusing to write over the input", cmd, snap, snap, r.code, r.err)
			}
			if now, _ := os.ReadFile(snap); !bytes.Equal(now, data) {
				t.Errorf("%s -o over its input: the input changed", cmd)
			}
		})
	}
	// The same file by another name is the same input.
	link := filepath.Join(dir, "link.pickle")
	if err := os.Link(snap, link); err == nil {
		if r := runMemscope("report", "-o", link, snap); r.code != 2 {
			t.Errorf("report -o (a hard link to the input): exit %d, want 2", r.code)
		}
	}
}
