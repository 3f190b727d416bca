package trace

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// errNoMemory is returned for a trace that holds no memory events.
var errNoMemory = errors.New("trace has no [memory] events: record it with torch.profiler.profile(profile_memory=True)")

// finish turns the decoded events into the linked, sorted model: absolute
// times, op and python trees, forward/backward links, attribution.
func (d *decoder) finish() error {
	t := d.t
	for k, n := range d.cats {
		t.Counts.ByCat[k] = *n
	}
	t.Counts.Events = d.events
	t.Memory = d.mem.flatten()
	if err := d.boundSizes(); err != nil {
		return err
	}
	t.Ops = d.ops.flatten()
	t.PyFuncs = d.py.flatten()
	t.Calls = d.calls.flatten()
	flows := d.flows.flatten()
	switch {
	case !d.sawList:
		return d.errorf(d.offset(), "not a Chrome trace: no traceEvents array")
	case d.valid == 0:
		return d.errorf(d.offset(), "not a Chrome trace: %d array elements, none an event object with a \"ph\" field", d.events)
	case len(t.Memory) == 0 && d.damage != "":
		return d.errorf(d.damageOff, "the trace is damaged before its first [memory] event: %s; no memory event could be read", d.damage)
	case len(t.Memory) == 0 && d.nonFinite > 0:
		return d.errorf(d.offset(), "no [memory] event could be read: %d event(s) hold NaN or Infinity where a number is needed (the first: %s)", d.nonFinite, d.firstNonFinite)
	case len(t.Memory) == 0:
		return fmt.Errorf("decoding %s: %w", d.name, errNoMemory)
	}
	if d.nonFinite > 0 {
		d.warn(fmt.Sprintf("skipped %d event(s) holding NaN or Infinity where a number is needed (the first: %s); the events after them are kept", d.nonFinite, d.firstNonFinite))
	}
	d.absoluteTimes(flows)
	t.sortAndIndex()
	d.runningTotals()
	t.linkForward(flows, d.warn)
	t.indexForward()
	t.attributeAll()
	return nil
}

// runningTotals fills in TotalAllocated where an event lacks it (the
// previous event's total on the device plus Bytes), records per device
// which values the events carried, and says once what a trace with
// Bytes only cannot tell. Memory must be sorted by time.
func (d *decoder) runningTotals() {
	t := d.t
	t.recorded = map[Device]Recorded{}
	last := map[Device]int64{}
	for i := range t.Memory {
		m := &t.Memory[i]
		if m.OOM {
			continue
		}
		dev := m.Device()
		r := t.recorded[dev]
		if m.has&hasTotalAlloc == 0 {
			m.TotalAllocated = last[dev] + m.Bytes
		}
		last[dev] = m.TotalAllocated
		r.TotalAllocated = r.TotalAllocated || m.has&hasTotalAlloc != 0
		r.TotalReserved = r.TotalReserved || m.has&hasTotalRes != 0
		r.Addr = r.Addr || m.has&hasAddr != 0
		t.recorded[dev] = r
	}
	var summed []string
	noAddr := false
	for _, dev := range t.Devices() {
		if r := t.recorded[dev]; !r.TotalAllocated && isDeviceMem(dev.Type) {
			summed = append(summed, dev.String())
			noAddr = noAddr || !r.Addr
		}
	}
	if len(summed) == 0 {
		return
	}
	msg := fmt.Sprintf("the [memory] events on %s carry Bytes but no Total Allocated (a trace of torch before 1.13): "+
		"allocated is their running sum from the start of the trace, so memory allocated before it is not counted, and reserved is not recorded",
		strings.Join(summed, ", "))
	if noAddr {
		msg += "; without Addr, frees cannot be paired with allocations, so the bytes live at the peak per op are not known"
	}
	d.warn(msg)
}

// absoluteTimes adds baseTimeNanoseconds to every time. Without it, times
// are taken as absolute, which is how older traces wrote them.
func (d *decoder) absoluteTimes(flows []rawFlow) {
	t := d.t
	if !t.Meta.HasBaseTime {
		if t.Memory[0].Time < 1e17 { // before 1973: not epoch time
			d.warn("no baseTimeNanoseconds and ts values too small for epoch time: times are relative to an unknown origin")
		}
		return
	}
	base := t.Meta.BaseTimeNS
	for i := range t.Ops {
		t.Ops[i].Start += base
	}
	for i := range t.PyFuncs {
		t.PyFuncs[i].Start += base
	}
	for i := range t.Calls {
		t.Calls[i].Start += base
	}
	for i := range t.Memory {
		t.Memory[i].Time += base
	}
	for i := range flows {
		flows[i].ts += base
	}
}

