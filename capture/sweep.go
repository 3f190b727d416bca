package capture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memscope/memscope/internal/units"
)

// SweepConfig is one memscope sweep.
type SweepConfig struct {
	Python       string
	Out          string
	Workload     string   // mlp, llama, vit or pkg.module:factory
	WorkloadArgs []string // harness point flags for the workload (--layers 12 …)
	Batches      []int    // the ladder, ascending
	Precisions   []string // fp32, bf16, fp16-amp
	Mode         string   // train or infer
	Optimizer    string   // adamw or sgd
	MicroBatch   int
	Warmup       int
	Steps        int
	// MemoryFraction caps each process (0: no cap); MemoryLimit, when set,
	// is turned into a fraction of the device's memory.
	MemoryFraction float64
	MemoryLimit    int64
	Bisect         bool
	// SnapshotPrecisions are the precisions whose three points (safe,
	// largest that fits, first that fails) are re-run with recording on.
	SnapshotPrecisions []string
	SnapshotSteps      int  // measured steps at the snapshot points; 0: Steps (so an OOM after a few steps recurs)
	Profile            bool // a profiler trace at the snapshot points too
	MaxEntries         int
	NeutralPaths       bool
	Torchrun           Torchrun
	Parallel           string // none, ddp, fsdp (with Torchrun.Nproc > 1)
	Command            []string
}

// Precisions the harness knows, in the order tables list them.
var Precisions = []string{"fp32", "bf16", "fp16-amp"}

