package trace

import (
	"fmt"
	"slices"
	"strings"
)

// TablesOptions choose the tables Tables makes ('memscope ops').
type TablesOptions struct {
	ByModule bool    // group by nn.Module (ModuleTable) instead of by operator
	Rows     OpRows  // how operator tables name the backward ops' rows
	Sort     SortKey // the rows' order
	// CPU lists CPU memory too; a trace with CPU memory only (a model run
	// on the CPU) has its tables listed without it.
	CPU bool
	// Device lists only the GPU device of that index; -1 every device.
	Device int
	// Source names the trace in errors: the path it was read from.
	Source string
}

// Tables is one table of the trace's memory events per device opt shows,
// in Devices' order; cpuOnly reports that the trace has CPU memory only.
// A trace with no memory events, or none on opt.Device, is an error
// naming opt.Source and what it has.
func (t *Trace) Tables(opt TablesOptions) (tables []*Table, cpuOnly bool, err error) {
	devs := t.Devices()
	if len(devs) == 0 {
		return nil, false, fmt.Errorf("%s: no [memory] events: record the trace with torch.profiler.profile(profile_memory=True)", opt.Source)
	}
	cpuOnly = !slices.ContainsFunc(devs, func(d Device) bool { return !d.CPU() })
	var present []string
	for _, dev := range devs {
		if !dev.CPU() {
			present = append(present, dev.String())
		}
		if dev.CPU() && !opt.CPU && !cpuOnly || opt.Device >= 0 && (dev.CPU() || int(dev.ID) != opt.Device) {
			continue
		}
		var tb *Table
		if opt.ByModule {
			tb = t.ModuleTable(dev)
		} else {
			tb = t.OpTableRows(dev, opt.Rows)
		}
		tb.Sort(opt.Sort)
		tables = append(tables, tb)
	}
	if len(tables) == 0 {
		has := "none on a GPU"
		if len(present) > 0 {
			has = strings.Join(present, ", ")
		}
		return nil, cpuOnly, fmt.Errorf("--device %d: %s has no memory events of that device; it has %s", opt.Device, opt.Source, has)
	}
	return tables, cpuOnly, nil
}