// byThreadStart orders intervals by thread, then start, longer first, so
// that a parent always precedes its children.
func byThreadStart(ta, tb ThreadID, sa, sb, da, db int64) int {
	if c := cmp.Compare(ta, tb); c != 0 {
		return c
	}
	if c := cmp.Compare(sa, sb); c != 0 {
		return c
	}
	return cmp.Compare(db, da)
}

// sortAndIndex sorts ops, python functions and memory events, builds the
// per-thread spans and the parent links.
func (t *Trace) sortAndIndex() {
	slices.SortStableFunc(t.Ops, func(a, b Op) int {
		return byThreadStart(a.Thread, b.Thread, a.Start, b.Start, a.Dur, b.Dur)
	})
	slices.SortStableFunc(t.PyFuncs, func(a, b PyFunc) int {
		return byThreadStart(a.Thread, b.Thread, a.Start, b.Start, a.Dur, b.Dur)
	})
	slices.SortStableFunc(t.Memory, func(a, b MemEvent) int { return cmp.Compare(a.Time, b.Time) })

	t.opSpans = make([]span, len(t.Threads))
	for i := 0; i < len(t.Ops); {
		j := i
		for j < len(t.Ops) && t.Ops[j].Thread == t.Ops[i].Thread {
			j++
		}
		t.opSpans[t.Ops[i].Thread] = span{int32(i), int32(j)}
		i = j
	}
	t.pySpans = make([]span, len(t.Threads))
	for i := 0; i < len(t.PyFuncs); {
		j := i
		for j < len(t.PyFuncs) && t.PyFuncs[j].Thread == t.PyFuncs[i].Thread {
			j++
		}
		t.pySpans[t.PyFuncs[i].Thread] = span{int32(i), int32(j)}
		i = j
	}

	nestParents(len(t.Ops), func(i int) (int64, int64) { return t.Ops[i].Start, t.Ops[i].End() },
		func(i int) ThreadID { return t.Ops[i].Thread },
		func(child, parent int) { t.Ops[child].Parent = OpID(parent) })
	t.linkPython()
}

// nestParents finds, per thread, each interval's innermost enclosing
// interval with torch's rule (_populate_cpu_children): a child starts
// before its parent ends and ends no later; partial overlaps are not nested.
// Intervals must be sorted by byThreadStart.
func nestParents(n int, bounds func(int) (int64, int64), thread func(int) ThreadID, set func(child, parent int)) {
	var stack []int
	for i := 0; i < n; i++ {
		if i > 0 && thread(i) != thread(i-1) {
			stack = stack[:0]
		}
		start, end := bounds(i)
		for len(stack) > 0 {
			_, pend := bounds(stack[len(stack)-1])
			if start >= pend || end > pend {
				stack = stack[:len(stack)-1]
				continue
			}
			set(i, stack[len(stack)-1])
			break
		}
		stack = append(stack, i)
	}
}

// linkPython resolves "Python parent id" into PyFunc.Parent. A parent must
// be on the same thread and precede its child in sorted order (which rules
// out cycles); otherwise the time-nesting parent is used. Ids are indexed in
// a slice when they are dense, as Kineto's counters are.
func (t *Trace) linkPython() {
	maxID := int32(-1)
	for i := range t.PyFuncs {
		maxID = max(maxID, t.PyFuncs[i].PythonID)
	}
	lookup := func(int32) (PyID, bool) { return NoPy, false }
	if int(maxID) < max(4*len(t.PyFuncs), 1<<16) {
		byID := make([]PyID, int(maxID)+1)
		for i := range byID {
			byID[i] = NoPy
		}
		for i := range t.PyFuncs {
			if id := t.PyFuncs[i].PythonID; id >= 0 {
				byID[id] = PyID(i)
			}
		}
		lookup = func(id int32) (PyID, bool) {
			if int(id) >= len(byID) || byID[id] == NoPy {
				return NoPy, false
			}
			return byID[id], true
		}
	} else {
		byID := make(map[int32]PyID, len(t.PyFuncs))
		for i := range t.PyFuncs {
			if id := t.PyFuncs[i].PythonID; id >= 0 {
				byID[id] = PyID(i)
			}
		}
		lookup = func(id int32) (PyID, bool) { p, ok := byID[id]; return p, ok }
	}
	for i := range t.PyFuncs {
		t.PyFuncs[i].Parent = NoPy
	}
	nestParents(len(t.PyFuncs), func(i int) (int64, int64) { return t.PyFuncs[i].Start, t.PyFuncs[i].End() },
		func(i int) ThreadID { return t.PyFuncs[i].Thread },
		func(child, parent int) { t.PyFuncs[child].Parent = PyID(parent) })
	for i := range t.PyFuncs {
		p := &t.PyFuncs[i]
		if p.PythonParentID < 0 {
			continue
		}
		if par, ok := lookup(p.PythonParentID); ok && int(par) < i && t.PyFuncs[par].Thread == p.Thread {
			p.Parent = par
		}
	}
}

