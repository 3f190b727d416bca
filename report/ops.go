package report

import (
	"io"
	"text/tabwriter"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/textsafe"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report/jsondoc"
	"github.com/memscope/memscope/trace"
)

// OpBytesJSON is jsondoc.OpBytesJSON.
type OpBytesJSON = jsondoc.OpBytesJSON

// opRowsJSON converts the by-operator rows of a joined moment.
func opRowsJSON(rows []attribution.OpBytes, top int) []OpBytesJSON {
	out := []OpBytesJSON{}
	for i, r := range rows {
		if top >= 0 && i == top {
			break
		}
		out = append(out, OpBytesJSON{Op: r.Label, Bytes: r.Bytes.Bytes, Blocks: r.Count})
	}
	return out
}

// opBytesText writes the live bytes of a moment by operator (from a joined
// profiler trace).
func opBytesText(w io.Writer, j *attribution.Join, rows []attribution.OpBytes, covered float64, total int64, top int) error {
	ew := &errWriter{w: w}
	ew.printf("\nby operator (joined with the profiler trace; %.1f%% of the bytes allocated in its window found their op):\n", 100*covered)
	joinWindowsText(ew, j)
	for i, r := range rows {
		if i == top {
			break
		}
		share := 0.0
		if total > 0 {
			share = 100 * float64(r.Bytes.Bytes) / float64(total)
		}
		ew.printf("  %10s %5.1f%% %5d  %s\n", units.Bytes(r.Bytes.Bytes), share, r.Count, clipTail(r.Label, 70))
	}
	return ew.err
}

// opsText writes a per-operator (or per-module) memory table. cpuOnly
// says the trace has memory events of the CPU only.
func opsText(w io.Writer, name string, tb *trace.Table, top int, cpuOnly bool) error {
	ew := &errWriter{w: w}
	from := "Total Allocated"
	if !tb.Recorded.TotalAllocated {
		from = "running sum of Bytes from the trace's start; no Total Allocated recorded"
	}
	ew.printf("%s, %s: %s, peak allocated %s (%s)\n",
		name, tb.Device, nouns(tb.Events, "memory event"), units.Bytes(tb.Peak.Allocated), from)
	if cpuOnly {
		ew.printf("CPU memory only: no [memory] event of the trace is on a GPU (a model run on the CPU); these are host memory figures\n")
	}
	if tb.ByModule && tb.Modules == 0 {
		noModulesText(ew, tb)
		return ew.err
	}
	switch {
	case tb.ByModule && tb.Unattributed > 0:
		ew.printf("%s outside any nn.Module call, left out\n", nouns(tb.Unattributed, "event"))
	case !tb.ByModule && tb.NoOp+tb.Unattributed > 0:
		ew.printf("%s outside any op charged to their Python function, %d to none\n", nouns(tb.NoOp, "event"), tb.Unattributed)
	}
	live := tb.Recorded.Addr
	if !live {
		ew.printf("no block addresses in the trace: the bytes each op left live at the peak are not known\n")
	}
	ew.printf("net: bytes allocated less bytes freed, as key_averages' memory columns (negative: the op freed more)\n\n")
	tw := newTable(ew, tabwriter.AlignRight)
	fprintf(tw, opsHead(live)+"\t %s\n", "operator")
	for i := range tb.Rows {
		if i == top {
			break
		}
		r := &tb.Rows[i]
		f, args := opsCells(r, live)
		fprintf(tw, f+"\t %s\n", append(args, clipMiddle(r.Name, opNameWidth))...)
	}
	tw.Flush()
	if top >= 0 && len(tb.Rows) > top {
		ew.printf("(%d more %s; --top to see them)\n", len(tb.Rows)-top, pluralNoun(len(tb.Rows)-top, "row"))
	}
	if types := tb.ModuleTypes(); len(types) > 0 && len(types) < countModules(tb) {
		ew.printf("\nby module type (the sums over its instances):\n")
		tw := newTable(ew, tabwriter.AlignRight)
		fprintf(tw, opsHead(live)+"\tinstances\t %s\n", "module type")
		for i := range types {
			if i == top {
				break
			}
			r := &types[i]
			f, args := opsCells(&r.Stats, live)
			fprintf(tw, f+"\t%d\t %s\n", append(args, r.Instances, clipMiddle(r.Name, opNameWidth))...)
		}
		tw.Flush()
	}
	return ew.err
}

