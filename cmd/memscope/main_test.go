package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/flagvalue"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with the current output")

// runResult is what one in-process run of memscope produced.
type runResult struct {
	stdout, stderr string
	err            error
	code           int
}

func runMemscope(args ...string) runResult {
	var stdout, stderr bytes.Buffer
	err := run(args, &stdout, &stderr)
	return runResult{stdout.String(), stderr.String(), err, exitCode(err)}
}

// checkGolden compares got with testdata/name.golden. With -update it
// rewrites the golden file; on a mismatch it writes testdata/name.got and
// shows a diff.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run 'go test ./cmd/memscope -update' to create it)", err)
	}
	if got == string(want) {
		return
	}
	gotFile := filepath.Join("testdata", name+".got")
	if err := os.WriteFile(gotFile, []byte(got), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Errorf("output differs from %s (got written to %s; run 'go test ./cmd/memscope -update' to accept it):\n%s",
		golden, gotFile, diff(golden, gotFile))
}

// diff returns the differences between two files, from diff -u when it is
// installed.
func diff(a, b string) string {
	out, err := exec.Command("diff", "-u", a, b).CombinedOutput()
	var ee *exec.ExitError
	if err == nil || errors.As(err, &ee) && ee.ExitCode() == 1 {
		return string(out)
	}
	wa, _ := os.ReadFile(a)
	wb, _ := os.ReadFile(b)
	return fmt.Sprintf("(no diff command: %v)\n--- %s\n%s\n+++ %s\n%s", err, a, wa, b, wb)
}

func TestHelpGolden(t *testing.T) {
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"help", []string{"help"}},
		{"help", nil},
		{"help", []string{"-h"}},
		{"help", []string{"--help"}},
		{"help-summary", []string{"help", "summary"}},
		{"help-summary", []string{"summary", "--help"}},
		{"help-summary", []string{"summary", "-h"}},
		{"help-summary", []string{"summary", "--json", "-h", "a.pickle"}},
		{"help-summary", []string{"-h", "summary"}},
	} {
		t.Run(strings.Join(append([]string{"memscope"}, tt.args...), " "), func(t *testing.T) {
			r := runMemscope(tt.args...)
			if r.err != nil || r.code != 0 || r.stderr != "" {
				t.Fatalf("run(%q) = %v, exit %d, stderr %q; want nil, exit 0, no stderr", tt.args, r.err, r.code, r.stderr)
			}
			checkGolden(t, tt.golden, r.stdout)
		})
	}
}

// The overview lists every command of the table, and every command's help
// lists its flags.
func TestHelpCoversTable(t *testing.T) {
	overview := runMemscope("help").stdout
	for _, c := range commands {
		if !strings.Contains(overview, "  "+c.name+"  ") || !strings.Contains(overview, c.short) {
			t.Errorf("memscope help does not list %q with its short line %q", c.name, c.short)
		}
		help := runMemscope("help", c.name).stdout
		fs := newFlagSet(c.name)
		c.flags(fs)
		fs.VisitAll(func(f *pflag.Flag) {
			if !strings.Contains(help, "--"+f.Name) {
				t.Errorf("memscope help %s does not list --%s", c.name, f.Name)
			}
		})
	}
}

func TestCommandTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commands {
		if c.name == "" || seen[c.name] {
			t.Errorf("command %q: empty or duplicate name", c.name)
		}
		seen[c.name] = true
		if c.short == "" || strings.Contains(c.short, "\n") || strings.HasSuffix(c.short, ".") {
			t.Errorf("command %q: short %q: want one line with no final period", c.name, c.short)
		}
		if c.flags == nil {
			t.Errorf("command %q: no flags func: it could not run", c.name)
		}
		for i, line := range strings.Split(c.long, "\n") {
			if len([]rune(line)) > 80 {
				t.Errorf("command %q: long help line %d is %d columns, want ≤ 80", c.name, i+1, len([]rune(line)))
			}
		}
		flagvalue.CheckArgs(c.args, nil) // panics on a malformed spec
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string // lines of stderr, in order
	}{
		{[]string{"frob"}, []string{`memscope: unknown command "frob"`, "run 'memscope help' for the list of commands"}},
		{[]string{"help", "frob"}, []string{`memscope: help: unknown command "frob"`, "run 'memscope help' for the list of commands"}},
		{[]string{"--frob"}, []string{"memscope: unknown flag: --frob", "run 'memscope help' for the list of commands"}},
		{[]string{"--version", "summary"}, []string{"memscope: --version takes no arguments", "run 'memscope help' for the list of commands"}},
		{[]string{"summary", "--frob", "a.pickle"}, []string{"memscope: summary: unknown flag: --frob", "run 'memscope help summary' for its usage"}},
		{[]string{"summary", "-x", "a.pickle"}, []string{"memscope: summary: unknown shorthand flag: 'x' in -x", "run 'memscope help summary' for its usage"}},
		{[]string{"summary"}, []string{"memscope: summary: missing SNAP argument", "run 'memscope help summary' for its usage"}},
		{[]string{"summary", "--json"}, []string{"memscope: summary: missing SNAP argument", "run 'memscope help summary' for its usage"}},
		{[]string{"summary", "--top", "x", "a.pickle"}, []string{`memscope: summary: invalid argument "x" for "--top" flag: must be an integer`, "run 'memscope help summary' for its usage"}},
		{[]string{"summary", "a.pickle", "--top"}, []string{"memscope: summary: flag needs an argument: --top", "run 'memscope help summary' for its usage"}},
		{[]string{"summary", "--top=-1", "a.pickle"}, []string{"memscope: summary: --top -1: want 0 or more", "run 'memscope help summary' for its usage"}},
		{[]string{"summary", "--device=-2", "a.pickle"}, []string{"memscope: summary: --device -2: want a device number, or -1 for all", "run 'memscope help summary' for its usage"}},
		// One --device rule for every command that takes it (peak and ops
		// once read -3 as every device).
		{[]string{"peak", "--device=-3", "a.pickle"}, []string{"memscope: peak: --device -3: want a device number, or -1 for all", "run 'memscope help peak' for its usage"}},
		{[]string{"ops", "--device", "x", "t.json"}, []string{`memscope: ops: --device "x": want a device number, or -1 for all`, "run 'memscope help ops' for its usage"}},
		{[]string{"whatif", "--device=-2", "a.pickle"}, []string{"memscope: whatif: --device -2: want a device number, or -1 for all", "run 'memscope help whatif' for its usage"}},
		// Sizes: a positive one says what a size looks like; a limit gives
		// the parser's reason.
		{[]string{"summary", "--max-memory", "0", "a.pickle"}, []string{`memscope: summary: --max-memory "0": want a size such as 8GiB`, "run 'memscope help summary' for its usage"}},
		{[]string{"whatif", "--memory-limit", "lots", "a.pickle"}, []string{`memscope: whatif: --memory-limit "lots": want a size such as 24GiB`, "run 'memscope help whatif' for its usage"}},
		{[]string{"check", "--max-peak", "40G", "a.pickle"}, []string{`memscope: check: --max-peak: size "40G": ambiguous unit "G": write GiB (2^30) or GB (10^9)`, "run 'memscope help check' for its usage"}},
		{[]string{"advise", "--device-memory", "0", "a.pickle"}, []string{`memscope: advise: --device-memory "0": neither a size (80GiB) nor a GPU this knows (` + strings.Join(budget.GPUNames(), ", ") + ")", "run 'memscope help advise' for its usage"}},
		{[]string{"help", "summary", "extra"}, []string{`memscope: help: unexpected argument "extra"`, "run 'memscope help help' for its usage"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runMemscope(tt.args...)
			if _, ok := errors.AsType[*usageError](r.err); !ok || r.code != 2 {
				t.Fatalf("run(%q) = %v (%T), exit %d; want a usage error, exit 2", tt.args, r.err, r.err, r.code)
			}
			if want := strings.Join(tt.want, "\n") + "\n"; r.stderr != want {
				t.Errorf("run(%q) stderr:\n%s\nwant:\n%s", tt.args, r.stderr, want)
			}
			if r.stdout != "" {
				t.Errorf("run(%q) stdout = %q, want nothing", tt.args, r.stdout)
			}
		})
	}
}

