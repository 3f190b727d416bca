package capture

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/testenv"
	"github.com/memscope/memscope/snapshot"
)

// TestCaptureFakeCUDA runs memscope capture end to end with no GPU and no
// torch: testdata/faketorch is a pure-Python torch (a toy caching
// allocator behind torch.cuda, the hooks, the OOM observer, torchrun's
// python -m torch.distributed.run) on PYTHONPATH, driven by the real
// harness code path, one process and two under torchrun. Its train.py
// holds a 1 MiB weight, an output of (rank+1) × 2 MiB, a backward
// temporary of that size, a 1 MiB gradient and AdamW's two 1 MiB moments:
// every rank's peak, torch's counters and the snapshot's own, is
// 4 MiB + 4 × (rank+1) MiB, in each measured step's backward.
func TestCaptureFakeCUDA(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		testenv.Need(t, "python3 not found: the capture runner's test drives the harness with it")
	}
	abs, err := filepath.Abs(filepath.Join("testdata", "faketorch"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", abs)
	t.Setenv("PYTHONDONTWRITEBYTECODE", "1")
	script := filepath.Join(abs, "train.py")
	const MiB = 1 << 20
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
				want := int64(4+4*(r.Rank+1)) * MiB
				if r.Peak.Allocated != want {
					t.Errorf("rank %d: peak allocated %d, want %d (torch's counters)", r.Rank, r.Peak.Allocated, want)
				}
				backward := 0
				for _, row := range r.Phases {
					if row.Phase == "backward" && row.Step >= 2 && row.Step <= 5 {
						backward++
						if row.PeakAllocated != want {
							t.Errorf("rank %d step %d backward: peak allocated %d, want %d", r.Rank, row.Step, row.PeakAllocated, want)
						}
					}
				}
				if backward == 0 {
					t.Errorf("rank %d: no measured backward row in %+v", r.Rank, r.Phases)
				}
				if r.Steps == 0 || r.Files["snapshot"] != RankFile("snapshot", ".pickle", r.Rank, world) {
					t.Errorf("rank %d: %d steps, files %v", r.Rank, r.Steps, r.Files)
				}
				s, err := snapshot.Open(filepath.Join(out, r.Files["snapshot"]))
				if err != nil {
					t.Fatalf("rank %d: %v", r.Rank, err)
				}
				if tl := snapshot.Replay(s, r.Device, snapshot.ReplayOptions{}); tl.PeakAllocated.Bytes != want {
					t.Errorf("rank %d: the snapshot's peak allocated %d on device %d, want %d", r.Rank, tl.PeakAllocated.Bytes, r.Device, want)
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
			if _, err := os.Stat(filepath.Join(out, "run.json")); err != nil {
				t.Error(err)
			}
		})
	}
}