// innermostOp returns the innermost op on thread th whose interval
// contains time ns (Start ≤ ns ≤ End), ties going to the latest start.
func (t *Trace) innermostOp(th ThreadID, ns int64) OpID {
	if int(th) >= len(t.opSpans) {
		return NoOp
	}
	s := t.opSpans[th]
	ops := t.Ops[s.lo:s.hi]
	i, _ := slices.BinarySearchFunc(ops, ns+1, func(o Op, target int64) int { return cmp.Compare(o.Start, target) })
	if i == 0 {
		return NoOp
	}
	id := OpID(int(s.lo) + i - 1)
	for id != NoOp && t.Ops[id].End() < ns {
		id = t.Ops[id].Parent
	}
	return id
}

// innermostPy is innermostOp for python functions; it climbs the
// time-nesting of PyFunc.Parent, which for real traces is the same tree.
func (t *Trace) innermostPy(th ThreadID, ns int64) PyID {
	if int(th) >= len(t.pySpans) {
		return NoPy
	}
	s := t.pySpans[th]
	fs := t.PyFuncs[s.lo:s.hi]
	i, _ := slices.BinarySearchFunc(fs, ns+1, func(p PyFunc, target int64) int { return cmp.Compare(p.Start, target) })
	if i == 0 {
		return NoPy
	}
	id := PyID(int(s.lo) + i - 1)
	for id != NoPy && t.PyFuncs[id].End() < ns {
		id = t.PyFuncs[id].Parent
	}
	return id
}

// enclosingModule returns the nearest nn.Module at or above a python
// function (modOf, once indexForward has run).
func (t *Trace) enclosingModule(p PyID) PyID {
	if p == NoPy {
		return NoPy
	}
	if len(t.modOf) == len(t.PyFuncs) {
		return t.modOf[p]
	}
	for p != NoPy {
		if t.PyFuncs[p].Module {
			return p
		}
		p = t.PyFuncs[p].Parent
	}
	return NoPy
}

// ForwardOf climbs from op to the nearest ancestor (or itself) linked to a
// forward op and returns that forward op; NoOp outside backward. It is one
// lookup: the answer for every op is computed once, after linking.
func (t *Trace) ForwardOf(op OpID) OpID {
	if op == NoOp {
		return NoOp
	}
	if len(t.fwdOf) == len(t.Ops) {
		return t.fwdOf[op]
	}
	for op != NoOp {
		if f := t.Ops[op].Forward; f != NoOp {
			return f
		}
		op = t.Ops[op].Parent
	}
	return NoOp
}

// indexForward computes, in one pass each, what ForwardOf, enclosingModule
// and Label would otherwise climb the trees for: per op its forward op
// (its own link or its parent's answer: parents precede children), per
// python function its nn.Module, and per op the module around its start
// (the module a backward op's allocations are charged to).
func (t *Trace) indexForward() {
	t.fwdOf = make([]OpID, len(t.Ops))
	for i := range t.Ops {
		o := &t.Ops[i]
		switch {
		case o.Forward != NoOp:
			t.fwdOf[i] = o.Forward
		case o.Parent != NoOp:
			t.fwdOf[i] = t.fwdOf[o.Parent]
		default:
			t.fwdOf[i] = NoOp
		}
	}
	t.modOf = make([]PyID, len(t.PyFuncs))
	for i := range t.PyFuncs {
		p := &t.PyFuncs[i]
		switch {
		case p.Module:
			t.modOf[i] = PyID(i)
		case p.Parent != NoPy:
			t.modOf[i] = t.modOf[p.Parent]
		default:
			t.modOf[i] = NoPy
		}
	}
	// Ops are sorted by thread and start, so the queries of each thread
	// come in time order, as the climber needs.
	py := newClimber(len(t.PyFuncs), func(i int32) int64 { return t.PyFuncs[i].End() },
		func(i int32) int32 { return int32(t.PyFuncs[i].Parent) })
	t.opModule = make([]PyID, len(t.Ops))
	for i := range t.Ops {
		o := &t.Ops[i]
		t.opModule[i] = t.enclosingModule(PyID(py.find(t.lastPyStarting(o.Thread, o.Start), o.Start)))
	}
}

