package snapshot_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// TestTimeBackwards: a trace whose time_us steps back (entries 2 and 3
// here) gets a warning naming the first such entry, the times around it
// and the count; one whose times only rise gets none.
func TestTimeBackwards(t *testing.T) {
	const b = int64(1 << 30)
	fr := snapgen.Frame("f", "m.py", 1)
	for _, c := range []struct {
		name  string
		times []int64
		want  string
	}{
		{"backwards", []int64{1000, 2000, 500, 400, 3000}, "time runs backwards at 2 entries (the first: entry 2 at time_us 500, after 2000; the largest step back 1500 µs)"},
		{"forwards", []int64{1000, 2000, 2000, 2500, 3000}, ""},
	} {
		tr := []map[string]any{
			snapgen.Ev("alloc", b, 512, c.times[0], fr), snapgen.Ev("alloc", b+512, 512, c.times[1], fr),
			snapgen.Ev("free_requested", b, 512, c.times[2], fr), snapgen.Ev("free_completed", b, 512, c.times[3], fr),
			snapgen.Ev("alloc", b+1024, 512, c.times[4], fr),
		}
		seg := snapgen.Seg(b, snapgen.Blk(512, 0, "inactive"), snapgen.Blk(512, 512, "active_allocated"), snapgen.Blk(512, 512, "active_allocated"), snapgen.Blk(2<<20-1536, 0, "inactive"))
		var buf bytes.Buffer
		if err := snapgen.Plain(&buf, map[string]any{"segments": []any{seg}, "device_traces": []any{tr}}); err != nil {
			t.Fatal(err)
		}
		s, err := snapshot.Decode(&buf, c.name)
		if err != nil {
			t.Fatal(err)
		}
		tl := snapshot.Replay(s, 0, snapshot.ReplayOptions{})
		got := ""
		for _, w := range tl.Warnings {
			if w.Kind == snapshot.WarnContradiction {
				t.Fatalf("%s: the test's snapshot contradicts itself: %s", c.name, w.Message)
			}
			if w.Kind == snapshot.WarnTimeBackwards {
				got = w.Message
			}
		}
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: time-backwards warning %q, want %q", c.name, got, c.want)
		}
	}
}
