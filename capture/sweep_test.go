package capture

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// fakeMeasure models a workload whose peak is fixed + batch × slope, with
// a memory limit: a point fits when its peak is under the limit.
func fakeMeasure(fixed, slope map[string]int64, limit int64, log *[]string) func(context.Context, *Point) error {
	return func(_ context.Context, p *Point) error {
		*log = append(*log, p.ID)
		peak := fixed[p.Precision] + int64(p.Batch)*slope[p.Precision]
		if peak > limit {
			p.OOM = true
			p.OOMInfo = &OOMInfo{Message: "CUDA out of memory", Phase: "backward"}
			return nil
		}
		p.Fits = true
		p.Peak = Numbers{Allocated: peak, Requested: peak, Reserved: peak + 1<<20, Active: peak}
		p.Phases = map[string]Numbers{"backward": p.Peak}
		return nil
	}
}

func TestSweepLadderBisectSnapshots(t *testing.T) {
	cfg := SweepConfig{Out: t.TempDir(), Workload: "llama", Batches: []int{1, 2, 4, 8, 16, 32, 64},
		Precisions: []string{"fp32", "bf16"}, Bisect: true, SnapshotPrecisions: []string{"bf16"}}
	s := newSweeper(cfg, nil)
	var log []string
	const gib = 1 << 30
	// fp32: 6 GiB + 1.25 GiB/sample under 30 GiB: fits up to 19.
	// bf16: 7 GiB + 1 GiB/sample: fits up to 23.
	s.measure = fakeMeasure(map[string]int64{"fp32": 6 * gib, "bf16": 7 * gib},
		map[string]int64{"fp32": 5 * gib / 4, "bf16": gib}, 30*gib, &log)
	s.res.MemoryLimit = 30 * gib
	if err := s.sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"fp32-b1", "fp32-b2", "fp32-b4", "fp32-b8", "fp32-b16", "fp32-b32", // ladder to the first OOM
		"fp32-b24", "fp32-b20", "fp32-b18", "fp32-b19", // bisection 16..32
		"bf16-b1", "bf16-b2", "bf16-b4", "bf16-b8", "bf16-b16", "bf16-b32",
		"bf16-b24", "bf16-b20", "bf16-b22", "bf16-b23",
		"bf16-b8-safe", "bf16-b23-largest-fit", "bf16-b24-first-fail",
	}
	if !reflect.DeepEqual(log, want) {
		t.Errorf("points measured:\n%q\nwant\n%q", log, want)
	}
	r, err := ReadResults(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != len(want) {
		t.Fatalf("results.json has %d points, want %d", len(r.Points), len(want))
	}
	for i, p := range r.Points {
		if p.ID != want[i] || p.Fits == p.OOM {
			t.Errorf("results.json point %d = %s fits %v OOM %v, want %s with one outcome", i, p.ID, p.Fits, p.OOM, want[i])
		}
	}
}

func TestSweepStopsOnError(t *testing.T) {
	cfg := SweepConfig{Out: t.TempDir(), Workload: "mlp", Batches: []int{1, 2, 4}, Precisions: []string{"fp32"}, Bisect: true}
	s := newSweeper(cfg, nil)
	var log []string
	s.measure = func(_ context.Context, p *Point) error {
		log = append(log, p.ID)
		if p.Batch == 2 {
			p.Error = "exited with status 1 without a result"
			return nil
		}
		p.Fits = true
		return nil
	}
	if err := s.sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(log, []string{"fp32-b1", "fp32-b2"}) || len(s.res.Warnings) != 1 {
		t.Errorf("measured %q with warnings %q, want fp32-b1, fp32-b2 and one warning", log, s.res.Warnings)
	}
}

func TestSnapshotPoints(t *testing.T) {
	pts := func(fits []int, fails ...int) []Point {
		var ps []Point
		for _, b := range fits {
			ps = append(ps, Point{Precision: "fp32", Batch: b, Fits: true})
		}
		for _, b := range fails {
			ps = append(ps, Point{Precision: "fp32", Batch: b, OOM: true})
		}
		return ps
	}
	for i, tt := range []struct {
		points []Point
		want   string
	}{
		{pts([]int{1, 2, 4, 8, 16, 20, 22}, 32, 24, 23), "[{8 safe} {22 largest-fit} {23 first-fail}]"},
		{pts([]int{1, 2, 4}), "[{2 safe} {4 largest-fit}]"},
		{pts([]int{1}, 2), "[{1 largest-fit} {2 first-fail}]"},
		{pts(nil, 1), "[{1 first-fail}]"},
		{pts([]int{3, 4}), "[{3 safe} {4 largest-fit}]"},
	} {
		if got := fmt.Sprint(snapshotPoints(tt.points, "fp32")); got != tt.want {
			t.Errorf("snapshotPoints(case %d) = %s, want %s", i, got, tt.want)
		}
	}
}

func TestBisectSteps(t *testing.T) {
	for _, tt := range []struct{ lo, hi, want int }{{16, 32, 4}, {0, 1, 0}, {1, 2, 0}, {1, 3, 1}, {32, 64, 5}} {
		if got := bisectSteps(tt.lo, tt.hi); got != tt.want {
			t.Errorf("bisectSteps(%d, %d) = %d, want %d", tt.lo, tt.hi, got, tt.want)
		}
	}
}

// TestSweepConfigCheck: each value the harness cannot run is refused,
// naming the flag that sets it; a valid configuration passes.
func TestSweepConfigCheck(t *testing.T) {
	ok := SweepConfig{Workload: "mlp", Batches: []int{1, 2, 4}, Precisions: []string{"fp32", "bf16"}, Mode: "train",
		Optimizer: "adamw", Parallel: "ddp", Steps: 3, Warmup: 1, SnapshotPrecisions: []string{"bf16"}}
	if err := ok.Check(); err != nil {
		t.Fatalf("valid configuration: %v", err)
	}
	for _, c := range []struct {
		edit func(*SweepConfig)
		flag string
	}{
		{func(c *SweepConfig) { c.Workload = "resnet" }, "--model"},
		{func(c *SweepConfig) { c.Batches = nil }, "--batch"},
		{func(c *SweepConfig) { c.Batches = []int{4, 2} }, "--batch 4,2"},
		{func(c *SweepConfig) { c.Batches = []int{0, 2} }, "--batch"},
		{func(c *SweepConfig) { c.Precisions = []string{"fp8"} }, `--precision "fp8"`},
		{func(c *SweepConfig) { c.SnapshotPrecisions = []string{"fp16-amp"} }, "--snapshots"},
		{func(c *SweepConfig) { c.Mode = "serve" }, "--mode"},
		{func(c *SweepConfig) { c.Optimizer = "lion" }, "--optimizer"},
		{func(c *SweepConfig) { c.Parallel = "tp" }, "--parallel"},
		{func(c *SweepConfig) { c.Steps = 0 }, "--steps"},
		{func(c *SweepConfig) { c.MemoryFraction = 1.5 }, "--memory-fraction"},
		{func(c *SweepConfig) { c.MemoryFraction, c.MemoryLimit = 0.5, 1<<30 }, "not both"},
	} {
		cfg := ok
		c.edit(&cfg)
		if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("Check() = %v, want an error naming %s", err, c.flag)
		}
	}
}
