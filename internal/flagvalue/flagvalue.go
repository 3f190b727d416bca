// Package flagvalue holds memscope's command-line rules that are not one
// command's: the typed flag values (a CUDA device, a size, a device's
// memory as a size or a GPU name, --neutral-paths), the flags' usage
// listing help prints (Usages) and the positional-argument rule of a
// command's synopsis (CheckArgs). Each value checks itself as pflag sets
// it, so a rule is written once, and says what was wrong in its own words:
// the command line reports an Error's message (Message) as it is, without
// pflag's "invalid argument" frame.
package flagvalue

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/srcpath"
	"github.com/memscope/memscope/internal/units"
)

// Error is a flag value a typed value refused.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Message returns the message of the Error pflag's parse error
// wraps, or the parse error's own.
func Message(err error) string {
	if fe, ok := errors.AsType[*Error](err); ok {
		return fe.msg
	}
	return err.Error()
}

// deviceValue is --device: a CUDA device number, or -1, which each command
// gives its meaning in its usage (every device; every device with recorded
// events; the first with recorded events).
type deviceValue struct{ n *int }

// Device defines --device in fs, bound to dst, -1 by default.
func Device(fs *pflag.FlagSet, dst *int, usage string) {
	*dst = -1
	fs.Var(deviceValue{dst}, "device", usage)
}

func (v deviceValue) String() string {
	if v.n == nil {
		return "-1"
	}
	return strconv.Itoa(*v.n)
}

func (deviceValue) Type() string { return "int" }

func (v deviceValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return &Error{fmt.Sprintf("--device %q: want a device number, or -1 for all", s)}
	case n < -1:
		return &Error{fmt.Sprintf("--device %d: want a device number, or -1 for all", n)}
	}
	*v.n = n
	return nil
}

// sizeValue is a flag holding a size in bytes (units.ParseBytes: 24GiB,
// 1.5GB, 1073741824). A positive one refuses 0 and says what a size looks
// like (example); another takes 0 and gives ParseBytes's reason.
type sizeValue struct {
	name, text, example string
	n                   *int64
	positive            bool
}

// Size defines the size flag name in fs, bound to dst (left as it is
// until the flag is given).
func Size(fs *pflag.FlagSet, dst *int64, name string, positive bool, example, usage string) {
	fs.Var(&sizeValue{name: name, example: example, n: dst, positive: positive}, name, usage)
}

func (v *sizeValue) String() string { return v.text }
func (*sizeValue) Type() string     { return "string" }

func (v *sizeValue) Set(s string) error {
	n, err := units.ParseBytes(s)
	switch {
	case v.positive && (err != nil || n <= 0):
		return &Error{fmt.Sprintf("--%s %q: want a size such as %s", v.name, s, v.example)}
	case err != nil:
		return &Error{fmt.Sprintf("--%s: %v", v.name, err)}
	}
	v.text, *v.n = s, n
	return nil
}

// gpuValue is --device-memory: a device of a size, or a GPU by name
// (budget.LookupGPU), with its memory.
type gpuValue struct {
	text string
	gpu  *budget.GPU
}

// GPU defines --device-memory in fs, bound to dst (Memory 0 until
// given).
func GPU(fs *pflag.FlagSet, dst *budget.GPU, usage string) {
	fs.Var(&gpuValue{gpu: dst}, "device-memory", usage+strings.Join(budget.GPUNames(), ", "))
}

func (v *gpuValue) String() string { return v.text }
func (*gpuValue) Type() string     { return "string" }

func (v *gpuValue) Set(s string) error {
	if g, ok := budget.LookupGPU(s); ok {
		v.text, *v.gpu = s, g
		return nil
	}
	if n, err := units.ParseBytes(s); err == nil && n > 0 {
		v.text, *v.gpu = s, budget.GPU{Memory: n}
		return nil
	}
	return &Error{fmt.Sprintf("--device-memory %q: neither a size (80GiB) nor a GPU this knows (%s)",
		s, strings.Join(budget.GPUNames(), ", "))}
}

// neutralValue is --neutral-paths, which every command that writes output
// takes (cmd/memscope's commandFlags adds it): rewrite the paths of frames and of input
// files to neutral prefixes (srcpath.Neutral) before anything is
// analysed, so that no output shows a home directory, a venv or the
// working directory.
type neutralValue struct{ on *bool }

// Neutral defines --neutral-paths in fs, on by default when def is
// set (report: its pages are attached to issues).
func Neutral(fs *pflag.FlagSet, def bool) {
	v := neutralValue{new(bool)}
	*v.on = def
	usage := "rewrite the paths of frames and input files to <site-packages>/, <python>/, <home>/, ./ and <repo>/ (for sharing)"
	if def {
		usage += "; --neutral-paths=false keeps them"
	}
	fs.Var(v, "neutral-paths", usage)
	fs.Lookup("neutral-paths").NoOptDefVal = "true"
}

func (v neutralValue) String() string { return strconv.FormatBool(v.on != nil && *v.on) }

func (neutralValue) Type() string { return "bool" }

func (v neutralValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return &Error{fmt.Sprintf("--neutral-paths=%s: want true or false", s)}
	}
	*v.on = b
	return nil
}

// NeutralOf is the rewriting fs's --neutral-paths asks for, nil when it
// is off or fs has none (capture's and sweep's own --neutral-paths are
// the harness's: it rewrites the files it writes).
func NeutralOf(fs *pflag.FlagSet) *srcpath.Neutral {
	f := fs.Lookup("neutral-paths")
	if f == nil {
		return nil
	}
	v, ok := f.Value.(neutralValue)
	if !ok || !*v.on {
		return nil
	}
	nr := &srcpath.Neutral{}
	nr.Home, _ = os.UserHomeDir()
	nr.WorkDir, _ = os.Getwd()
	return nr
}

// SizeOf is the bytes of fs's size flag name (defined by Size), 0 when fs
// has no such flag or it was not given.
func SizeOf(fs *pflag.FlagSet, name string) int64 {
	if f := fs.Lookup(name); f != nil {
		if v, ok := f.Value.(*sizeValue); ok {
			return *v.n
		}
	}
	return 0
}
