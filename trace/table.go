package trace

import (
	"cmp"
	"slices"
	"strings"
)

// Stats is the memory one operator (or module) accounts for on one device.
// Self counts events attributed to the op itself; Total adds those of every
// op nested in it on the same thread, each event counted once per name even
// under recursion.
type Stats struct {
	Name string
	// Kind: "cpu_op", "user_annotation", "python_function" (events with no
	// enclosing op, counted under the python function that ran them),
	// "nn.Module", or "(none)" for events with neither.
	Kind string
	// Path, for modules, is the chain of enclosing modules (ModulePath).
	Path string

	// Calls counts op or module instances in the trace (0 for
	// python_function and (none) rows, which are not counted).
	Calls                       int
	Allocs, TotalAllocs         int   // allocation events (self, total)
	SelfAlloc, TotalAlloc       int64 // bytes allocated (positive Bytes)
	SelfNet, TotalNet           int64 // signed bytes, frees included
	SelfPeakLive, TotalPeakLive int64 // bytes it allocated still live at the peak
}

// SelfFreed is the bytes the row's own events freed (the negative Bytes):
// SelfAlloc − SelfNet. A backward op that frees the tensors its forward
// saved frees more than it allocates; its SelfNet, as key_averages' self
// memory, is negative.
func (s *Stats) SelfFreed() int64 { return s.SelfAlloc - s.SelfNet }

// Table is a per-operator or per-module memory table for one device.
type Table struct {
	Device Device
	Peak   Peak
	Rows   []Stats
	// Events counts the device's memory events; NoOp those attributed to a
	// python function because no op contained them, Unattributed those
	// with neither. LiveAtPeak sums the bytes of allocations made in the
	// trace and live at the peak (the rest of Peak.Allocated was allocated
	// before the trace began).
	Events, NoOp, Unattributed int
	LiveAtPeak                 int64
	// Recorded says what the device's events carried: without Addr the
	// live-at-peak figures are unknown (zero); without Total Allocated the
	// peak is that of the running sum of Bytes.
	Recorded Recorded
	// ByModule marks a ModuleTable. Python counts the trace's
	// python_function events and Modules the nn.Module calls among them:
	// torch writes both only when recording with_stack=True (with_modules
	// names modules of TorchScript models only), so a trace without python
	// functions holds no module to group by, and its module table no rows.
	ByModule        bool
	Python, Modules int
}

// SortKey picks the column a Table is sorted by, largest first.
type SortKey int

// Sort keys.
const (
	BySelf      SortKey = iota // the larger of SelfAlloc and SelfFreed
	ByTotal                    // TotalAlloc
	ByPeakLive                 // SelfPeakLive
	BySelfNet                  // |SelfNet|
	BySelfAlloc                // SelfAlloc alone, frees ignored
)

