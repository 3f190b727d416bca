package fit

import (
	"slices"
	"strings"
	"testing"

	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/snapshot"
)

func TestParseBatches(t *testing.T) {
	for _, c := range []struct {
		in      string
		n       int
		want    []int
		wantErr string
	}{
		{"1, 2,4", 3, []int{1, 2, 4}, ""},
		{"1,0", 2, nil, "want batch sizes of 1 or more"},
		{"1,x", 2, nil, "want batch sizes of 1 or more"},
		{"1,2", 3, nil, "--batches names 2 batches for 3 files"},
	} {
		got, err := ParseBatches(c.in, c.n)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("ParseBatches(%q, %d) = %v, want an error containing %q", c.in, c.n, err, c.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseBatches(%q, %d) = %v, %v; want %v", c.in, c.n, got, err, c.want)
		}
	}
}

func TestCap(t *testing.T) {
	h100, _ := budget.LookupGPU("H100")
	for _, c := range []struct {
		name     string
		limit    int64
		gpu      budget.GPU
		want     int64
		wantFrom string
		wantErr  string
	}{
		{"limit", 8 << 30, budget.GPU{}, 8 << 30, "--memory-limit", ""},
		{"named GPU", 0, h100, h100.Memory - 1<<30, "H100 less 1.00 GiB outside the allocator (--overhead)", ""},
		{"sized device", 0, budget.GPU{Memory: 4 << 30}, 3 << 30, "4.00 GiB less 1.00 GiB outside the allocator (--overhead)", ""},
		{"both", 8 << 30, h100, 0, "", "not both"},
		{"neither", 0, budget.GPU{}, 0, "", "fit needs the cap"},
		{"nothing left", 0, budget.GPU{Memory: 1 << 30}, 0, "", "leaves nothing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, from, err := Cap(c.limit, c.gpu, 1<<30)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("Cap() = %v, want an error containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want || from != c.wantFrom {
				t.Errorf("Cap() = %d, %q, %v; want %d, %q", got, from, err, c.want, c.wantFrom)
			}
		})
	}
}

func TestSettings(t *testing.T) {
	sets, err := Settings([]string{"expandable_segments:True"})
	if err != nil || len(sets) != 2 || sets[0].Conf != "" || sets[1].Conf != "expandable_segments:True" || !sets[1].Settings.Expandable {
		t.Errorf("Settings() = %+v, %v; want the recorded, then expandable segments", sets, err)
	}
	if _, err := Settings([]string{"no_such_option:1"}); err == nil || !strings.HasPrefix(err.Error(), `--conf "no_such_option:1": `) {
		t.Errorf("Settings(bad) = %v, want an error naming the --conf", err)
	}
}

func TestFirstDevice(t *testing.T) {
	s := &snapshot.Snapshot{Traces: [][]snapshot.Event{nil, {{}}, {{}}}}
	for _, c := range []struct{ device, want int }{{-1, 1}, {2, 2}, {0, 0}} {
		if got := FirstDevice(s, c.device); got != c.want {
			t.Errorf("FirstDevice(%d) = %d, want %d", c.device, got, c.want)
		}
	}
	if got := FirstDevice(&snapshot.Snapshot{}, -1); got != 0 {
		t.Errorf("FirstDevice(no events) = %d, want 0", got)
	}
}