// attributeAll sets the op, python fallback and module of every memory
// event. Memory is sorted by time, so each thread's queries come in time
// order and the climbs of innermostOp and innermostPy are shared between
// events through the climbers' shortcuts.
func (t *Trace) attributeAll() {
	ops := newClimber(len(t.Ops), func(i int32) int64 { return t.Ops[i].End() },
		func(i int32) int32 { return int32(t.Ops[i].Parent) })
	py := newClimber(len(t.PyFuncs), func(i int32) int64 { return t.PyFuncs[i].End() },
		func(i int32) int32 { return int32(t.PyFuncs[i].Parent) })
	for i := range t.Memory {
		m := &t.Memory[i]
		m.Op = OpID(ops.find(t.lastOpStarting(m.Thread, m.Time), m.Time))
		inner := PyID(py.find(t.lastPyStarting(m.Thread, m.Time), m.Time))
		m.Py = NoPy
		if m.Op == NoOp {
			m.Py = inner
		}
		m.Module = t.enclosingModule(inner)
		if m.Module == NoPy {
			if f := t.ForwardOf(m.Op); f != NoOp {
				m.Module = t.moduleAround(f)
			}
		}
	}
}

// climber finds, for a query time ns, the first interval at or above a
// start interval (climbing parent links) whose end is not before ns, as
// innermostOp's loop does, for queries whose times never decrease within
// a thread. An interval that ends before one query ends before every later
// one, so a climb that passed it is remembered: jump[i] = i while i has
// not been passed, else where the climb from it got to (path
// compression). The work over all queries is near-linear in intervals
// plus queries, whatever the depth.
type climber struct {
	end    func(int32) int64
	parent func(int32) int32
	jump   []int32
}

func newClimber(n int, end func(int32) int64, parent func(int32) int32) *climber {
	c := &climber{end: end, parent: parent, jump: make([]int32, n)}
	for i := range c.jump {
		c.jump[i] = int32(i)
	}
	return c
}

// find climbs from start (-1 for none) at time ns.
func (c *climber) find(start int32, ns int64) int32 {
	next := func(i int32) int32 {
		if j := c.jump[i]; j != i {
			return j
		}
		return c.parent(i)
	}
	r := start
	for r >= 0 && c.end(r) < ns {
		r = next(r)
	}
	for i := start; i >= 0 && i != r; {
		n := next(i)
		c.jump[i] = r
		i = n
	}
	return r
}

// lastOpStarting returns the last op (in sorted order) on thread th that
// starts at or before ns; -1 for none.
func (t *Trace) lastOpStarting(th ThreadID, ns int64) int32 {
	if int(th) >= len(t.opSpans) {
		return -1
	}
	s := t.opSpans[th]
	i, _ := slices.BinarySearchFunc(t.Ops[s.lo:s.hi], ns+1, func(o Op, target int64) int { return cmp.Compare(o.Start, target) })
	if i == 0 {
		return -1
	}
	return s.lo + int32(i) - 1
}

// lastPyStarting is lastOpStarting for python functions.
func (t *Trace) lastPyStarting(th ThreadID, ns int64) int32 {
	if int(th) >= len(t.pySpans) {
		return -1
	}
	s := t.pySpans[th]
	i, _ := slices.BinarySearchFunc(t.PyFuncs[s.lo:s.hi], ns+1, func(p PyFunc, target int64) int { return cmp.Compare(p.Start, target) })
	if i == 0 {
		return -1
	}
	return s.lo + int32(i) - 1
}

