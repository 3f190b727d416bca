package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/memscope/memscope/internal/memlimit"
	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
	"github.com/memscope/memscope/trace"
)

// This file runs memscope as a process of its own on inputs a hostile
// writer makes cheaply (generated here, a few KB to a MB each) and holds
// it to its memory budget: each run ends with exit 0 or 2 and a one-line
// message naming the file, and its peak RSS, measured by the kernel
// (the child's VmHWM), stays within the budget: --max-memory, or the
// default for the file's size. The child also runs under an RLIMIT_AS
// (address space) of the budget plus 4 GiB (the Go runtime reserves
// address space well ahead of what it uses), so that a run that escapes its
// budget dies instead of taking the machine.

// childEnv names the variable that makes the test binary run memscope:
// its value is the JSON list of arguments.
const childEnv = "MEMSCOPE_BOUNDED_CHILD"

// TestBoundedChild is the child process: not a test on its own. Outside
// the child it passes at once (as os/exec's TestHelperProcess does), so
// that nothing reads as skipped under CI.
func TestBoundedChild(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		return // run by the bounded tests as a child process
	}
	var c struct {
		Args []string
		AS   uint64
		HWM  string
	}
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	if c.AS > 0 {
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: c.AS, Max: c.AS}); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			os.Exit(3)
		}
	}
	memlimit.Hold() // as main does
	code := exitCode(run(c.Args, os.Stdout, os.Stderr))
	// The peak RSS of this process since its exec: getrusage would count
	// the parent's, whose memory the child shared until then.
	status, _ := os.ReadFile("/proc/self/status")
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			os.WriteFile(c.HWM, []byte(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))), 0o644)
		}
	}
	os.Exit(code)
}

// childRun is one run of the child.
type childRun struct {
	code           int
	stdout, stderr string
	rss            int64 // peak resident set (VmHWM), bytes; 0 when the child did not say
}

