package capture

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"time"
)

// CaptureConfig is one memscope capture.
type CaptureConfig struct {
	Python   string   // interpreter when the command names none (and for the check)
	Command  []string // the user's command
	Options  CaptureOptions
	Torchrun Torchrun
	// Stdin, Stdout and Stderr are the script's.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Progress hears what the capture reports as it goes; nil for none.
	Progress Progress
}

// Progress hears what a capture or a sweep reports as it runs, as values:
// the caller words them (package report).
type Progress interface {
	// CaptureStarted: the preflight check passed and the run begins.
	CaptureStarted(check *Check, out string)
	// SweepStarted: the sweep begins, under a memory limit of limit bytes.
	SweepStarted(cfg SweepConfig, check *Check, limit int64)
	// PointDone: point p of the sweep was measured, the done-th of at
	// least total, elapsed after the sweep began.
	PointDone(done, total int, elapsed time.Duration, workload string, p *Point)
}

// UsageError is a capture or sweep that cannot start as asked: the caller
// reports it as bad usage.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Capture runs the user's command under the harness and writes run.json in
// the run directory. It returns the command's exit status; err is set only
// when the command could not be run at all (bad command, no Python, no
// torch or CUDA, an unwritable run directory), before anything ran.
func Capture(ctx context.Context, cfg CaptureConfig) (status int, err error) {
	u, err := ParseUserCommand(cfg.Command)
	if err != nil {
		return 0, &UsageError{err}
	}
	if _, err := CaptureArgv(u, cfg.Python, "harness.py", cfg.Options, cfg.Torchrun); err != nil {
		return 0, &UsageError{err}
	}
	python := cfg.Python
	if u.Python != "" {
		python = u.Python
	}
	if python, err = LookPython(python); err != nil {
		return 0, err
	}
	if u.Torchrun != "" {
		if _, err := LookPython(u.Torchrun); err != nil {
			return 0, err
		}
	}
	harness, cleanup, err := WriteHarness()
	if err != nil {
		return 0, err
	}
	defer cleanup()
	check, err := Preflight(ctx, python, harness, "", cfg.Torchrun.Nproc)
	if err != nil {
		return 0, err
	}
	if err := PrepareRunDir(cfg.Options.Out); err != nil {
		return 0, err
	}
	if u.Python == "" {
		u.Python = python
	}
	argv, _ := CaptureArgv(u, python, harness, cfg.Options, cfg.Torchrun)
	if cfg.Progress != nil {
		cfg.Progress.CaptureStarted(check, cfg.Options.Out)
	}
	run := &Run{Schema: RunSchema, Command: cfg.Command, Argv: argv, Nproc: max(cfg.Torchrun.Nproc, 1),
		Started: time.Now().UTC().Truncate(time.Second), Check: check, Options: cfg.Options.args()}
	start := time.Now()
	status, sig, err := proc{argv: argv, stdin: cfg.Stdin, stdout: cfg.Stdout, stderr: cfg.Stderr, forward: true}.run(ctx)
	if err != nil {
		return 0, err
	}
	run.WallS = time.Since(start).Seconds()
	run.ExitCode, run.Signal = status, sig
	if err := writeJSON(filepath.Join(cfg.Options.Out, "run.json"), run); err != nil {
		return status, err
	}
	return status, nil
}

// environ is the environment of harness processes memscope starts for a
// sweep: its own, with Python's output unbuffered so logs are whole.
func environ() []string {
	return append(os.Environ(), "PYTHONUNBUFFERED=1")
}