// noModulesText says why a module table has no rows: the trace holds no
// nn.Module call, and how to record one that does.
func noModulesText(ew *errWriter, tb *trace.Table) {
	if tb.Python > 0 {
		ew.printf("no module information: none of the trace's %d Python function events is an nn.Module call\n", tb.Python)
		ew.printf("(the code ran outside nn.Module forward calls); --by op lists its operators\n")
		return
	}
	ew.printf("no module information: the trace has no Python function events, so no nn.Module calls to group by.\n")
	ew.printf("Record it with torch.profiler.profile(..., profile_memory=True, with_stack=True): torch then writes each\n")
	ew.printf("nn.Module call as a python_function event (with_modules=True names modules of TorchScript models only).\n")
	ew.printf("--by op needs neither.\n")
}

// opsHead is the header of the figure columns opsCells writes (no %).
func opsHead(live bool) string {
	h := "self alloc\ttotal alloc\tself net\ttotal net"
	if live {
		h += "\tlive at peak"
	}
	return h + "\tallocs"
}

// opsCells gives the format and values of a row's figures: bytes
// allocated by the op itself and with the ops nested in it, the same net of
// frees (key_averages' self and total memory, negative for an op that
// freed more than it allocated), the bytes it left live at the peak when
// the trace has addresses, and its allocations.
func opsCells(r *trace.Stats, live bool) (string, []any) {
	f := "%s\t%s\t%s\t%s"
	args := []any{units.Bytes(r.SelfAlloc), units.Bytes(r.TotalAlloc), units.Bytes(r.SelfNet), units.Bytes(r.TotalNet)}
	if live {
		f += "\t%s"
		args = append(args, units.Bytes(r.SelfPeakLive))
	}
	return f + "\t%d", append(args, r.Allocs)
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
	LiveAtPeakKnown bool `json:"live_at_peak_known"`
	Events          int  `json:"events"`
	NoOp            int  `json:"events_outside_ops"`
	Unattributed    int  `json:"events_unattributed"`
	// CPUOnly: the trace's memory events are all CPU memory (a model run
	// on the CPU), so the table, of device "cpu", is shown without --cpu.
	CPUOnly bool `json:"cpu_only,omitempty"`
	// ModuleCalls (--by module) counts the trace's nn.Module calls. Torch
	// writes them only with_stack=True: 0 means the trace holds no module
	// information, and rows is empty.
	ModuleCalls *int        `json:"module_calls,omitempty"`
	Rows        []OpRowJSON `json:"rows"`
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
func opsJSON(tb *trace.Table, top int, cpuOnly bool) OpsJSON {
	j := OpsJSON{Device: tb.Device.String(), PeakBytes: tb.Peak.Allocated, PeakEpochUS: float64(tb.Peak.Time) / 1e3, Events: tb.Events,
		AllocatedFrom: "total_allocated", LiveAtPeakKnown: tb.Recorded.Addr,
		NoOp: tb.NoOp, Unattributed: tb.Unattributed, CPUOnly: cpuOnly, Rows: []OpRowJSON{}}
	if tb.ByModule {
		n := tb.Modules
		j.ModuleCalls = &n
	}
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

// Ops is 'memscope ops' of one device of one profiler trace.
type Ops struct {
	Source string
	Table  *trace.Table
	Top    int // rows to print; -1 for all
	// CPUOnly says the trace's memory events are all CPU memory: its CPU
	// table is shown, without --cpu, with a note saying so.
	CPUOnly bool
}

func (*Ops) Kind() string { return "ops" }

func (r *Ops) writeText(w io.Writer) error { return opsText(w, r.Source, r.Table, r.Top, r.CPUOnly) }

// OpsFileJSON is an entry of the ops document: one device's table of one
// trace, or the curves of an export_memory_timeline file.
type OpsFileJSON struct {
	Source   string        `json:"source"`
	Table    *OpsJSON      `json:"table,omitempty"`
	Timeline *TimelineJSON `json:"timeline,omitempty"`
}

func (r *Ops) fileEntry() any {
	t := opsJSON(r.Table, r.Top, r.CPUOnly)
	return OpsFileJSON{Source: r.Source, Table: &t}
}
