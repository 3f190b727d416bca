package capture

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Torchrun holds what torchrun needs to start several processes. Nproc ≤ 1
// means no torchrun. Without Nnodes or RdzvEndpoint the run is
// --standalone (one node); with them, every node runs the same memscope
// command and torchrun's rendezvous joins them.
type Torchrun struct {
	Nproc        int    // processes per node (--nproc_per_node)
	Nnodes       string // "2", or "1:4" for elastic
	NodeRank     int    // -1: not given
	RdzvEndpoint string // host:port
	RdzvID       string
	RdzvBackend  string // default c10d
}

// Check reports the first value of t torchrun cannot run, naming its
// flag: a negative --nproc, or a multi-node flag without --nproc.
func (t Torchrun) Check() error {
	if t.Nproc < 0 {
		return fmt.Errorf("--nproc %d: want a positive number", t.Nproc)
	}
	if t.Nproc <= 1 && (t.Nnodes != "" || t.RdzvEndpoint != "" || t.NodeRank >= 0) {
		return errors.New("--nnodes, --node-rank and --rdzv-endpoint need --nproc")
	}
	return nil
}

// Args returns torchrun's options, in the underscore spelling every torch
// version since 1.10 accepts.
func (t Torchrun) Args() []string {
	args := []string{"--nproc_per_node", strconv.Itoa(max(t.Nproc, 1))}
	if t.Nnodes == "" && t.RdzvEndpoint == "" {
		return append(args, "--standalone")
	}
	if t.Nnodes != "" {
		args = append(args, "--nnodes", t.Nnodes)
	}
	if t.NodeRank >= 0 {
		args = append(args, "--node_rank", strconv.Itoa(t.NodeRank))
	}
	if t.RdzvEndpoint != "" {
		args = append(args, "--rdzv_endpoint", t.RdzvEndpoint,
			"--rdzv_backend", cmp(t.RdzvBackend, "c10d"), "--rdzv_id", cmp(t.RdzvID, "memscope"))
	}
	return args
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// UserCommand is the user's training command split into what memscope puts
// the harness between.
type UserCommand struct {
	// Python is the interpreter the command names ("" when it starts with
	// the script or torchrun); PythonOpts its options before the script.
	Python     string
	PythonOpts []string
	// Torchrun is set when the command was torchrun itself; TorchrunOpts
	// are its options before the script (its -m moved to Script).
	Torchrun     string
	TorchrunOpts []string
	// Script is SCRIPT.py ARGS... or -m MODULE ARGS...
	Script []string
}

var pythonName = regexp.MustCompile(`^python[0-9.]*$`)

// torchrunBool are torchrun's options that take no value.
var torchrunBool = map[string]bool{
	"--standalone": true, "--run-path": true, "--run_path": true, "--module": true, "-m": true,
	"--no-python": true, "--no_python": true,
}

// ParseUserCommand splits argv, as given after memscope capture's --:
// python [OPTIONS] SCRIPT.py ARGS…, python -m MODULE ARGS…, SCRIPT.py ARGS…
// (run with --python), or torchrun [OPTIONS] SCRIPT.py ARGS….
func ParseUserCommand(argv []string) (UserCommand, error) {
	var u UserCommand
	if len(argv) == 0 {
		return u, fmt.Errorf("missing the command to capture: memscope capture [flags] -- python SCRIPT.py ARGS...")
	}
	base := filepath.Base(argv[0])
	switch {
	case pythonName.MatchString(base):
		u.Python = argv[0]
		rest := argv[1:]
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && rest[0] != "-m" && rest[0] != "-" {
			opt := rest[0]
			if opt == "-c" {
				return u, fmt.Errorf("%s -c: capture runs a script or a module (-m), not a command string", base)
			}
			u.PythonOpts = append(u.PythonOpts, opt)
			rest = rest[1:]
			if (opt == "-W" || opt == "-X") && len(rest) > 0 {
				u.PythonOpts = append(u.PythonOpts, rest[0])
				rest = rest[1:]
			}
		}
		return u, u.setScript(rest, base)
	case base == "torchrun":
		u.Torchrun = argv[0]
		rest := argv[1:]
		module := false
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			opt := rest[0]
			rest = rest[1:]
			name, _, hasValue := strings.Cut(opt, "=")
			switch {
			case name == "-m" || name == "--module":
				module = true
				continue
			case name == "--no-python" || name == "--no_python":
				return u, fmt.Errorf("torchrun %s: capture needs torchrun to start Python", name)
			}
			u.TorchrunOpts = append(u.TorchrunOpts, opt)
			if !hasValue && !torchrunBool[name] && len(rest) > 0 {
				u.TorchrunOpts = append(u.TorchrunOpts, rest[0])
				rest = rest[1:]
			}
		}
		if module && len(rest) > 0 {
			rest = append([]string{"-m"}, rest...)
		}
		return u, u.setScript(rest, "torchrun")
	case strings.HasSuffix(base, ".py"):
		return u, u.setScript(argv, "")
	}
	return u, fmt.Errorf("capture runs Python: want `python SCRIPT.py ARGS...`, `python -m MODULE ARGS...`, "+
		"`SCRIPT.py ARGS...` or `torchrun ... SCRIPT.py ARGS...`, not %q", argv[0])
}