// The command line reaches runSummary as options and paths.
func TestSummaryArgs(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		opts  summaryOptions
		paths []string
	}{
		{[]string{"a.pickle"}, summaryOptions{top: 10, device: -1}, []string{"a.pickle"}},
		{[]string{"--json", "--top", "3", "--device", "1", "a.pickle", "b.pickle"}, summaryOptions{json: true, top: 3, device: 1}, []string{"a.pickle", "b.pickle"}},
		{[]string{"a.pickle", "--top=0", "b.pickle", "--json"}, summaryOptions{json: true, top: 0, device: -1}, []string{"a.pickle", "b.pickle"}},
		{[]string{"--", "--json"}, summaryOptions{top: 10, device: -1}, []string{"--json"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var gotOpts summaryOptions
			var gotPaths []string
			defer func(f func(*cmdContext, summaryOptions, []string) error) { runSummary = f }(runSummary)
			runSummary = func(cc *cmdContext, opts summaryOptions, paths []string) error {
				gotOpts, gotPaths = opts, paths
				fmt.Fprintln(cc.stdout, "ok")
				cc.warnf("careful with %s", paths[0])
				return nil
			}
			r := runMemscope(append([]string{"summary"}, tt.args...)...)
			if r.err != nil || r.code != 0 {
				t.Fatalf("run(summary %q) = %v, exit %d; want nil, exit 0", tt.args, r.err, r.code)
			}
			if gotOpts != tt.opts || !slices.Equal(gotPaths, tt.paths) {
				t.Errorf("run(summary %q) called runSummary(%+v, %q), want (%+v, %q)", tt.args, gotOpts, gotPaths, tt.opts, tt.paths)
			}
			if r.stdout != "ok\n" {
				t.Errorf("stdout = %q, want %q", r.stdout, "ok\n")
			}
			if want := "memscope: warning: careful with " + tt.paths[0] + "\n"; r.stderr != want {
				t.Errorf("stderr = %q, want %q", r.stderr, want)
			}
		})
	}
}

// A command's error reaches stderr once, and its type decides the exit status.
func TestCommandErrors(t *testing.T) {
	for _, tt := range []struct {
		err    error
		code   int
		stderr string
	}{
		{badInput(errors.New("reading a.pickle at byte 7: unexpected EOF")), 2, "memscope: reading a.pickle at byte 7: unexpected EOF\n"},
		{checkFailedf("peak 41.20 GiB > --max-peak 40.00 GiB"), 1, "memscope: check failed: peak 41.20 GiB > --max-peak 40.00 GiB\n"},
		{errors.New("writing out.json: disk full"), 2, "memscope: writing out.json: disk full\n"},
		{usageErrorf("--json and --top 0 make no sense together"), 2, "memscope: summary: --json and --top 0 make no sense together\nrun 'memscope help summary' for its usage\n"},
	} {
		t.Run(tt.err.Error(), func(t *testing.T) {
			defer func(f func(*cmdContext, summaryOptions, []string) error) { runSummary = f }(runSummary)
			runSummary = func(*cmdContext, summaryOptions, []string) error { return tt.err }
			r := runMemscope("summary", "a.pickle")
			if r.err != tt.err || r.code != tt.code {
				t.Errorf("run = %v, exit %d; want %v, exit %d", r.err, r.code, tt.err, tt.code)
			}
			if r.stderr != tt.stderr {
				t.Errorf("stderr = %q, want %q", r.stderr, tt.stderr)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{usageErrorf("bad"), 2},
		{badInput(errors.New("truncated")), 2},
		{checkFailedf("too big"), 1},
		{fmt.Errorf("gate: %w", checkFailedf("too big")), 1},
		{errors.New("anything else"), 2},
	} {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if badInput(nil) != nil {
		t.Errorf("badInput(nil) != nil")
	}
}

func TestVersion(t *testing.T) {
	r := runMemscope("--version")
	if r.err != nil || !strings.HasPrefix(r.stdout, "memscope ") || !strings.HasSuffix(r.stdout, "\n") {
		t.Errorf("memscope --version = %q, %v; want \"memscope VERSION\\n\", nil", r.stdout, r.err)
	}
}
