package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// Harness exit statuses (harness.py's EXIT_ENV and EXIT_OOM).
const (
	exitEnv = 2
	exitOOM = 3
)

// proc is one process to start.
type proc struct {
	argv           []string
	env            []string // nil: this process's environment
	stdin          io.Reader
	stdout, stderr io.Writer
	// forward passes SIGTERM on to the process (SIGINT from a terminal
	// reaches it directly) and keeps memscope alive until it ends, so that
	// run.json is still written.
	forward bool
}

// start runs p and returns its exit status: the process's own, or
// 128+signal when a signal ended it, with the signal's name.
func (p proc) run(ctx context.Context) (status int, sig string, err error) {
	cmd := exec.CommandContext(ctx, p.argv[0], p.argv[1:]...)
	cmd.Env = p.env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.stdin, p.stdout, p.stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if p.forward {
		ch := make(chan os.Signal, 2)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(ch)
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case s := <-ch:
					if s == syscall.SIGTERM && cmd.Process != nil {
						cmd.Process.Signal(s)
					}
				case <-done:
					return
				}
			}
		}()
	}
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), ws.Signal().String(), nil
		}
		return ee.ExitCode(), "", nil
	}
	if err != nil {
		return -1, "", fmt.Errorf("running %s: %w", p.argv[0], err)
	}
	return 0, "", nil
}

// LookPython finds the interpreter python names, with an error that says
// how to name another.
func LookPython(python string) (string, error) {
	path, err := exec.LookPath(python)
	if err != nil {
		return "", fmt.Errorf("no Python interpreter %q: %w (name the one that has torch with --python)", python, errors.Unwrap(err))
	}
	return path, nil
}

// WriteHarness writes the embedded harness.py to a new temporary folder and
// returns its path and the function that removes it.
func WriteHarness() (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "memscope-harness-")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "harness.py")
	if err := os.WriteFile(path, Harness, 0o644); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

// PrepareRunDir makes dir and checks that files can be written in it.
func PrepareRunDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	probe, err := os.CreateTemp(dir, ".memscope-write-test-")
	if err != nil {
		return fmt.Errorf("run directory %s is not writable: %w", dir, errors.Unwrap(err))
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// Preflight runs harness.py check with python: torch, CUDA, nproc devices
// and the workload's imports. Its error is the harness's one line.
func Preflight(ctx context.Context, python, harness, workload string, nproc int) (*Check, error) {
	argv := []string{python, harness, "check", "--nproc", fmt.Sprint(max(nproc, 1))}
	if workload != "" {
		argv = append(argv, "--workload", workload)
	}
	var stdout, stderr bytes.Buffer
	status, _, err := proc{argv: argv, stdout: &stdout, stderr: &stderr}.run(ctx)
	if err != nil {
		return nil, err
	}
	if status != 0 {
		return nil, fmt.Errorf("%s: %s", filepath.Base(python), lastLine(stderr.String(), status))
	}
	var c Check
	if err := json.Unmarshal(lastLineBytes(stdout.Bytes()), &c); err != nil || c.Schema != CheckSchema {
		return nil, fmt.Errorf("%s %s check: unexpected output %q", python, harness, stdout.String())
	}
	return &c, nil
}

// lastLine is the last non-empty line of a process's output, without the
// harness's "harness.py: " prefix.
func lastLine(out string, status int) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if line == "" {
		return fmt.Sprintf("exited with status %d", status)
	}
	return strings.TrimPrefix(line, "harness.py: ")
}

func lastLineBytes(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}
