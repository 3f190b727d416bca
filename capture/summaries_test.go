package capture

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffPath: a file stands for itself, a capture run directory for its
// snapshot (rank 0's of several), a sweep's is a sweep, any other
// directory an error naming it.
func TestDiffPath(t *testing.T) {
	fx := filepath.Join("..", "fixtures")
	empty := t.TempDir()
	for _, c := range []struct {
		path, snap string
		sweep      bool
		wantErr    string
	}{
		{filepath.Join(fx, "llama-bf16", "snapshot.pickle"), filepath.Join(fx, "llama-bf16", "snapshot.pickle"), false, ""},
		{filepath.Join(fx, "capture-train"), filepath.Join(fx, "capture-train", "snapshot.pickle"), false, ""},
		{filepath.Join(fx, "capture-ddp"), filepath.Join(fx, "capture-ddp", "snapshot.rank0.pickle"), false, ""},
		{filepath.Join(fx, "sweep-mlp"), "", true, ""},
		{empty, "", false, empty + ": a directory with neither results.json"},
		{filepath.Join(empty, "none"), "", false, "no such file"},
	} {
		snap, sweep, err := DiffPath(c.path)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("DiffPath(%s) = %v, want an error containing %q", c.path, err, c.wantErr)
			}
			continue
		}
		if err != nil || snap != c.snap || sweep != c.sweep {
			t.Errorf("DiffPath(%s) = %q, %v, %v; want %q, %v", c.path, snap, sweep, err, c.snap, c.sweep)
		}
	}
	if got := RunTrace(filepath.Join(fx, "capture-train")); got != filepath.Join(fx, "capture-train", "trace.json.gz") {
		t.Errorf("RunTrace(capture-train) = %q, want its trace.json.gz", got)
	}
	if got := RunTrace(filepath.Join(fx, "capture-ddp")); got != "" {
		t.Errorf("RunTrace(capture-ddp) = %q, want none", got)
	}
}

// TestWriteRankSummaries: on a copy of the two-rank capture, each rank's
// summary is what summarize made of its own snapshot, named by rank; a
// rank summarize fails on is named in the errors and written nowhere.
func TestWriteRankSummaries(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "fixtures", "capture-ddp")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	errs := WriteRankSummaries(dir, func(snap string) ([]byte, error) {
		if strings.HasSuffix(snap, "rank1.pickle") {
			return nil, errors.New("unreadable")
		}
		return []byte(filepath.Base(snap)), nil
	})
	if b, err := os.ReadFile(filepath.Join(dir, "summary.rank0.json")); err != nil || string(b) != "snapshot.rank0.pickle" {
		t.Errorf("summary.rank0.json = %q, %v; want rank 0's summary", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.rank1.json")); err == nil {
		t.Error("summary.rank1.json written for a rank whose summary failed")
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "snapshot.rank1.pickle: no summary written: unreadable") {
		t.Errorf("WriteRankSummaries errors = %v, want rank 1's", errs)
	}
	if errs := WriteRankSummaries(t.TempDir(), nil); len(errs) != 1 || !strings.Contains(errs[0].Error(), "no rank summaries written") {
		t.Errorf("WriteRankSummaries(not a run) = %v, want one error", errs)
	}
}