// Sort orders the rows by key, largest first, ties by name. BySelf ranks
// a row by the bytes its own events allocated or, when they freed more,
// freed: the memory the op itself moved, so that a backward op whose net is
// a free (key_averages' negative self memory) ranks with the ops that
// allocate as much.
func (tb *Table) Sort(key SortKey) {
	val := func(s *Stats) int64 {
		switch key {
		case ByTotal:
			return s.TotalAlloc
		case ByPeakLive:
			return s.SelfPeakLive
		case BySelfNet:
			if s.SelfNet < 0 {
				return -s.SelfNet
			}
			return s.SelfNet
		case BySelfAlloc:
			return s.SelfAlloc
		}
		// An op that frees what others allocated (a backward op and the
		// activations its forward saved) ranks by the bytes it frees.
		return max(s.SelfAlloc, s.SelfFreed())
	}
	slices.SortStableFunc(tb.Rows, func(a, b Stats) int {
		if c := cmp.Compare(val(&b), val(&a)); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// OpRows says how OpTable names the rows of ops that run in backward.
type OpRows uint8

const (
	// MergeBackward: with their forward namesakes, by operator name.
	MergeBackward OpRows = iota
	// BackwardByOp: rows of their own, one per operator and the forward
	// op it is the backward of (OpLabel): "aten::mm (backward of
	// aten::linear)".
	BackwardByOp
	// BackwardByInstance: one per module instance too (Label): "aten::mm
	// (backward of aten::linear in nn.Module: Linear_3)".
	BackwardByInstance
)

// OpTable aggregates the device's memory events per operator name with the
// thread-aware attribution (MemEvent.Op, else MemEvent.Py). With
// splitBackward, ops that run in backward get their own rows, named by
// Label: "aten::mm (backward of aten::linear in nn.Module: Linear_3)".
// Rows are sorted BySelf.
func (t *Trace) OpTable(dev Device, splitBackward bool) *Table {
	if splitBackward {
		return t.OpTableRows(dev, BackwardByInstance)
	}
	return t.OpTableRows(dev, MergeBackward)
}

// OpTableRows is OpTable with the backward ops' rows named as rows says.
func (t *Trace) OpTableRows(dev Device, rows OpRows) *Table {
	agg := newAggregator()
	opRows := make([]*Stats, len(t.Ops))
	for i := range t.Ops {
		var name string
		switch rows {
		case BackwardByOp:
			name = t.OpLabel(OpID(i))
		case BackwardByInstance:
			name = t.Label(OpID(i))
		default:
			name = t.OpName(OpID(i))
		}
		opRows[i] = agg.row(name, t.Ops[i].Kind.String())
		opRows[i].Calls++
	}
	pyRows := make([]*Stats, len(t.PyFuncs)) // made when an event needs one
	ops := newTree(len(t.Ops), func(i int) int { return int(t.Ops[i].Parent) }, func(i int) *Stats { return opRows[i] })
	py := newTree(len(t.PyFuncs), func(i int) int { return int(t.PyFuncs[i].Parent) }, func(i int) *Stats {
		if pyRows[i] == nil {
			pyRows[i] = agg.row(t.Str(t.PyFuncs[i].Name), "python_function")
		}
		return pyRows[i]
	})
	none := newTree(1, func(int) int { return -1 }, func(int) *Stats { return agg.row("(none)", "(none)") })
	tb := &Table{Device: dev, Peak: t.Peak(dev), Recorded: t.Recorded(dev)}
	t.fill(tb, dev, func(m *MemEvent) (*tree, int) {
		switch {
		case m.Op != NoOp:
			return ops, int(m.Op)
		case m.Py != NoPy:
			tb.NoOp++
			return py, int(m.Py)
		}
		tb.Unattributed++
		return none, 0
	})
	ops.totals()
	py.totals()
	none.totals()
	tb.Rows = agg.rows()
	tb.Sort(BySelf)
	return tb
}

// ModuleTable aggregates the device's memory events per nn.Module
// (MemEvent.Module; backward allocations count for the forward op's
// module). Total includes nested modules. Events outside any module are
// left out and counted in Unattributed.
func (t *Trace) ModuleTable(dev Device) *Table {
	tb := &Table{Device: dev, Peak: t.Peak(dev), Recorded: t.Recorded(dev), ByModule: true, Python: len(t.PyFuncs)}
	agg := newAggregator()
	rows := make([]*Stats, len(t.PyFuncs))
	for i := range t.PyFuncs {
		if t.PyFuncs[i].Module {
			tb.Modules++
			r := agg.row(t.Str(t.PyFuncs[i].Name), "nn.Module")
			r.Calls++
			if r.Path == "" {
				r.Path = t.ModulePath(PyID(i))
			}
			rows[i] = r
		}
	}
	// The python tree with rows on its modules only: an event's chain of
	// modules is the modules among its python ancestors.
	mods := newTree(len(t.PyFuncs), func(i int) int { return int(t.PyFuncs[i].Parent) }, func(i int) *Stats { return rows[i] })
	t.fill(tb, dev, func(m *MemEvent) (*tree, int) {
		if m.Module == NoPy {
			tb.Unattributed++
			return nil, 0
		}
		return mods, int(m.Module)
	})
	mods.totals()
	tb.Rows = agg.rows()
	tb.Sort(BySelf)
	return tb
}

// fill adds every memory event of dev to the node of a tree that at
// names (nil: none): the node's row gets the self figures at once, and
// tree.totals gives every distinct row on the node's chain of ancestors
// the total figures.
func (t *Trace) fill(tb *Table, dev Device, at func(*MemEvent) (*tree, int)) {
	live := make([]bool, len(t.Memory))
	for _, i := range t.liveAtPeak(dev, tb.Peak.Event) {
		live[i] = true
		tb.LiveAtPeak += t.Memory[i].Bytes
	}
	for i := range t.Memory {
		m := &t.Memory[i]
		if m.Device() != dev || m.OOM {
			continue
		}
		tb.Events++
		tr, node := at(m)
		if tr == nil {
			continue
		}
		f := figures{alloc: max(m.Bytes, 0), net: m.Bytes, events: 1}
		if f.alloc > 0 {
			f.allocs = 1
		}
		if live[i] {
			f.live = m.Bytes
		}
		if r := tr.row(node); r != nil {
			r.SelfAlloc += f.alloc
			r.SelfNet += f.net
			r.Allocs += int(f.allocs)
			r.SelfPeakLive += f.live
		}
		tr.sub[node].add(f)
	}
}

// figures are what one event, or the events under a node, add to a row.
type figures struct {
	alloc, net, allocs, live int64
	events                   int
}

func (f *figures) add(g figures) {
	f.alloc += g.alloc
	f.net += g.net
	f.allocs += g.allocs
	f.live += g.live
	f.events += g.events
}

// tree sums events over a forest given by parent links (a parent's index
// below its child's) without walking each event's chain: an event counts
// in the total of every distinct row on its chain, once per row even when
// the row recurs, which is the sum, over the topmost node of each row on
// any chain (no ancestor of the same row), of the events under it.
type tree struct {
	parent func(int) int
	row    func(int) *Stats // nil for a node with no row
	sub    []figures        // per node: its events; after totals, with those below
}

func newTree(n int, parent func(int) int, row func(int) *Stats) *tree {
	return &tree{parent: parent, row: row, sub: make([]figures, n)}
}

// totals adds the events under each topmost node of a row to the row's
// totals. Only nodes with events under them get a row made.
func (tr *tree) totals() {
	n := len(tr.sub)
	for i := n - 1; i >= 0; i-- {
		if p := tr.parent(i); p >= 0 && tr.sub[i].events > 0 {
			tr.sub[p].add(tr.sub[i])
		}
	}
	// Children lists (CSR), then a depth-first walk counting each row's
	// nodes on the current path.
	start := make([]int32, n+1)
	for i := range n {
		if p := tr.parent(i); p >= 0 {
			start[p+1]++
		}
	}
	for i := range n {
		start[i+1] += start[i]
	}
	kids := make([]int32, start[n])
	fillAt := slices.Clone(start[:n])
	for i := range n {
		if p := tr.parent(i); p >= 0 {
			kids[fillAt[p]] = int32(i)
			fillAt[p]++
		}
	}
	onPath := map[*Stats]int{}
	type frame struct {
		node int
		next int32 // next child to visit
		row  *Stats
	}
	var stack []frame
	for root := range n {
		if tr.parent(root) >= 0 || tr.sub[root].events == 0 {
			continue
		}
		push := func(i int) {
			var r *Stats
			if tr.sub[i].events > 0 {
				r = tr.row(i)
			}
			if r != nil {
				if onPath[r] == 0 {
					s := &tr.sub[i]
					r.TotalAlloc += s.alloc
					r.TotalNet += s.net
					r.TotalAllocs += int(s.allocs)
					r.TotalPeakLive += s.live
				}
				onPath[r]++
			}
			stack = append(stack, frame{node: i, next: start[i], row: r})
		}
		push(root)
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next == start[f.node+1] {
				if f.row != nil {
					onPath[f.row]--
				}
				stack = stack[:len(stack)-1]
				continue
			}
			c := int(kids[f.next])
			f.next++
			if tr.sub[c].events > 0 {
				push(c)
			}
		}
	}
}

// aggregator keeps one row per (name, kind) in order of first use.
type aggregator struct {
	index map[[2]string]*Stats
	order []*Stats
}

func newAggregator() *aggregator { return &aggregator{index: map[[2]string]*Stats{}} }

func (a *aggregator) row(name, kind string) *Stats {
	k := [2]string{name, kind}
	if r, ok := a.index[k]; ok {
		return r
	}
	r := &Stats{Name: name, Kind: kind}
	a.index[k] = r
	a.order = append(a.order, r)
	return r
}

// rows copies the rows out in order of first use.
func (a *aggregator) rows() []Stats {
	out := make([]Stats, 0, len(a.order))
	for _, r := range a.order {
		out = append(out, *r)
	}
	return out
}

// ModuleTypes sums the rows of a module table (ModuleTable) by module
// type: the module's name without the instance number torch's profiler
// appends ("nn.Module: LlamaAttention_3" → "nn.Module: LlamaAttention"),
// Calls counting the instances' calls. Self figures add up exactly; total
// figures are sums over the instances, so a module nested in another of
// its own type counts in both. Rows are sorted by SelfAlloc; types with
// one instance are kept, so every module is in one row.
func (tb *Table) ModuleTypes() []TypeStats {
	agg := newAggregator()
	instances := map[string]int{}
	for _, r := range tb.Rows {
		if r.Kind != "nn.Module" {
			continue
		}
		instances[ModuleType(r.Name)]++
		t := agg.row(ModuleType(r.Name), r.Kind)
		t.Calls += r.Calls
		t.Allocs += r.Allocs
		t.TotalAllocs += r.TotalAllocs
		t.SelfAlloc += r.SelfAlloc
		t.TotalAlloc += r.TotalAlloc
		t.SelfNet += r.SelfNet
		t.TotalNet += r.TotalNet
		t.SelfPeakLive += r.SelfPeakLive
		t.TotalPeakLive += r.TotalPeakLive
	}
	sorted := &Table{Rows: agg.rows()}
	sorted.Sort(BySelf)
	out := make([]TypeStats, len(sorted.Rows))
	for i, r := range sorted.Rows {
		out[i] = TypeStats{Stats: r, Instances: instances[r.Name]}
	}
	return out
}

// TypeStats is one module type's row: the sums over its instances.
type TypeStats struct {
	Stats
	Instances int
}

// ModuleType is a module row's name without its instance number:
// "nn.Module: Linear_14" → "nn.Module: Linear". A name without one is
// returned as it is.
func ModuleType(name string) string {
	i := strings.LastIndexByte(name, '_')
	if i < 0 || i == len(name)-1 {
		return name
	}
	for _, c := range name[i+1:] {
		if c < '0' || c > '9' {
			return name
		}
	}
	return name[:i]
}