// CheckValid verifies the invariants the analyses rely on: IDs in range,
// slices sorted, every parent before its child and containing it, memory
// attribution consistent. Decode's output always passes; it is cheap
// enough to call in tests and fuzzing.
func (t *Trace) CheckValid() error {
	nStr, nTh := len(t.Strings), len(t.Threads)
	for i := range t.Ops {
		o := &t.Ops[i]
		if int(o.Name) >= nStr || int(o.Thread) >= nTh {
			return fmt.Errorf("op %d: name %d or thread %d out of range", i, o.Name, o.Thread)
		}
		if i > 0 && byThreadStart(t.Ops[i-1].Thread, o.Thread, t.Ops[i-1].Start, o.Start, t.Ops[i-1].Dur, o.Dur) > 0 {
			return fmt.Errorf("op %d: not sorted by thread and start", i)
		}
		if p := o.Parent; p != NoOp {
			po := &t.Ops[p]
			if int(p) >= i || po.Thread != o.Thread || po.Start > o.Start || po.End() < o.End() {
				return fmt.Errorf("op %d: parent %d does not enclose it", i, p)
			}
		}
		if f := o.Forward; f != NoOp && (f < 0 || int(f) >= len(t.Ops)) {
			return fmt.Errorf("op %d: forward op %d out of range", i, f)
		}
	}
	for i := range t.PyFuncs {
		p := &t.PyFuncs[i]
		if int(p.Name) >= nStr || int(p.Thread) >= nTh {
			return fmt.Errorf("python function %d: name or thread out of range", i)
		}
		if p.Parent != NoPy && (int(p.Parent) >= i || p.Parent < 0) {
			return fmt.Errorf("python function %d: parent %d does not precede it", i, p.Parent)
		}
	}
	for i := range t.Calls {
		if c := &t.Calls[i]; int(c.Name) >= nStr || int(c.Thread) >= nTh {
			return fmt.Errorf("call %d: name or thread out of range", i)
		}
	}
	for i := range t.Memory {
		m := &t.Memory[i]
		if int(m.Thread) >= nTh {
			return fmt.Errorf("memory event %d: thread out of range", i)
		}
		if i > 0 && t.Memory[i-1].Time > m.Time {
			return fmt.Errorf("memory event %d: not sorted by time", i)
		}
		if m.Op != NoOp {
			o := &t.Ops[m.Op]
			if o.Thread != m.Thread || o.Start > m.Time || o.End() < m.Time {
				return fmt.Errorf("memory event %d: op %d does not contain it", i, m.Op)
			}
			if m.Py != NoPy {
				return fmt.Errorf("memory event %d: both an op and a python fallback", i)
			}
		}
		if m.Py != NoPy && (m.Py < 0 || int(m.Py) >= len(t.PyFuncs)) {
			return fmt.Errorf("memory event %d: python function %d out of range", i, m.Py)
		}
		if m.Module != NoPy && (m.Module < 0 || int(m.Module) >= len(t.PyFuncs) || !t.PyFuncs[m.Module].Module) {
			return fmt.Errorf("memory event %d: module %d is not an nn.Module", i, m.Module)
		}
	}
	for i, f := range t.Flows {
		if f.Fwd < 0 || f.Bwd < 0 || int(f.Fwd) >= len(t.Ops) || int(f.Bwd) >= len(t.Ops) {
			return fmt.Errorf("flow %d: ends out of range", i)
		}
		if fw := t.Ops[f.Bwd].Forward; fw != f.Fwd && (fw == NoOp || t.Ops[fw].Seq != t.Ops[f.Bwd].Seq) {
			return fmt.Errorf("flow %d: backward op %d is linked to op %d, neither the flow's forward op nor one with its sequence number", i, f.Bwd, fw)
		}
	}
	return nil
}

// maxEventBytes bounds one [memory] event's Bytes, Total Allocated and
// Total Reserved: 16 TiB, beyond any device. maxSumBytes bounds the sum of
// every event's |Bytes|, so that no total the tables add (each op's, its
// callers' to the tree's depth) can wrap around int64.
const (
	maxEventBytes = 1 << 44
	maxSumBytes   = 1 << 52
)

// boundSizes drops the memory events whose sizes no device can hold, with
// one warning naming the first, and refuses a trace whose sizes add up
// past maxSumBytes: sums that wrap would print a wrong total silently.
func (d *decoder) boundSizes() error {
	t := d.t
	var sum int64
	kept, dropped, first := t.Memory[:0], 0, ""
	for i, m := range t.Memory {
		abs := func(v int64) int64 {
			if v < 0 {
				return -v
			}
			return v
		}
		// -MinInt64 is MinInt64: compare both signs.
		if m.Bytes > maxEventBytes || m.Bytes < -maxEventBytes || abs(m.TotalAllocated) > maxEventBytes || abs(m.TotalReserved) > maxEventBytes ||
			m.TotalAllocated == math.MinInt64 || m.TotalReserved == math.MinInt64 {
			if dropped == 0 {
				first = fmt.Sprintf("memory event %d at %d µs: Bytes %d, Total Allocated %d, Total Reserved %d", i, m.Time/1000, m.Bytes, m.TotalAllocated, m.TotalReserved)
			}
			dropped++
			continue
		}
		if sum += abs(m.Bytes); sum > maxSumBytes {
			return d.errorf(d.offset(), "the [memory] events' sizes add up to more than %d bytes (4 PiB) by memory event %d: not a trace of real allocations, and totals that large would wrap around", int64(maxSumBytes), i)
		}
		kept = append(kept, m)
	}
	if dropped > 0 {
		d.warn(fmt.Sprintf("skipped %d [memory] event(s) with a size or total beyond any device (more than 16 TiB; the first: %s)", dropped, first))
	}
	t.Memory = kept
	return nil
}
