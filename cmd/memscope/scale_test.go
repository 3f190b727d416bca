package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// writeSnap pickles s into a temporary file, as torch would write it.
func writeSnap(t testing.TB, s *snapshot.Snapshot) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snapshot.pickle")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapgen.Write(f, s, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A rising staircase of 4,000 harness steps: the budget attributed what
// was live at every step's phase peak, since each beat the one before
// (8.7 s at 3,000 steps before). Every phase peaks highest in the last
// step, at n × 2 MiB: n-1 blocks leaked and the activation in forward and
// on entry to backward, n leaked in the optimizer.
func TestScaleBudgetStaircase(t *testing.T) {
	const n = 4000
	path := writeSnap(t, snapgen.Staircase(n))
	res := runBudgetJSON(t, "--config", "../../budget/testdata/llama-3.2-1b.json", "--batch", "4", "--seq", "4096", "--snapshot", path)
	if res.Result.Measured == nil {
		t.Fatal("no measured phases")
	}
	want := map[string]int64{"forward": n * 2 << 20, "backward": n * 2 << 20, "optimizer": n * 2 << 20}
	seen := 0
	for _, c := range res.Result.Measured.Phases {
		if w, ok := want[c.Phase]; ok {
			seen++
			if c.Measured != w || c.Step != n-1 {
				t.Errorf("%s: measured %d at step %d, want %d at step %d", c.Phase, c.Measured, c.Step, w, n-1)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("measured phases %+v, want forward, backward and optimizer", res.Result.Measured.Phases)
	}
}

// 30,000 segments allocated and freed, through the command: 'peak' on the
// pickle (2 s at 10,000 before).
func TestScalePeakManySegments(t *testing.T) {
	const n = 30_000
	path := writeSnap(t, snapgen.ManySegments(n))
	r := runMemscope("peak", "--json", path)
	if r.err != nil {
		t.Fatalf("memscope peak: %v\n%s", r.err, r.stderr)
	}
	var doc struct {
		Files []struct {
			Devices []struct {
				Numbers struct {
					Allocated int64 `json:"allocated"`
					Reserved  int64 `json:"reserved"`
				} `json:"numbers"`
				Sites []struct {
					Blocks int `json:"blocks"`
				} `json:"sites"`
			} `json:"devices"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("decoding the JSON: %v", err)
	}
	if len(doc.Files) != 1 || len(doc.Files[0].Devices) != 1 || len(doc.Files[0].Devices[0].Sites) != 1 {
		t.Fatalf("want one file, device and site in %s…", r.stdout[:min(len(r.stdout), 300)])
	}
	dev := doc.Files[0].Devices[0]
	if dev.Sites[0].Blocks != n {
		t.Errorf("%d blocks live at the peak, want %d", dev.Sites[0].Blocks, n)
	}
	p := dev.Numbers
	if p.Allocated != n*2<<20 || p.Reserved != n*4<<20 {
		t.Errorf("peak allocated %d, reserved %d; want %d, %d", p.Allocated, p.Reserved, n*2<<20, n*4<<20)
	}
}

// whatifRun is what 'memscope whatif --json' says of a one-device
// snapshot: the replay check and the run under the recorded settings.
type whatifRun struct {
	Checked, Matched   int   `json:"-"` // the replay check's decisions
	PeakReserved       int64 `json:"peak_reserved"`
	PeakAllocated      int64 `json:"peak_allocated"`
	PeakSegments       int   `json:"peak_segments"`
	InactiveSplit      int   `json:"inactive_split"`
	InactiveSplitBytes int64 `json:"inactive_split_bytes"`
	EmptyCaches        int   `json:"empty_caches"`
	Requests           int   `json:"requests"`
}

// recordedWhatif runs 'memscope whatif --json' on path, which must hold one
// device, and returns its check and recorded-settings run.
func recordedWhatif(t *testing.T, path string) whatifRun {
	t.Helper()
	r := runMemscope("whatif", "--json", path)
	if r.err != nil {
		t.Fatalf("memscope whatif: %v\n%s", r.err, r.stderr)
	}
	var doc struct {
		Files []struct {
			Devices []struct {
				Replay struct {
					Checked, Matched int
				} `json:"replay"`
				Runs []whatifRun `json:"runs"`
			} `json:"devices"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("decoding the JSON: %v", err)
	}
	if len(doc.Files) != 1 || len(doc.Files[0].Devices) != 1 || len(doc.Files[0].Devices[0].Runs) != 1 {
		t.Fatalf("want one file, device and run in %s…", r.stdout[:min(len(r.stdout), 300)])
	}
	d := doc.Files[0].Devices[0]
	run := d.Runs[0]
	run.Checked, run.Matched = d.Replay.Checked, d.Replay.Matched
	return run
}

// 60,000 segments, each split by a block that stays live, through the
// command: every alloc raises the reserved peak, where the what-if counted
// the free blocks of split segments by walking its free sets (2.7 s at
// 20,000 before, quadratic). The recorded settings' run must match the
// recording: every decision, and the numbers SplitSegments documents.
func TestScaleWhatIfSplitSegments(t *testing.T) {
	const n = 60_000
	run := recordedWhatif(t, writeSnap(t, snapgen.SplitSegments(n)))
	if run.Checked != 2*n || run.Matched != 2*n {
		t.Errorf("the replay matched %d of %d decisions, want %d of %d", run.Matched, run.Checked, 2*n, 2*n)
	}
	if run.PeakReserved != n*12<<20 || run.PeakAllocated != n*21<<19 || run.PeakSegments != n ||
		run.InactiveSplit != n || run.InactiveSplitBytes != n*3<<19 {
		t.Errorf("recorded settings: peak reserved %d, allocated %d, %d segments, inactive split %d (%d bytes); want %d, %d, %d, %d (%d)",
			run.PeakReserved, run.PeakAllocated, run.PeakSegments, run.InactiveSplit, run.InactiveSplitBytes,
			n*12<<20, n*21<<19, n, n, n*3<<19)
	}
}

// 160,000 segments allocated and freed, through whatif: each segment_free
// the trace shows between a free and the next free is an empty_cache()
// the what-if makes, where release_blocks read the whole free set (14.1 s
// before, quadratic). The recorded settings' model keeps ten blocks to a
// 20 MiB segment, one of them live to the end, so every one of its free
// blocks is part of a split segment.
func TestScaleWhatIfManySegments(t *testing.T) {
	const n = 160_000
	run := recordedWhatif(t, writeSnap(t, snapgen.ManySegments(n)))
	// Every block is live at once after the allocs; the frees of all but
	// every tenth follow, each with its segment_free, the last at the
	// trace's end.
	if frees := n - n/10; run.PeakAllocated != n*2<<20 || run.EmptyCaches != frees || run.Requests != n {
		t.Errorf("recorded settings: peak allocated %d, %d empty_cache calls, %d requests; want %d, %d, %d",
			run.PeakAllocated, run.EmptyCaches, run.Requests, n*2<<20, frees, n)
	}
}

// BenchmarkScaleBudget is 'memscope budget --snapshot' on staircases of
// rising length, through run (decode included):
//
//	go test ./cmd/memscope -run '^$' -bench ScaleBudget -benchtime 3x
func BenchmarkScaleBudget(b *testing.B) {
	for _, n := range []int{1000, 4000, 16000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "snapshot.pickle")
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := snapgen.Write(f, snapgen.Staircase(n), 0); err != nil {
				b.Fatal(err)
			}
			f.Close()
			b.ReportAllocs()
			for b.Loop() {
				r := runMemscope("budget", "--json", "--config", "../../budget/testdata/llama-3.2-1b.json",
					"--batch", "4", "--seq", "4096", "--snapshot", path)
				if r.err != nil {
					b.Fatal(r.err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}
