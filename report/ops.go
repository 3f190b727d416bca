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
				units.Bytes(r.SelfPeakLive), r.Allocs, clipTail(r.Name, 52))
		} else {
			fprintf(tw, "%s\t%s\t%d\t %s\n", units.Bytes(r.SelfAlloc), units.Bytes(r.TotalAlloc), r.Allocs, clipTail(r.Name, 52))
		}
	}
	tw.Flush()
	if len(tb.Rows) > top {
		ew.printf("(%d more rows; --top to see them)\n", len(tb.Rows)-top)
	}
	return ew.err
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
		j.Rows = append(j.Rows, OpRowJSON{r.Name, r.Kind, r.Path, r.Calls, r.Allocs, r.TotalAllocs,
			r.SelfAlloc, r.TotalAlloc, r.SelfNet, r.TotalNet, r.SelfPeakLive, r.TotalPeakLive})
	}
	return j
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
