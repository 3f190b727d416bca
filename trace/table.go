package trace

import (
	"cmp"
	"slices"
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
}

// SortKey picks the column a Table is sorted by, largest first.
type SortKey int

// Sort keys.
const (
	BySelf     SortKey = iota // SelfAlloc
	ByTotal                   // TotalAlloc
	ByPeakLive                // SelfPeakLive
	BySelfNet                 // |SelfNet|
)

// Sort orders the rows by key, largest first, ties by name.
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
		}
		return s.SelfAlloc
	}
	slices.SortStableFunc(tb.Rows, func(a, b Stats) int {
		if c := cmp.Compare(val(&b), val(&a)); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// OpTable aggregates the device's memory events per operator name with the
// thread-aware attribution (MemEvent.Op, else MemEvent.Py). With
// splitBackward, ops that run in backward get their own rows, named by
// Label: "aten::mm (backward of aten::linear in nn.Module: Linear_3)".
// Rows are sorted BySelf.
func (t *Trace) OpTable(dev Device, splitBackward bool) *Table {
	agg := newAggregator()
	name := func(id OpID) string {
		if splitBackward {
			return t.Label(id)
		}
		return t.OpName(id)
	}
	for i := range t.Ops {
		agg.row(name(OpID(i)), t.Ops[i].Kind.String()).Calls++
	}
	tb := &Table{Device: dev, Peak: t.Peak(dev), Recorded: t.Recorded(dev)}
	chain := func(m *MemEvent, visit func(name, kind string)) {
		switch {
		case m.Op != NoOp:
			for id := m.Op; id != NoOp; id = t.Ops[id].Parent {
				visit(name(id), t.Ops[id].Kind.String())
			}
		case m.Py != NoPy:
			for p := m.Py; p != NoPy; p = t.PyFuncs[p].Parent {
				visit(t.Str(t.PyFuncs[p].Name), "python_function")
			}
		default:
			visit("(none)", "(none)")
		}
	}
	t.fill(tb, agg, dev, chain)
	for i := range t.Memory {
		if m := &t.Memory[i]; m.Device() == dev && !m.OOM && m.Op == NoOp {
			if m.Py != NoPy {
				tb.NoOp++
			} else {
				tb.Unattributed++
			}
		}
	}
	tb.Rows = agg.rows()
	tb.Sort(BySelf)
	return tb
}

// ModuleTable aggregates the device's memory events per nn.Module
// (MemEvent.Module; backward allocations count for the forward op's
// module). Total includes nested modules. Events outside any module are
// left out and counted in Unattributed.
func (t *Trace) ModuleTable(dev Device) *Table {
	agg := newAggregator()
	for i := range t.PyFuncs {
		if t.PyFuncs[i].Module {
			r := agg.row(t.Str(t.PyFuncs[i].Name), "nn.Module")
			r.Calls++
			if r.Path == "" {
				r.Path = t.ModulePath(PyID(i))
			}
		}
	}
	tb := &Table{Device: dev, Peak: t.Peak(dev), Recorded: t.Recorded(dev)}
	chain := func(m *MemEvent, visit func(name, kind string)) {
		for p := m.Module; p != NoPy; p = t.enclosingModule(t.PyFuncs[p].Parent) {
			visit(t.Str(t.PyFuncs[p].Name), "nn.Module")
		}
	}
	t.fill(tb, agg, dev, chain)
	for i := range t.Memory {
		if m := &t.Memory[i]; m.Device() == dev && !m.OOM && m.Module == NoPy {
			tb.Unattributed++
		}
	}
	tb.Rows = agg.rows()
	tb.Sort(BySelf)
	return tb
}

// fill adds every memory event of dev to the rows its chain names: the
// first name visited gets the self figures, every distinct name the totals.
func (t *Trace) fill(tb *Table, agg *aggregator, dev Device, chain func(*MemEvent, func(name, kind string))) {
	live := map[int]bool{}
	for _, i := range t.liveAtPeak(dev, tb.Peak.Event) {
		live[i] = true
		tb.LiveAtPeak += t.Memory[i].Bytes
	}
	seen := map[*Stats]bool{}
	for i := range t.Memory {
		m := &t.Memory[i]
		if m.Device() != dev || m.OOM {
			continue
		}
		tb.Events++
		alloc := max(m.Bytes, 0)
		first := true
		clear(seen)
		chain(m, func(name, kind string) {
			r := agg.row(name, kind)
			if first {
				first = false
				r.SelfAlloc += alloc
				r.SelfNet += m.Bytes
				if alloc > 0 {
					r.Allocs++
				}
				if live[i] {
					r.SelfPeakLive += m.Bytes
				}
			}
			if seen[r] {
				return
			}
			seen[r] = true
			r.TotalAlloc += alloc
			r.TotalNet += m.Bytes
			if alloc > 0 {
				r.TotalAllocs++
			}
			if live[i] {
				r.TotalPeakLive += m.Bytes
			}
		})
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
