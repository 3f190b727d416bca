package report

import (
	"io"
	"text/tabwriter"

	"github.com/memscope/memscope/internal/textsafe"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/trace"
)

// opsText writes a per-operator (or per-module) memory table.
func opsText(w io.Writer, name string, tb *trace.Table, top int) error {
	ew := &errWriter{w: w}
	from := "Total Allocated"
	if !tb.Recorded.TotalAllocated {
		from = "running sum of Bytes from the trace's start; no Total Allocated recorded"
	}
	ew.printf("%s, %s: %d memory events, peak allocated %s (%s)\n",
		name, tb.Device, tb.Events, units.Bytes(tb.Peak.Allocated), from)
	if tb.NoOp+tb.Unattributed > 0 {
		ew.printf("%d events outside any op charged to their Python function, %d to none\n", tb.NoOp, tb.Unattributed)
	}
	live := tb.Recorded.Addr
	if !live {
		ew.printf("no block addresses in the trace: the bytes each op left live at the peak are not known\n")
	}
	ew.printf("\n")
	tw := newTable(ew, tabwriter.AlignRight)
	if live {
		fprintf(tw, "self alloc\ttotal alloc\tlive at peak\tallocs\t %s\n", "operator")
	} else {
		fprintf(tw, "self alloc\ttotal alloc\tallocs\t %s\n", "operator")
	}
	for i, r := range tb.Rows {
		if i == top {
			break
		}
		if live {
			fprintf(tw, "%s\t%s\t%s\t%d\t %s\n", units.Bytes(r.SelfAlloc), units.Bytes(r.TotalAlloc),
				units.Bytes(r.SelfPeakLive), r.Allocs, clipMiddle(r.Name, opNameWidth))
		} else {
			fprintf(tw, "%s\t%s\t%d\t %s\n", units.Bytes(r.SelfAlloc), units.Bytes(r.TotalAlloc), r.Allocs, clipMiddle(r.Name, opNameWidth))
		}
	}
	tw.Flush()
	if top >= 0 && len(tb.Rows) > top {
		ew.printf("(%d more rows; --top to see them)\n", len(tb.Rows)-top)
	}
	if types := tb.ModuleTypes(); len(types) > 0 && len(types) < countModules(tb) {
		ew.printf("\nby module type (the sums over its instances):\n")
		tw := newTable(ew, tabwriter.AlignRight)
		if live {
			fprintf(tw, "self alloc\ttotal alloc\tlive at peak\tallocs\tinstances\t %s\n", "module type")
		} else {
			fprintf(tw, "self alloc\ttotal alloc\tallocs\tinstances\t %s\n", "module type")
		}
		for i, r := range types {
			if i == top {
				break
			}
			if live {
				fprintf(tw, "%s\t%s\t%s\t%d\t%d\t %s\n", units.Bytes(r.SelfAlloc), units.Bytes(r.TotalAlloc),
					units.Bytes(r.SelfPeakLive), r.Allocs, r.Instances, clipMiddle(r.Name, opNameWidth))
			} else {
				fprintf(tw, "%s\t%s\t%d\t%d\t %s\n", units.Bytes(r.SelfAlloc), units.Bytes(r.TotalAlloc), r.Allocs, r.Instances, clipMiddle(r.Name, opNameWidth))
			}
		}
		tw.Flush()
	}
	return ew.err
}

// countModules counts the module rows of a table.
func countModules(tb *trace.Table) int {
	n := 0
	for _, r := range tb.Rows {
		if r.Kind == "nn.Module" {
			n++
		}
	}
	return n
}

// opNameWidth is the most runes of an operator's name the ops table
// prints: a backward op's label names the forward op and module at its end.
const opNameWidth = 96

// clipMiddle shortens s to n runes keeping its start and its end, which
// tell rows apart: "aten::mm (backward of aten::mm in nn.Module: Linear_3)"
// keeps both the op and the module.
func clipMiddle(s string, n int) string {
	r := []rune(textsafe.Escape(s))
	if len(r) <= n {
		return string(r)
	}
	head := (n - 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
}

// OpsJSON is the document of 'memscope ops --json'.
type OpsJSON struct {
	Device      string  `json:"device"`
	PeakBytes   int64   `json:"peak_allocated"`
	PeakEpochUS float64 `json:"peak_time_epoch_us"`
	// AllocatedFrom says where the allocated figures come from:
	// "total_allocated" (the events' Total Allocated) or "sum_of_bytes"
	// (the running sum of Bytes from the trace's start, torch before 1.13).
	AllocatedFrom string `json:"allocated_from"`
	// LiveAtPeakKnown is false when the events carry no addresses: the
	// live-at-peak fields are then 0, not measured.
	LiveAtPeakKnown bool        `json:"live_at_peak_known"`
	Events          int         `json:"events"`
	NoOp            int         `json:"events_outside_ops"`
	Unattributed    int         `json:"events_unattributed"`
	Rows            []OpRowJSON `json:"rows"`
	// ModuleTypes (--by module): the rows summed by module type.
	ModuleTypes []ModuleTypeJSON `json:"module_types,omitempty"`
}

// ModuleTypeJSON is one module type's row: the sums over its instances.
type ModuleTypeJSON struct {
	OpRowJSON
	Instances int `json:"instances"`
}

type OpRowJSON struct {
	Name          string `json:"name"`
	Kind          string `json:"kind"`
	Path          string `json:"path,omitempty"`
	Calls         int    `json:"calls"`
	Allocs        int    `json:"allocs"`
	TotalAllocs   int    `json:"total_allocs"`
	SelfAlloc     int64  `json:"self_alloc_bytes"`
	TotalAlloc    int64  `json:"total_alloc_bytes"`
	SelfNet       int64  `json:"self_net_bytes"`
	TotalNet      int64  `json:"total_net_bytes"`
	SelfPeakLive  int64  `json:"self_live_at_peak_bytes"`
	TotalPeakLive int64  `json:"total_live_at_peak_bytes"`
}

// opsJSON converts a table, keeping the first top rows (all when top < 0).
func opsJSON(tb *trace.Table, top int) OpsJSON {
	j := OpsJSON{Device: tb.Device.String(), PeakBytes: tb.Peak.Allocated, PeakEpochUS: float64(tb.Peak.Time) / 1e3, Events: tb.Events,
		AllocatedFrom: "total_allocated", LiveAtPeakKnown: tb.Recorded.Addr,
		NoOp: tb.NoOp, Unattributed: tb.Unattributed, Rows: []OpRowJSON{}}
	if !tb.Recorded.TotalAllocated {
		j.AllocatedFrom = "sum_of_bytes"
	}
	for i, r := range tb.Rows {
		if top >= 0 && i == top {
			break
		}
		j.Rows = append(j.Rows, opRowJSON(r))
	}
	for _, r := range tb.ModuleTypes() {
		j.ModuleTypes = append(j.ModuleTypes, ModuleTypeJSON{opRowJSON(r.Stats), r.Instances})
	}
	return j
}

func opRowJSON(r trace.Stats) OpRowJSON {
	return OpRowJSON{r.Name, r.Kind, r.Path, r.Calls, r.Allocs, r.TotalAllocs,
		r.SelfAlloc, r.TotalAlloc, r.SelfNet, r.TotalNet, r.SelfPeakLive, r.TotalPeakLive}
}

// clipTail shortens s to n runes, keeping its start (the informative part
// of an operator's name) before "…".
func clipTail(s string, n int) string {
	r := []rune(textsafe.Escape(s))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}
