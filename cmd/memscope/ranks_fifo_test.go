package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/report"
)

// TestRanksFIFO: a named pipe among the rank files of a directory, or
// matched by ranks' own pattern, is skipped with why and never opened (no
// process writes to it: an open would wait forever); the other ranks are
// read. Named on its own, ranks waits attribution.PipeWait for a writer and then
// skips it saying so.
func TestRanksFIFO(t *testing.T) {
	dir := rankSet(t, 3, -1)
	fifo := filepath.Join(dir, "snapshot.rank3.pickle")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	other := t.TempDir()
	for i, p := range []string{"snapshot.rank0.pickle", "snapshot.rank1.pickle"} {
		b, _ := os.ReadFile(filepath.Join(dir, p))
		os.WriteFile(filepath.Join(other, []string{"a.rank0.pickle", "b.rank1.pickle"}[i]), b, 0o644)
	}
	if err := syscall.Mkfifo(filepath.Join(other, "rank2.pickle"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(other, "rank3.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := attribution.PipeWait
	attribution.PipeWait = 200 * time.Millisecond
	defer func() { attribution.PipeWait = old }()
	for _, c := range []struct {
		name  string
		args  []string
		ranks int
		fifos []string
	}{
		{"capture-style directory", []string{dir}, 3, []string{fifo}},
		{"plain directory", []string{other}, 2, []string{filepath.Join(other, "rank2.pickle"), filepath.Join(other, "rank3.json")}},
		{"pattern", []string{filepath.Join(other, "rank*")}, 0, []string{filepath.Join(other, "rank2.pickle"), filepath.Join(other, "rank3.json")}},
		{"named on its own", []string{filepath.Join(dir, "snapshot.rank0.pickle"), fifo}, 1, []string{fifo}},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan runResult, 1)
			go func() { done <- runMemscope(append([]string{"ranks", "--json"}, c.args...)...) }()
			var r runResult
			select {
			case r = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatalf("ranks %q still waits on the FIFO after 2 minutes", c.args)
			}
			if c.ranks == 0 {
				if r.code != 2 || !strings.Contains(r.stderr, "named pipe") {
					t.Errorf("ranks %q: exit %d, stderr %q; want exit 2 naming the named pipes", c.args, r.code, r.stderr)
				}
				return
			}
			var doc report.ResultDoc[report.RanksJSON]
			if err := json.Unmarshal([]byte(r.stdout), &doc); r.code != 0 || err != nil {
				t.Fatalf("ranks %q: exit %d, %v\n%s", c.args, r.code, err, r.stderr)
			}
			if len(doc.Result.Ranks) != c.ranks || len(doc.Result.Skipped) != len(c.fifos) {
				t.Fatalf("ranks %q: %d ranks, skipped %q; want %d ranks and %q skipped", c.args, len(doc.Result.Ranks), doc.Result.Skipped, c.ranks, c.fifos)
			}
			for i, f := range c.fifos {
				s := doc.Result.Skipped[i]
				if !strings.HasPrefix(s, f+": a named pipe (FIFO)") {
					t.Errorf("skipped[%d] = %q, want %s named as a named pipe", i, s, f)
				}
				if c.name == "named on its own" && !strings.Contains(s, "no process wrote to it within 200ms") {
					t.Errorf("skipped[%d] = %q, want the wait it gave up after", i, s)
				}
			}
		})
	}
}
