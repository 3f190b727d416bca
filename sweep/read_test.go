package sweep

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReadDir: a sweep run directory reads as its analysis, a capture run
// directory as its summary, anything else as an error naming it.
func TestReadDir(t *testing.T) {
	fx := filepath.Join("..", "fixtures")
	a, run, err := ReadDir(filepath.Join(fx, "sweep-mlp"))
	if err != nil || a == nil || run != nil || len(a.Rows) == 0 {
		t.Errorf("ReadDir(sweep-mlp) = %v, %v, %v; want the sweep's analysis", a != nil, run != nil, err)
	}
	a, run, err = ReadDir(filepath.Join(fx, "capture-ddp"))
	if err != nil || a != nil || run == nil || len(run.Ranks) != 2 {
		t.Errorf("ReadDir(capture-ddp) = %v, %v, %v; want the run's two ranks", a != nil, run != nil, err)
	}
	if _, _, err := ReadDir(filepath.Join(fx, "llama-bf16", "snapshot.pickle")); err == nil {
		t.Error("ReadDir(a snapshot file) = nil error")
	}
}

// TestCompareDirs: a sweep compared with itself has every point and fit
// unchanged; a directory that is no sweep is an error naming it.
func TestCompareDirs(t *testing.T) {
	dir := filepath.Join("..", "fixtures", "sweep-mlp")
	d, err := CompareDirs(dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Points) == 0 {
		t.Fatal("CompareDirs(self) compared no point")
	}
	for _, p := range d.Points {
		if !p.InA || !p.InB || p.Change != 0 {
			t.Errorf("CompareDirs(self) point %+v differs", p)
		}
	}
	if _, err := CompareDirs(dir, filepath.Join("..", "fixtures", "capture-ddp")); err == nil || !strings.Contains(err.Error(), "capture-ddp") {
		t.Errorf("CompareDirs(sweep, capture) = %v, want an error naming capture-ddp", err)
	}
}
