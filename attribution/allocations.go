package attribution

import (
	"iter"

	"github.com/memscope/memscope/snapshot"
)

// Allocation is one recorded allocation with what attribution knows of it.
type Allocation struct {
	Index     int // the alloc event
	Size      int64
	Requested int64
	Stack     snapshot.StackID
	Stream    int64
	Category  Category
	Phase     string // the phase it was born in; "" outside phases
	Step      int    // -1 outside steps
}

// Allocations lists every allocation recorded on the device, in order.
func (d *Device) Allocations() []Allocation {
	var out []Allocation
	for a := range d.EachAllocation() {
		out = append(out, a)
	}
	return out
}

// AllocSizes returns the block size of every alloc event (0 for other
// events): kept from the analysis with Options.AllocSizes, else replayed
// (Timeline.AllocSizes).
func (d *Device) AllocSizes() []int64 {
	if d.allocSizes != nil {
		return d.allocSizes
	}
	return d.Timeline.AllocSizes()
}

// EachAllocation yields every allocation recorded on the device, in order,
// without holding them all: what Allocations lists, for callers that only
// fold them (a pprof profile of a 1 GB snapshot has millions).
func (d *Device) EachAllocation() iter.Seq[Allocation] {
	return func(yield func(Allocation) bool) {
		t := d.Timeline
		sizes := d.AllocSizes()
		for i := range t.Events {
			ev := &t.Events[i]
			if ev.Action != snapshot.ActionAlloc {
				continue
			}
			b := snapshot.LiveBlock{Addr: ev.Addr, Size: sizes[i], Requested: ev.Size, Stack: ev.Stack,
				Stream: ev.Stream, AllocIndex: i, AllocTimeUS: ev.TimeUS}
			a := Allocation{Index: i, Size: sizes[i], Requested: ev.Size, Stack: ev.Stack, Stream: ev.Stream,
				Category: d.class.Classify(&b), Step: -1}
			a.Phase, a.Step = d.PhaseOf(i)
			if !yield(a) {
				return
			}
		}
	}
}

// PhaseOf returns the phase name and step that event i falls in ("", -1
// outside phases).
func (d *Device) PhaseOf(i int) (string, int) {
	name, pi := d.class.phaseName(i)
	if pi < 0 {
		return "", -1
	}
	return name, d.Phases.List[pi].Step
}

// CategoryOf returns the category of a block live at some moment.
func (d *Device) CategoryOf(b *snapshot.LiveBlock) Category { return d.class.Classify(b) }