// Check reports the first value of c the harness cannot run, naming the
// flag that sets it.
func (c *SweepConfig) Check() error {
	if SplitWorkload(c.Workload) == "" {
		return fmt.Errorf("--model %q: want mlp, llama, vit or pkg.module:factory", c.Workload)
	}
	if len(c.Batches) == 0 {
		return errors.New("--batch: want at least one batch size")
	}
	for i, b := range c.Batches {
		if b <= 0 || i > 0 && b <= c.Batches[i-1] {
			return fmt.Errorf("--batch %s: want positive sizes in ascending order", joinInts(c.Batches))
		}
	}
	for _, p := range c.Precisions {
		if !slices.Contains(Precisions, p) {
			return fmt.Errorf("--precision %q: want %s", p, strings.Join(Precisions, ", "))
		}
	}
	for _, p := range c.SnapshotPrecisions {
		if !slices.Contains(c.Precisions, p) {
			return fmt.Errorf("--snapshots %q: not one of the --precision list", p)
		}
	}
	switch {
	case c.Mode != "train" && c.Mode != "infer":
		return fmt.Errorf("--mode %q: want train or infer", c.Mode)
	case c.Optimizer != "adamw" && c.Optimizer != "sgd":
		return fmt.Errorf("--optimizer %q: want adamw or sgd", c.Optimizer)
	case c.Parallel != "ddp" && c.Parallel != "fsdp" && c.Parallel != "none":
		return fmt.Errorf("--parallel %q: want ddp, fsdp or none", c.Parallel)
	case c.Steps <= 0 || c.Warmup < 0 || c.MicroBatch < 0 || c.Torchrun.Nproc < 0:
		return errors.New("--steps must be positive; --warmup, --micro-batch and --nproc not negative")
	case c.MemoryFraction < 0 || c.MemoryFraction > 1:
		return fmt.Errorf("--memory-fraction %g: want a fraction in (0, 1]", c.MemoryFraction)
	case c.MemoryFraction > 0 && c.MemoryLimit > 0:
		return errors.New("give --memory-fraction or --memory-limit, not both")
	}
	return nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// sweeper runs one sweep. measure runs one point and fills it in; tests
// replace it.
type sweeper struct {
	cfg      SweepConfig
	res      *Results
	python   string
	harness  string
	progress Progress
	start    time.Time
	done     int
	total    int
	measure  func(ctx context.Context, p *Point) error
}

// Sweep runs the batch-size sweep cfg describes, each point in a fresh
// process, writing results.json after every point, and returns the results.
// Progress goes to progress, one line per point. err is set when the sweep
// could not start (no Python, torch, CUDA or workload; an unwritable
// directory) or was interrupted; points that crash are results with an
// error, and stop their precision's ladder.
func Sweep(ctx context.Context, cfg SweepConfig, progress Progress) (*Results, error) {
	python, err := LookPython(cfg.Python)
	if err != nil {
		return nil, err
	}
	harness, cleanup, err := WriteHarness()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	check, err := Preflight(ctx, python, harness, cfg.Workload, cfg.Torchrun.Nproc)
	if err != nil {
		return nil, err
	}
	if err := PrepareRunDir(cfg.Out); err != nil {
		return nil, err
	}
	s := newSweeper(cfg, progress)
	s.python, s.harness = python, harness
	s.measure = s.runPoint
	s.res.Torch, s.res.Python = check.Torch, check.Python
	if len(check.Devices) > 0 {
		s.res.Device = check.Devices[0]
	}
	if cfg.MemoryLimit > 0 {
		if s.res.Device.Total <= 0 {
			return nil, fmt.Errorf("--memory-limit: the device's total memory is unknown")
		}
		s.cfg.MemoryFraction = float64(cfg.MemoryLimit) / float64(s.res.Device.Total)
		if s.cfg.MemoryFraction > 1 {
			return nil, &UsageError{fmt.Errorf("--memory-limit %s is more than the device's %s",
				units.Bytes(cfg.MemoryLimit), units.Bytes(s.res.Device.Total))}
		}
	}
	s.res.MemoryFraction = s.cfg.MemoryFraction
	s.res.MemoryLimit = s.res.Device.Total
	if s.cfg.MemoryFraction > 0 {
		s.res.MemoryLimit = int64(s.cfg.MemoryFraction * float64(s.res.Device.Total))
	}
	if progress != nil {
		progress.SweepStarted(cfg, check, s.res.MemoryLimit)
	}
	return s.res, s.sweep(ctx)
}

func newSweeper(cfg SweepConfig, progress Progress) *sweeper {
	s := &sweeper{cfg: cfg, progress: progress, start: time.Now()}
	s.res = &Results{Schema: ResultsSchema, Workload: WorkloadInfo{Name: cfg.Workload, Options: cfg.WorkloadArgs},
		Mode: cfg.Mode, Optimizer: cfg.Optimizer, MicroBatch: cfg.MicroBatch, Warmup: cfg.Warmup,
		Steps: cfg.Steps, Nproc: max(cfg.Torchrun.Nproc, 1), Parallel: cmp(cfg.Parallel, "none"),
		Ladder: cfg.Batches, Precisions: cfg.Precisions, Bisect: cfg.Bisect, Command: cfg.Command,
		Started: s.start.UTC().Truncate(time.Second), MemoryFraction: cfg.MemoryFraction,
		Points: []Point{}, Warnings: []string{}}
	s.total = len(cfg.Batches)*len(cfg.Precisions) + 3*len(cfg.SnapshotPrecisions)
	return s
}

func (s *sweeper) sweep(ctx context.Context) error {
	for _, prec := range s.cfg.Precisions {
		if err := s.ladder(ctx, prec); err != nil {
			return err
		}
	}
	for _, prec := range s.cfg.SnapshotPrecisions {
		for _, sp := range snapshotPoints(s.res.Points, prec) {
			if _, err := s.point(ctx, prec, sp.batch, StageSnapshot, sp.role); err != nil {
				return err
			}
		}
	}
	s.res.WallS = time.Since(s.start).Seconds()
	return WriteResults(s.cfg.Out, s.res)
}

// ladder measures one precision up the batch ladder until the first OOM,
// then bisects between the last batch that fit and the first that failed.
// A point that crashes stops the precision.
func (s *sweeper) ladder(ctx context.Context, prec string) error {
	lastFit, firstFail := 0, 0
	for i, b := range s.cfg.Batches {
		p, err := s.point(ctx, prec, b, StageLadder, "")
		if err != nil {
			return err
		}
		if p.Fits {
			lastFit = b
			continue
		}
		s.total -= len(s.cfg.Batches) - i - 1 // the rest of the ladder is skipped
		if !p.OOM {
			s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("%s batch %d: %s; the %s ladder stopped there", prec, b, p.Error, prec))
			return nil
		}
		firstFail = b
		break
	}
	if !s.cfg.Bisect || firstFail == 0 {
		return nil
	}
	lo, hi := lastFit, firstFail
	s.total += bisectSteps(lo, hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		p, err := s.point(ctx, prec, mid, StageBisect, "")
		if err != nil {
			return err
		}
		switch {
		case p.Fits:
			lo = mid
		case p.OOM:
			hi = mid
		default:
			s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("%s batch %d: %s; bisection stopped there", prec, mid, p.Error))
			return nil
		}
	}
	return nil
}

