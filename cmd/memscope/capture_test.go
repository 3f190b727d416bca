package main

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/sweep"
)

// What the capture command line turns into, without running Python.
func TestCaptureCommandLine(t *testing.T) {
	var got captureOptions
	var gotArgs []string
	runCapture = func(cc *cmdContext, o captureOptions, args []string) error {
		got, gotArgs = o, args
		return nil
	}
	defer func() { runCapture = captureRun }()
	r := runMemscope("capture", "--out", "d", "--profile-steps", "3-4", "--nproc", "2", "python", "train.py", "--out", "x", "-v")
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := []string{"python", "train.py", "--out", "x", "-v"} // flags after the command are the script's
	if !reflect.DeepEqual(gotArgs, want) || got.opts.Out != "d" || got.opts.ProfileSteps != "3-4" ||
		got.torchrun.Nproc != 2 || got.opts.MaxEntries != 1_000_000 || got.python != "python3" {
		t.Errorf("capture parsed to %+v %q, want --out d, --profile-steps 3-4, --nproc 2, command %q", got, gotArgs, want)
	}
}

func TestCaptureUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"capture"},
		{"capture", "--", "bash", "x.sh"},
		{"capture", "--rdzv-endpoint", "h:1", "--", "python", "t.py"},
		{"capture", "--max-entries", "0", "--", "python", "t.py"},
		{"capture", "--nproc", "2", "--", "torchrun", "t.py"},
	} {
		if r := runMemscope(args...); r.code != exitError || !strings.Contains(r.stderr, "capture") {
			t.Errorf("memscope %q = exit %d, stderr %q; want exit 2 and a message", args, r.code, r.stderr)
		}
	}
}

func TestCaptureExitStatus(t *testing.T) {
	// the captured script's status is memscope's
	if got := exitCode(&exitStatusError{status: 7, what: "x"}); got != 7 {
		t.Errorf("exitCode(script exited 7) = %d, want 7", got)
	}
}

func TestSweepCommandLine(t *testing.T) {
	var got *sweepOptions
	runSweep = func(cc *cmdContext, o *sweepOptions) error { got = o; return nil }
	defer func() { runSweep = sweepRun }()
	r := runMemscope("sweep", "--model", "llama", "--layers", "2", "--checkpointing", "--batch", "1,2,4",
		"--precision", "fp32,bf16", "--memory-limit", "24GiB", "--snapshots", "bf16")
	if r.err != nil {
		t.Fatal(r.err)
	}
	c := got.cfg
	if c.Workload != "llama" || !reflect.DeepEqual(c.Batches, []int{1, 2, 4}) || c.MemoryLimit != 24<<30 ||
		!reflect.DeepEqual(c.SnapshotPrecisions, []string{"bf16"}) || !c.Bisect || c.Parallel != "none" ||
		!reflect.DeepEqual(c.WorkloadArgs, []string{"--layers", "2", "--checkpointing"}) {
		t.Errorf("sweep parsed to %+v", c)
	}
	for _, args := range [][]string{
		{"sweep", "--model", "gpt"}, {"sweep", "--batch", "4,2"}, {"sweep", "--precision", "fp8"},
		{"sweep", "--mode", "eval"}, {"sweep", "--memory-limit", "lots"},
		{"sweep", "--memory-fraction", "0.5", "--memory-limit", "1GiB"}, {"sweep", "--snapshots", "fp16-amp"},
		{"sweep", "extra"},
	} {
		if r := runMemscope(args...); r.code != exitError {
			t.Errorf("memscope %q = exit %d, want 2", args, r.code)
		}
	}
}

// memscope summary --run on the fixtures made on an H200 (golden text;
// JSON checked by properties).
func TestSummaryRun(t *testing.T) {
	for _, tt := range []struct{ golden, dir string }{
		{"summary-run-sweep-llama", "../../fixtures/sweep-llama"},
		{"summary-run-sweep-mlp", "../../fixtures/sweep-mlp"},
		{"summary-run-capture-ddp", "../../fixtures/capture-ddp"},
		{"summary-run-capture-oom", "../../fixtures/capture-oom"},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			r := runMemscope("summary", "--run", tt.dir)
			if r.err != nil {
				t.Fatalf("summary --run %s: %v\n%s", tt.dir, r.err, r.stderr)
			}
			checkGolden(t, tt.golden, r.stdout)
		})
	}
	r := runMemscope("summary", "--json", "--run", "../../fixtures/sweep-llama")
	var doc struct {
		Schema    string           `json:"schema"`
		Kind      string           `json:"kind"`
		Frontiers []sweep.Frontier `json:"frontiers"`
		Fits      []sweep.Fit      `json:"fits"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Kind != "sweep" || len(doc.Frontiers) != 2 ||
		doc.Frontiers[1].LargestFit != 20 || len(doc.Fits) != 2 {
		t.Errorf("summary --json --run sweep-llama: %v, %+v", err, doc)
	}
	r = runMemscope("summary", "--json", "--run", "../../fixtures/capture-ddp")
	var run struct {
		Kind   string            `json:"kind"`
		Spread *sweep.RankSpread `json:"worst_rank"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &run); err != nil || run.Kind != "capture" || run.Spread == nil || run.Spread.Rank != 1 {
		t.Errorf("summary --json --run capture-ddp: %v, %+v", err, run)
	}
	for _, args := range [][]string{
		{"summary"},
		{"summary", "--run", "../../fixtures/capture-ddp", "x.pickle"},
		{"summary", "--run", "../../fixtures/nope"},
		{"summary", "--run", "../../fixtures/mlp-adamw"},
	} {
		if r := runMemscope(args...); r.code != exitError {
			t.Errorf("memscope %q = exit %d, want 2", args, r.code)
		}
	}
}

// The OOM that ended the captured script is in its snapshot, and memscope
// oom reports it with the request the allocator's OOM observer saw; so is
// the OOM of the sweep's first failing batch.
func TestCaptureOOMFixture(t *testing.T) {
	a, err := capture.ReadRun("../../fixtures/capture-oom")
	if err != nil {
		t.Fatal(err)
	}
	want := a.Ranks[0].OOM[0].Request // torch's OOM observer, in the same process
	for _, snap := range []string{"snapshot.pickle", "../sweep-llama/points/bf16-b21-first-fail/snapshot.pickle"} {
		r := runMemscope("oom", "--json", "../../fixtures/capture-oom/"+snap)
		var doc struct {
			Files []struct {
				Devices []struct {
					Request int64 `json:"request"`
				} `json:"devices"`
			} `json:"files"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Files) != 1 || len(doc.Files[0].Devices) != 1 {
			t.Fatalf("memscope oom --json %s: %v\n%s", snap, err, r.stderr)
		}
		got := doc.Files[0].Devices[0].Request
		if snap != "snapshot.pickle" {
			var pt struct {
				OOMObserver []struct{ Request int64 } `json:"oom_observer"`
			}
			b := readFile(t, "../../fixtures/sweep-llama/points/bf16-b21-first-fail/point.json")
			if err := json.Unmarshal(b, &pt); err != nil || len(pt.OOMObserver) == 0 {
				t.Fatal(err)
			}
			want = pt.OOMObserver[0].Request
		}
		// The observer reports the size of the segment it tried to map:
		// large requests rounded up to 2 MiB (256 MiB is already round).
		const seg = 2 << 20
		if (got+seg-1)/seg*seg != want {
			t.Errorf("memscope oom %s: request %d, want %d (the OOM observer's) rounded down to 2 MiB", snap, got, want)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