// runChild runs memscope args in a child process whose address space is
// capped at as bytes, with stdin (nil: none) as its standard input,
// through a pipe.
func runChild(t *testing.T, as int64, stdin io.Reader, args ...string) childRun {
	t.Helper()
	hwm := filepath.Join(t.TempDir(), "hwm")
	spec, _ := json.Marshal(struct {
		Args []string
		AS   uint64
		HWM  string
	}{args, uint64(as), hwm})
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoundedChild$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec), "GOMEMLIMIT=")
	if stdin != nil {
		cmd.Stdin = io.MultiReader(stdin) // not an *os.File: exec makes a pipe
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := childRun{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(hwm); err == nil {
		kb, _ := strconv.ParseInt(string(b), 10, 64)
		r.rss = kb << 10
	}
	return r
}

// boundedCase is one hostile input and what memscope must say about it.
type boundedCase struct {
	name   string
	file   string // written into the test's folder by make
	make   func(path string) error
	args   []string // FILE stands for the file's path
	pipe   bool     // given on stdin, as /dev/stdin
	budget int64    // the bound on the peak RSS: --max-memory or the default
	code   int
	want   string // in the one-line error (code 2), or in stderr's warning (code 0)
}

func writeGzip(path string, v any) error {
	var buf bytes.Buffer
	if err := snapgen.Gzip(&buf, v); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeGzipText writes head, n bytes of c, then tail, gzipped.
func writeGzipText(path, head string, c byte, n int, tail string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	io.WriteString(zw, head)
	chunk := bytes.Repeat([]byte{c}, 1<<20)
	for n > 0 {
		k := min(n, len(chunk))
		zw.Write(chunk[:k])
		n -= k
	}
	io.WriteString(zw, tail)
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

func TestBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("generates hostile inputs and runs memscope on each in a child process")
	}
	dir := t.TempDir()
	const jsonHead = `{"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 512, "stream": 0, "frames": [{"filename": "a.py", "line": 1, "name": "`
	const traceHead = `{"traceEvents": [{"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "name": "`
	cases := []boundedCase{
		{name: "one stack of 5e6 frames", file: "deep.pickle.gz", make: func(p string) error { return writeGzip(p, snapgen.DeepStack(5_000_000)) },
			args: []string{"peak", "--tree", "FILE"}, code: 2, want: "decoding needs more than"},
		{name: "one stack of 5e6 frames, --max-memory 1GiB", file: "deep.pickle.gz", args: []string{"summary", "--max-memory", "1GiB", "FILE"},
			budget: 1 << 30, code: 0, want: "stacks had more than 16384 frames (the deepest 5000000)"},
		{name: "the call tree of one stack of 5e6 frames, --max-memory 1GiB", file: "deep.pickle.gz", args: []string{"peak", "--tree", "--max-memory", "1GiB", "FILE"},
			budget: 1 << 30, code: 0, want: "(4983616 frames elided)"},
		{name: "1000 distinct stacks of 1000 frames", file: "distinct.pickle.gz", make: func(p string) error { return writeGzip(p, snapgen.DistinctStacks(1000, 1000)) },
			args: []string{"report", "-o", "OUT", "FILE"}, code: 2, want: "decoding needs more than"},
		{name: "1e5 devices", file: "devices.pickle.gz", make: func(p string) error { return writeGzip(p, snapgen.DevicesPickle(100_000)) },
			args: []string{"summary", "FILE"}, code: 2, want: "decoding needs more than"},
		{name: "2,000 devices, --max-memory 256MiB", file: "devices2k.pickle.gz", make: func(p string) error { return writeGzip(p, snapgen.DevicesPickle(2000)) },
			args: []string{"summary", "--max-memory", "256MiB", "FILE"}, budget: 256 << 20, code: 0},
		{name: "5e6 empty dicts as trace entries", file: "wide-d.pickle.gz", make: func(p string) error { return writeGzip(p, snapgen.Wide("device_traces", 5_000_000, false)) },
			args: []string{"summary", "FILE"}, code: 2, want: "decoding needs more than"},
		{name: "5e6 empty lists as blocks", file: "wide-l.pickle.gz", make: func(p string) error { return writeGzip(p, snapgen.Wide("blocks", 5_000_000, true)) },
			args: []string{"summary", "FILE"}, code: 2, want: "decoding needs more than"},
		{name: "5e6 empty lists under an unknown key, piped", file: "wide-other.pickle.gz", make: func(p string) error { return writeGzip(p, snapgen.Wide("other", 5_000_000, true)) },
			args: []string{"summary", "/dev/stdin"}, pipe: true, budget: 256 << 20, code: 2, want: "the limit for an input of unknown size (a pipe)"},
		{name: "a 512 MiB string in a JSON snapshot", file: "string.json.gz", make: func(p string) error {
			return writeGzipText(p, jsonHead, 'a', 512<<20, `"}]}]]}`)
		}, args: []string{"summary", "FILE"}, code: 2, want: "is longer than"},
		{name: "a 512 MiB string in a JSON snapshot, --max-memory 128MiB", file: "string.json.gz",
			args: []string{"summary", "--max-memory", "128MiB", "FILE"}, budget: 128 << 20, code: 2, want: "a quarter of the --max-memory limit"},
		{name: "a 512 MiB operator name in a trace, --max-memory 128MiB", file: "name.json.gz", make: func(p string) error {
			return writeGzipText(p, traceHead, 'b', 512<<20, `"}]}`)
		}, args: []string{"ops", "--max-memory", "128MiB", "FILE"}, budget: 128 << 20, code: 2, want: "the --max-memory limit"},
		{name: "a 512 MiB operator name in a trace", file: "name.json.gz",
			args: []string{"ops", "FILE"}, code: 2, want: "is longer than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			if tc.make != nil {
				if err := tc.make(path); err != nil {
					t.Fatal(err)
				}
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			budget := tc.budget
			if budget == 0 {
				if strings.Contains(tc.file, ".json") && tc.args[0] == "ops" {
					budget = trace.DefaultMaxMemory(st.Size(), true)
				} else {
					budget = snapshot.DefaultMaxMemory(st.Size(), true)
				}
			}
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.NewReplacer("FILE", path, "OUT", filepath.Join(dir, "out")).Replace(a)
			}
			var stdin io.Reader
			if tc.pipe {
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				stdin = f
			}
			r := runChild(t, budget+4<<30, stdin, args...)
			t.Logf("%s (%s): exit %d, peak RSS %s, budget %s", strings.Join(tc.args, " "), units.Bytes(st.Size()),
				r.code, units.Bytes(r.rss), units.Bytes(budget))
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%.2000s", r.code, tc.code, r.stderr)
			}
			if r.rss > budget {
				t.Errorf("peak RSS %s, past the budget %s", units.Bytes(r.rss), units.Bytes(budget))
			}
			if r.rss == 0 {
				t.Errorf("the child did not report its peak RSS")
			}
			if !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Errorf("stdout and stderr %.2000q, want them to say %q", r.stdout+r.stderr, tc.want)
			}
			if tc.code == 2 {
				line, _, _ := strings.Cut(r.stderr, "\n")
				name := filepath.Base(path) // trace messages name the file by its base
				if tc.pipe {
					name = "/dev/stdin"
				}
				if !strings.Contains(line, name) || !strings.Contains(line, "byte") {
					t.Errorf("error %q: want one line naming %s and the byte", line, name)
				}
			}
		})
	}
}