// bisectSteps is how many points bisection between lo (fits) and hi
// (fails) measures.
func bisectSteps(lo, hi int) int {
	n := 0
	for hi-lo > 1 {
		lo += (hi - lo) / 2 // the longer half, at worst
		n++
	}
	return n
}

type snapPoint struct {
	batch int
	role  string
}

// snapshotPoints chooses one precision's snapshot points among what was
// measured: the largest batch that fits, the first that fails, and a safe
// batch: the largest that fits at no more than half the largest (else the
// smallest that fits, if smaller than the largest).
func snapshotPoints(points []Point, prec string) []snapPoint {
	var fit []int
	firstFail := 0
	for _, p := range points {
		if p.Precision != prec || p.Stage == StageSnapshot {
			continue
		}
		if p.Fits {
			fit = append(fit, p.Batch)
		} else if p.OOM && (firstFail == 0 || p.Batch < firstFail) {
			firstFail = p.Batch
		}
	}
	slices.Sort(fit)
	var out []snapPoint
	if len(fit) > 0 {
		largest := fit[len(fit)-1]
		safe := 0
		for _, b := range fit {
			if 2*b <= largest {
				safe = b
			}
		}
		if safe == 0 && fit[0] < largest {
			safe = fit[0]
		}
		if safe > 0 {
			out = append(out, snapPoint{safe, RoleSafe})
		}
		out = append(out, snapPoint{largest, RoleLargestFit})
	}
	if firstFail > 0 {
		out = append(out, snapPoint{firstFail, RoleFirstFail})
	}
	return out
}

// point measures one point, appends it to the results, writes
// results.json and prints a progress line.
func (s *sweeper) point(ctx context.Context, prec string, batch int, stage, role string) (*Point, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &Point{ID: fmt.Sprintf("%s-b%d", prec, batch), Precision: prec, Batch: batch, Stage: stage, Role: role}
	if role != "" {
		p.ID += "-" + role
	}
	start := time.Now()
	if err := s.measure(ctx, p); err != nil {
		return nil, err
	}
	p.WallS = time.Since(start).Seconds()
	s.res.Points = append(s.res.Points, *p)
	s.done++
	s.total = max(s.total, s.done)
	if s.progress != nil {
		s.progress.PointDone(s.done, s.total, time.Since(s.start), s.cfg.Workload, p)
	}
	if err := WriteResults(s.cfg.Out, s.res); err != nil {
		return nil, err
	}
	return p, nil
}

// runPoint runs one point in a fresh process (several under torchrun),
// its output going to the point's log.txt, and reads what it wrote.
func (s *sweeper) runPoint(ctx context.Context, p *Point) error {
	c := s.cfg
	dir := filepath.Join(c.Out, "points", p.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(dir, "log.txt"))
	if err != nil {
		return err
	}
	defer log.Close()
	spec := PointSpec{Out: dir, Workload: c.Workload, WorkloadArgs: c.WorkloadArgs, Batch: p.Batch,
		Precision: p.Precision, Mode: c.Mode, Optimizer: c.Optimizer, MicroBatch: c.MicroBatch,
		Parallel: c.Parallel, Warmup: c.Warmup, Steps: c.Steps, Fraction: c.MemoryFraction,
		MaxEntries: c.MaxEntries, NeutralPaths: c.NeutralPaths}
	if p.Stage == StageSnapshot {
		spec.Snapshot, spec.Profile = true, c.Profile
		if c.SnapshotSteps > 0 {
			spec.Steps = c.SnapshotSteps
		}
	}
	argv := PointArgv(s.python, s.harness, spec, c.Torchrun)
	fmt.Fprintf(log, "# %s\n", strings.Join(argv, " "))
	status, _, err := proc{argv: argv, env: environ(), stdout: log, stderr: log}.run(ctx)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	p.ExitCode = status
	d := readPoint(c.Out, p, c.Torchrun.Nproc)
	if status == exitEnv && !p.Fits && !p.OOM {
		b, _ := os.ReadFile(filepath.Join(dir, "log.txt"))
		p.Error = lastLine(string(b), status)
	}
	if d != nil && s.res.Workload.Parameters == 0 {
		s.res.Workload.Parameters, s.res.Workload.ParamBytes = d.Parameters, d.ParamBytes
		s.res.Workload.Facts = d.WorkloadFacts
	}
	return nil
}