func (u *UserCommand) setScript(rest []string, what string) error {
	switch {
	case len(rest) == 0:
		return fmt.Errorf("%s: missing the script", what)
	case rest[0] == "-m" && len(rest) < 2:
		return fmt.Errorf("%s -m: missing the module", what)
	case rest[0] == "-":
		return fmt.Errorf("%s -: capture runs a script file, not standard input", what)
	}
	u.Script = rest
	return nil
}

// CaptureOptions are the harness's options for one capture.
type CaptureOptions struct {
	Out          string
	MaxEntries   int
	Stacks       string // python or all
	MeasureSteps string // "2-5"
	ProfileSteps string // "3-4", "" for none
	NeutralPaths bool
}

// args returns harness.py run's options.
func (o CaptureOptions) args() []string {
	a := []string{"--out", o.Out, "--max-entries", strconv.Itoa(o.MaxEntries),
		"--stacks", cmp(o.Stacks, "python"), "--measure-steps", o.MeasureSteps}
	if o.ProfileSteps != "" {
		a = append(a, "--profile-steps", o.ProfileSteps)
	}
	if o.NeutralPaths {
		a = append(a, "--neutral-paths")
	}
	return a
}

// CaptureArgv returns the command that runs u under the harness at path
// harness: the interpreter (u's, else python) with the harness in front of
// u's script, under torchrun when u was torchrun or tr.Nproc > 1.
func CaptureArgv(u UserCommand, python, harness string, o CaptureOptions, tr Torchrun) ([]string, error) {
	if u.Python != "" {
		python = u.Python
	}
	tail := append(append(append([]string{harness, "run"}, o.args()...), "--"), u.Script...)
	switch {
	case u.Torchrun != "" && tr.Nproc > 1:
		return nil, fmt.Errorf("give torchrun's own options or --nproc, not both")
	case u.Torchrun != "":
		return append(append([]string{u.Torchrun}, u.TorchrunOpts...), tail...), nil
	case tr.Nproc > 1:
		argv := append(append([]string{python}, u.PythonOpts...), "-m", "torch.distributed.run")
		return append(append(argv, tr.Args()...), tail...), nil
	}
	return append(append([]string{python}, u.PythonOpts...), tail...), nil
}

// PointSpec is one sweep point as the harness's point subcommand runs it.
type PointSpec struct {
	Out          string
	Workload     string
	WorkloadArgs []string // --layers 12 … as given
	Batch        int
	Precision    string
	Mode         string
	Optimizer    string
	MicroBatch   int
	Parallel     string
	Warmup       int
	Steps        int
	Fraction     float64
	Snapshot     bool
	Profile      bool
	MaxEntries   int
	NeutralPaths bool
}

// PointArgv returns the command that measures one point.
func PointArgv(python, harness string, p PointSpec, tr Torchrun) []string {
	argv := []string{python}
	if tr.Nproc > 1 {
		argv = append(append(argv, "-m", "torch.distributed.run"), tr.Args()...)
	}
	argv = append(argv, harness, "point", "--out", p.Out, "--workload", p.Workload,
		"--batch", strconv.Itoa(p.Batch), "--precision", p.Precision, "--mode", p.Mode,
		"--optimizer", p.Optimizer, "--micro-batch", strconv.Itoa(p.MicroBatch),
		"--warmup", strconv.Itoa(p.Warmup), "--steps", strconv.Itoa(p.Steps))
	if p.Parallel != "" && p.Parallel != "none" {
		argv = append(argv, "--parallel", p.Parallel)
	}
	if p.Fraction > 0 {
		argv = append(argv, "--memory-fraction", strconv.FormatFloat(p.Fraction, 'g', -1, 64))
	}
	if p.Snapshot {
		argv = append(argv, "--snapshot", "--max-entries", strconv.Itoa(p.MaxEntries))
	}
	if p.Profile {
		argv = append(argv, "--profile")
	}
	if p.NeutralPaths {
		argv = append(argv, "--neutral-paths")
	}
	return append(argv, p.WorkloadArgs...)
}

// SplitWorkload returns the kind of a workload name: mlp, llama, vit, or
// custom for pkg.module:factory; "" when the name is none of these.
// harness.py's workload_kind agrees.
func SplitWorkload(name string) string {
	switch name {
	case "mlp", "llama", "vit":
		return name
	}
	mod, fn, ok := strings.Cut(name, ":")
	if !ok || !isIdent(fn) {
		return ""
	}
	for _, part := range strings.Split(mod, ".") {
		if !isIdent(part) {
			return ""
		}
	}
	return "custom"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}
