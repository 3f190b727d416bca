package flagvalue

import (
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/budget"
)

// parse defines flags with def in a fresh FlagSet and parses args, giving
// the message a command line would print (Message) or "".
func parse(def func(fs *pflag.FlagSet), args ...string) (*pflag.FlagSet, string) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	def(fs)
	if err := fs.Parse(args); err != nil {
		return fs, Message(err)
	}
	return fs, ""
}

func TestDevice(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want int
		msg  string
	}{
		{nil, -1, ""},
		{[]string{"--device", "3"}, 3, ""},
		{[]string{"--device", "-1"}, -1, ""},
		{[]string{"--device", "-2"}, -1, "--device -2: want a device number, or -1 for all"},
		{[]string{"--device", "cuda:0"}, -1, `--device "cuda:0": want a device number, or -1 for all`},
	} {
		var n int
		fs, msg := parse(func(fs *pflag.FlagSet) { Device(fs, &n, "") }, tt.args...)
		if n != tt.want || msg != tt.msg {
			t.Errorf("Device(%q) = %d, %q; want %d, %q", tt.args, n, msg, tt.want, tt.msg)
		}
		if got := fs.Lookup("device").Value.String(); tt.msg == "" && got != strconv.Itoa(tt.want) {
			t.Errorf("Device(%q).String() = %q, want %d", tt.args, got, tt.want)
		}
	}
}

func TestSize(t *testing.T) {
	for _, tt := range []struct {
		positive bool
		arg      string
		want     int64
		msg      string
	}{
		{true, "24GiB", 24 << 30, ""},
		{true, "1073741824", 1 << 30, ""},
		{true, "0", -1, `--limit "0": want a size such as 8GiB`},
		{true, "lots", -1, `--limit "lots": want a size such as 8GiB`},
		{false, "0", 0, ""},
		{false, "1.5KiB", 1536, ""},
	} {
		n := int64(-1)
		fs, msg := parse(func(fs *pflag.FlagSet) { Size(fs, &n, "limit", tt.positive, "8GiB", "") }, "--limit", tt.arg)
		if n != tt.want || msg != tt.msg {
			t.Errorf("Size(positive %v, %q) = %d, %q; want %d, %q", tt.positive, tt.arg, n, msg, tt.want, tt.msg)
		}
		if tt.msg == "" {
			if got := SizeOf(fs, "limit"); got != tt.want {
				t.Errorf("SizeOf(%q) = %d, want %d", tt.arg, got, tt.want)
			}
			if got := fs.Lookup("limit").Value.String(); got != tt.arg {
				t.Errorf("Size(%q).String() = %q", tt.arg, got)
			}
		}
	}
	// Not positive: the parser's reason.
	var n int64
	if _, msg := parse(func(fs *pflag.FlagSet) { Size(fs, &n, "max-leak", false, "", "") }, "--max-leak", "x"); msg == "" || msg[:11] != "--max-leak:" {
		t.Errorf("Size(--max-leak x) = %q, want --max-leak: and the parser's reason", msg)
	}
	fs, _ := parse(func(fs *pflag.FlagSet) { Size(fs, &n, "max-memory", true, "8GiB", "") })
	if got := SizeOf(fs, "max-memory"); got != 0 {
		t.Errorf("SizeOf(not given) = %d, want 0", got)
	}
	if got := SizeOf(fs, "other"); got != 0 {
		t.Errorf("SizeOf(no such flag) = %d, want 0", got)
	}
}

func TestGPU(t *testing.T) {
	h100, ok := budget.LookupGPU(budget.GPUNames()[0])
	if !ok {
		t.Fatalf("LookupGPU(%q) found nothing", budget.GPUNames()[0])
	}
	for _, tt := range []struct {
		arg  string
		want budget.GPU
		fail bool
	}{
		{budget.GPUNames()[0], h100, false},
		{"80GiB", budget.GPU{Memory: 80 << 30}, false},
		{"0", budget.GPU{}, true},
		{"no-such-gpu", budget.GPU{}, true},
	} {
		var g budget.GPU
		_, msg := parse(func(fs *pflag.FlagSet) { GPU(fs, &g, "") }, "--device-memory", tt.arg)
		if g != tt.want || (msg != "") != tt.fail {
			t.Errorf("GPU(%q) = %+v, %q; want %+v, failing %v", tt.arg, g, msg, tt.want, tt.fail)
		}
		if tt.fail && msg != `--device-memory "`+tt.arg+`": neither a size (80GiB) nor a GPU this knows (`+strings.Join(budget.GPUNames(), ", ")+`)` {
			t.Errorf("GPU(%q) says %q", tt.arg, msg)
		}
	}
}

func TestNeutral(t *testing.T) {
	home, _ := os.UserHomeDir()
	wd, _ := os.Getwd()
	for _, tt := range []struct {
		def  bool
		args []string
		on   bool
		msg  string
	}{
		{false, nil, false, ""},
		{false, []string{"--neutral-paths"}, true, ""},
		{true, nil, true, ""},
		{true, []string{"--neutral-paths=false"}, false, ""},
		{false, []string{"--neutral-paths=maybe"}, false, "--neutral-paths=maybe: want true or false"},
	} {
		fs, msg := parse(func(fs *pflag.FlagSet) { Neutral(fs, tt.def) }, tt.args...)
		if msg != tt.msg {
			t.Errorf("Neutral(%v, %q) says %q, want %q", tt.def, tt.args, msg, tt.msg)
			continue
		}
		if msg != "" {
			continue
		}
		nr := NeutralOf(fs)
		if (nr != nil) != tt.on {
			t.Errorf("NeutralOf(Neutral(%v, %q)) = %v, want on %v", tt.def, tt.args, nr, tt.on)
		}
		if nr != nil && (nr.Home != home || nr.WorkDir != wd) {
			t.Errorf("NeutralOf(...) = home %q, dir %q; want %q, %q", nr.Home, nr.WorkDir, home, wd)
		}
	}
	if nr := NeutralOf(pflag.NewFlagSet("none", pflag.ContinueOnError)); nr != nil {
		t.Errorf("NeutralOf(no flag) = %v, want nil", nr)
	}
}
