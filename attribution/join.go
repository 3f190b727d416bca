package attribution

import (
	"math"
	"sort"

	"github.com/memscope/memscope/snapshot"
	"github.com/memscope/memscope/trace"
)

// joinTolerance is how far apart (µs) the snapshot's alloc and the trace's
// [memory] event of one allocation may be. Both use the same epoch clock;
// they are recorded a few µs apart inside the allocator.
const joinTolerance = 2000

// Join links a device's recorded allocations to the profiler trace of the
// same process: an allocation matches the trace's [memory] event at the
// same address, the nearest in time within joinTolerance, each event used
// once. Matched allocations gain the trace's operator and nn.Module.
type Join struct {
	Trace  *trace.Trace
	Device int
	// Overlap is the span of the trace's memory events on this device, in
	// epoch µs; only allocations inside it can match.
	OverlapStartUS, OverlapEndUS int64
	// InOverlap counts the snapshot's allocations inside the overlap;
	// Matched those that found their event; SizeMismatch those whose event
	// carries another block size (a sign of a wrong match).
	InOverlap, Matched, SizeMismatch int
	// SnapshotStartUS and SnapshotEndUS are the times of the device's
	// first and last recorded events (0 when untimed or empty).
	SnapshotStartUS, SnapshotEndUS int64

	ops map[int]trace.OpID // alloc event index → op (trace.NoOp: matched, no op)
	mod map[int]trace.PyID
}

// JoinTrace matches the device's allocations with tr's memory events.
func (d *Device) JoinTrace(tr *trace.Trace) *Join {
	j := &Join{Trace: tr, Device: d.Device, ops: map[int]trace.OpID{}, mod: map[int]trace.PyID{}}
	if ev := d.Timeline.Events; len(ev) > 0 {
		j.SnapshotStartUS, j.SnapshotEndUS = ev[0].TimeUS, ev[len(ev)-1].TimeUS
	}
	type cand struct {
		t    float64
		i    int
		used bool
	}
	byAddr := map[int64][]*cand{}
	first, last := math.Inf(1), math.Inf(-1)
	for i := range tr.Memory {
		e := &tr.Memory[i]
		if e.DeviceType != 1 || int(e.DeviceID) != d.Device || e.OOM {
			continue
		}
		t := e.TimeUS()
		first, last = math.Min(first, t), math.Max(last, t)
		if e.Bytes > 0 {
			byAddr[e.Addr] = append(byAddr[e.Addr], &cand{t: t, i: i})
		}
	}
	if math.IsInf(first, 1) {
		return j
	}
	j.OverlapStartUS, j.OverlapEndUS = int64(math.Floor(first)), int64(math.Ceil(last))
	for _, cs := range byAddr {
		sort.Slice(cs, func(a, b int) bool { return cs[a].t < cs[b].t })
	}
	sizes := d.AllocSizes()
	for i := range d.Timeline.Events {
		ev := &d.Timeline.Events[i]
		if ev.Action != snapshot.ActionAlloc || ev.TimeUS < j.OverlapStartUS-joinTolerance || ev.TimeUS > j.OverlapEndUS+joinTolerance {
			continue
		}
		j.InOverlap++
		var best *cand
		for _, c := range byAddr[int64(ev.Addr)] {
			if c.used || math.Abs(c.t-float64(ev.TimeUS)) > joinTolerance {
				continue
			}
			if best == nil || math.Abs(c.t-float64(ev.TimeUS)) < math.Abs(best.t-float64(ev.TimeUS)) {
				best = c
			}
		}
		if best == nil {
			continue
		}
		best.used = true
		j.Matched++
		e := &tr.Memory[best.i]
		if e.Bytes != sizes[i] {
			j.SizeMismatch++
		}
		j.ops[i] = e.Op
		j.mod[i] = e.Module
	}
	return j
}

// TraceEvents reports whether the trace has memory events on the device.
func (j *Join) TraceEvents() bool { return j.OverlapEndUS != 0 || j.OverlapStartUS != 0 }

// Disjoint reports whether no recorded allocation of the device lies in
// the trace's window: the two were recorded at different times (another
// run, or another part of it), and nothing can be joined.
func (j *Join) Disjoint() bool { return j.InOverlap == 0 }

// OpLabel names the operator that made the allocation at event index:
// the op with, for a backward op, the forward op and module it belongs to.
// ok is false when the allocation found no event in the trace.
func (j *Join) OpLabel(index int) (label string, ok bool) {
	op, ok := j.ops[index]
	if !ok {
		return "", false
	}
	if op == trace.NoOp {
		return "(no enclosing op)", true
	}
	return j.Trace.Label(op), true
}

// Module names the nn.Module that ran the allocation at event index ("" when
// none or unmatched).
func (j *Join) Module(index int) string {
	if m, ok := j.mod[index]; ok && m != trace.NoPy {
		return j.Trace.ModulePath(m)
	}
	return ""
}

// OpBytes is what one operator holds at a moment.
type OpBytes struct {
	Label string
	Bytes
}

// ByOp groups a moment's allocated blocks by operator. Blocks allocated
// before the trace's window, or that found no event, get their own rows.
// Covered is the share of the bytes allocated inside the overlap that
// found their operator.
func (j *Join) ByOp(m *Moment) (rows []OpBytes, covered float64) {
	by := map[string]*OpBytes{}
	var inWindow, matched int64
	for i := range m.Live {
		b := &m.Live[i]
		if b.PendingFree {
			continue
		}
		label := "(allocated before the trace)"
		if b.AllocIndex >= 0 && b.AllocTimeUS >= j.OverlapStartUS-joinTolerance {
			inWindow += b.Size
			if l, ok := j.OpLabel(b.AllocIndex); ok {
				label = l
				matched += b.Size
			} else {
				label = "(not in the trace)"
			}
		}
		r := by[label]
		if r == nil {
			r = &OpBytes{Label: label}
			by[label] = r
		}
		r.Bytes.Bytes += b.Size
		r.Count++
	}
	for _, r := range by {
		rows = append(rows, *r)
	}
	sort.Slice(rows, func(a, b int) bool {
		if rows[a].Bytes.Bytes != rows[b].Bytes.Bytes {
			return rows[a].Bytes.Bytes > rows[b].Bytes.Bytes
		}
		return rows[a].Label < rows[b].Label
	})
	if inWindow > 0 {
		covered = float64(matched) / float64(inWindow)
	}
	return rows, covered
}
