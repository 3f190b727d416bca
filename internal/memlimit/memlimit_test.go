package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/memscope/memscope/snapshot"
	"github.com/memscope/memscope/trace"
)

func TestLimiterAdd(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, size int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := file("a.pickle", 3<<20), file("b.json", 5<<20)
	snapA := snapshot.DefaultMaxMemory(3<<20, false)
	traceB := trace.DefaultMaxMemory(5<<20, false)
	limit := func(n int64) int64 { return max(n-outside, n/2) }

	var set []int64
	l := Limiter{set: func(n int64) int64 { set = append(set, n); return 0 }}
	steps := []struct {
		name      string
		maxMemory int64
		path      string
		kind      Kind
		want      int64
	}{
		{"a snapshot", 0, a, Snapshot, limit(snapA)},
		{"a trace on top", 0, b, Trace, limit(snapA + traceB)},
		{"a pipe adds nothing", 0, "/dev/stdin", Snapshot, 0},
		{"a missing file adds nothing", 0, filepath.Join(dir, "none"), Snapshot, 0},
		{"--max-memory is the whole process's", 8 << 30, a, Snapshot, limit(8 << 30)},
		{"--max-memory small: half of it at least", 30 << 20, b, Trace, 15 << 20},
	}
	var wantSet []int64
	for _, s := range steps {
		if got := l.Add(s.maxMemory, s.path, s.kind); got != s.want {
			t.Errorf("%s: Add(%d, %s, %d) = %d, want %d", s.name, s.maxMemory, filepath.Base(s.path), s.kind, got, s.want)
		}
		if s.want != 0 {
			wantSet = append(wantSet, s.want)
		}
	}
	if len(set) != len(wantSet) {
		t.Fatalf("limits set %v, want %v", set, wantSet)
	}
	for i := range set {
		if set[i] != wantSet[i] {
			t.Errorf("limit set %d = %d, want %d", i, set[i], wantSet[i])
		}
	}
}

func TestAddWithoutHold(t *testing.T) {
	if hold {
		t.Fatal("hold set before any Hold")
	}
	before := debug.SetMemoryLimit(-1)
	Add(1<<30, "", Snapshot)
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("Add without Hold set the memory limit to %d (was %d)", after, before)
	}
}

func TestGCPace(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	for _, tt := range []struct {
		name string
		fn   func()
		want int
	}{{"Keep", Keep, 300}, {"Churn", Churn, 100}} {
		debug.SetGCPercent(50)
		tt.fn()
		if got := debug.SetGCPercent(50); got != tt.want {
			t.Errorf("%s: GC percent %d, want %d", tt.name, got, tt.want)
		}
	}
	t.Setenv("GOGC", "200") // the user's wins
	debug.SetGCPercent(50)
	Keep()
	if got := debug.SetGCPercent(50); got != 50 {
		t.Errorf("Keep under GOGC=200: GC percent %d, want 50 (left alone)", got)
	}
}
