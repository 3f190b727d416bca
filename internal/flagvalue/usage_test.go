package flagvalue

import (
	"testing"

	"github.com/spf13/pflag"
)

func TestCheckArgs(t *testing.T) {
	for _, tt := range []struct {
		spec    string
		got     []string
		wantErr string
	}{
		{"", nil, ""},
		{"", []string{"x"}, `unexpected argument "x"`},
		{"SNAP...", nil, "missing SNAP argument"},
		{"SNAP...", []string{"a"}, ""},
		{"SNAP...", []string{"a", "b", "c"}, ""},
		{"A B", []string{"a"}, "missing B argument"},
		{"A B", []string{"a", "b"}, ""},
		{"A B", []string{"a", "b", "c"}, `unexpected argument "c"`},
		{"[COMMAND]", nil, ""},
		{"[COMMAND]", []string{"x"}, ""},
		{"[COMMAND]", []string{"x", "y"}, `unexpected argument "y"`},
		{"SNAP [TRACE...]", nil, "missing SNAP argument"},
		{"SNAP [TRACE...]", []string{"a", "b", "c"}, ""},
	} {
		err := CheckArgs(tt.spec, tt.got)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tt.wantErr {
			t.Errorf("CheckArgs(%q, %q) = %q, want %q", tt.spec, tt.got, gotErr, tt.wantErr)
		}
	}
}

// TestUsages: one flag a line in definition order, names aligned, the
// usage's `PLACEHOLDER` or a word for pflag's type, defaults other than
// the zero ones, no "[=true|false]", hidden flags left out.
func TestUsages(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.BoolP("json", "j", false, "write JSON")
	fs.Int("top", 15, "list the `N` largest sites")
	fs.Int("jobs", 0, "workers")
	fs.String("at", "peak", "the moment")
	fs.IntSlice("batch", []int{1, 2, 4}, "the ladder")
	fs.Float64("frac", 0, "a fraction")
	fs.Bool("old", false, "hidden")
	fs.MarkHidden("old")
	var n int64
	Size(fs, &n, "max-memory", true, "8GiB", "up to `SIZE`")
	want := "" +
		"  -j, --json              write JSON\n" +
		"      --top N             list the N largest sites (default 15)\n" +
		"      --jobs N            workers\n" +
		"      --at S              the moment (default peak)\n" +
		"      --batch LIST        the ladder (default 1,2,4)\n" +
		"      --frac F            a fraction\n" +
		"      --max-memory SIZE   up to SIZE\n"
	if got := Usages(fs); got != want {
		t.Errorf("Usages =\n%s\nwant\n%s", got, want)
	}
}
