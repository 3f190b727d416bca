package trace

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestTables: the tables of 'memscope ops' on the profiled Llama: one per
// GPU device by default, the CPU's too with CPU, each the device's own
// table sorted as asked; a device the trace lacks, or a trace with no
// memory events, is an error naming the source.
func TestTables(t *testing.T) {
	tr, err := Open(filepath.Join(fixtureDir, "trace.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	var gpus, all []Device
	for _, d := range tr.Devices() {
		if !d.CPU() {
			gpus = append(gpus, d)
		}
		all = append(all, d)
	}
	if len(gpus) == 0 || len(all) == len(gpus) {
		t.Fatalf("fixture devices %v: want GPU and CPU memory", all)
	}
	for _, c := range []struct {
		name string
		opt  TablesOptions
		devs []Device
		want func(Device) *Table
	}{
		{"gpus", TablesOptions{Rows: BackwardByOp, Sort: BySelf, Device: -1}, gpus, func(d Device) *Table { return tr.OpTableRows(d, BackwardByOp) }},
		{"cpu too", TablesOptions{Rows: MergeBackward, Sort: ByTotal, CPU: true, Device: -1}, all, func(d Device) *Table { return tr.OpTableRows(d, MergeBackward) }},
		{"modules", TablesOptions{ByModule: true, Sort: ByPeakLive, Device: int(gpus[0].ID)}, gpus[:1], tr.ModuleTable},
	} {
		t.Run(c.name, func(t *testing.T) {
			tables, cpuOnly, err := tr.Tables(c.opt)
			if err != nil || cpuOnly {
				t.Fatalf("Tables() = %v, cpuOnly %v", err, cpuOnly)
			}
			if len(tables) != len(c.devs) {
				t.Fatalf("Tables() = %d tables, want %d (%v)", len(tables), len(c.devs), c.devs)
			}
			for i, d := range c.devs {
				want := c.want(d)
				want.Sort(c.opt.Sort)
				if got, w := fmt.Sprint(tables[i].Rows), fmt.Sprint(want.Rows); got != w {
					t.Errorf("Tables()[%d] is not %s's table sorted by %v", i, d, c.opt.Sort)
				}
			}
		})
	}
	if _, _, err := tr.Tables(TablesOptions{Device: 7, Source: "t.json"}); err == nil || !strings.Contains(err.Error(), "--device 7: t.json has no memory events of that device; it has "+gpus[0].String()) {
		t.Errorf("Tables(device 7) = %v, want the devices it has", err)
	}
	empty := &Trace{} // Decode refuses a trace without memory events; a Trace built otherwise may have none
	if _, _, err := empty.Tables(TablesOptions{Device: -1, Source: "empty.json"}); err == nil || !strings.HasPrefix(err.Error(), "empty.json: no [memory] events") {
		t.Errorf("Tables(no memory) = %v, want no [memory] events", err)
	}
}
