package capture

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureFakeCUDA runs memscope capture end to end on CPU: a real
// torch (any version from 1.13) with torch.cuda replaced by the stand-in in
// testdata/fakecuda, one process and two under torchrun with gloo. It needs
// a Python with torch, named by MEMSCOPE_TEST_TORCH_PYTHON (e.g.
// /usr/bin/python3 with Debian's python3-torch); without it, it is skipped,
// under CI too: CI installs no torch, so this test is an explicit opt-in.
func TestCaptureFakeCUDA(t *testing.T) {
	python := os.Getenv("MEMSCOPE_TEST_TORCH_PYTHON")
	if python == "" {
		t.Skip("MEMSCOPE_TEST_TORCH_PYTHON is not set: an explicit opt-in for a Python with torch (e.g. Debian's python3-torch); CI has none, so this never runs there")
	}
	abs, err := filepath.Abs(filepath.Join("testdata", "fakecuda"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("MEMSCOPE_FAKE_CUDA", "1")
	t.Setenv("PYTHONPATH", abs)
	t.Setenv("PYTHONDONTWRITEBYTECODE", "1")
	script := filepath.Join(abs, "train.py")
	for _, tt := range []struct {
		name      string
		args      []string
		nproc     int
		status    int
		exception string
		oomFile   bool // snapshot.oom.pickle: only for an OOM the script survived
	}{
		{"exit code", []string{"--steps", "7", "--exit-code", "5"}, 0, 5, "", false},
		{"raises", []string{"--raise"}, 0, 1, "RuntimeError", false},
		{"oom escapes", []string{"--oom"}, 0, 1, "OutOfMemoryError", false},
		{"oom survived", []string{"--oom", "--survive"}, 0, 0, "", true},
		{"two ranks", []string{"--steps", "7"}, 2, 0, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			status, err := Capture(context.Background(), CaptureConfig{
				Python:   python,
				Command:  append([]string{python, script}, tt.args...),
				Options:  CaptureOptions{Out: out, MaxEntries: 1000, Stacks: "python", MeasureSteps: "2-5"},
				Torchrun: Torchrun{Nproc: tt.nproc, NodeRank: -1},
				Stdout:   &stdout, Stderr: &stderr,
			})
			if err != nil || status != tt.status {
				t.Fatalf("Capture = %d, %v, want %d, nil\nstderr:\n%s", status, err, tt.status, stderr.String())
			}
			a, err := ReadRun(out)
			if err != nil {
				t.Fatal(err)
			}
			world := max(tt.nproc, 1)
			if a.Run == nil || a.Run.ExitCode != tt.status || len(a.Ranks) != world {
				t.Fatalf("ReadRun: run %+v, %d ranks; want exit %d and %d ranks", a.Run, len(a.Ranks), tt.status, world)
			}
			for _, r := range a.Ranks {
				if r.Steps == 0 || len(r.Phases) == 0 || r.Files["snapshot"] != RankFile("snapshot", ".pickle", r.Rank, world) {
					t.Errorf("rank %d: %d steps, %d phase rows, files %v", r.Rank, r.Steps, len(r.Phases), r.Files)
				}
				if _, err := os.Stat(filepath.Join(out, r.Files["snapshot"])); err != nil {
					t.Error(err)
				}
				got := ""
				if r.Exception != nil {
					got = r.Exception.Type
				}
				if got != tt.exception {
					t.Errorf("rank %d exception %q, want %q", r.Rank, got, tt.exception)
				}
				if _, ok := r.Files["snapshot_oom"]; ok != tt.oomFile {
					t.Errorf("rank %d files %v: snapshot_oom present %v, want %v", r.Rank, r.Files, ok, tt.oomFile)
				}
				if oom := len(r.OOM) > 0; oom != strings.Contains(tt.name, "oom") {
					t.Errorf("rank %d: %d OOM observer calls recorded", r.Rank, len(r.OOM))
				}
			}
			for _, r := range a.Ranks[:len(a.Ranks)-1] {
				if last := a.Ranks[len(a.Ranks)-1]; r.Peak.Allocated >= last.Peak.Allocated {
					t.Errorf("rank %d peak %d ≥ the last rank's %d; the stand-in makes the last the highest",
						r.Rank, r.Peak.Allocated, last.Peak.Allocated)
				}
			}
		})
	}
}
