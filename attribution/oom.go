package attribution

import (
	"fmt"

	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// OOM is the post-mortem of one out-of-memory event.
type OOM struct {
	N      int // 1 for the device's first OOM
	Index  int // the oom event
	TimeUS int64
	// Request is the allocation that failed (rounded, as torch records
	// it); DeviceFree what the driver reported free on the whole device at
	// that moment; AllocSize the segment the allocator needed for it.
	Request, DeviceFree, AllocSize int64
	// Stack is where the failing request was made (the oom entry's
	// frames), Site its site, named as the sites of live blocks are.
	Stack     snapshot.StackID
	Site      Site
	SiteLabel string
	// Step and Phase are where the request was made (Step -1 outside
	// steps; Phase "" when the trace has no phases).
	Step  int
	Phase string
	Numbers
	// At is what was live, by site and category; Frag the free memory,
	// with the headroom and the stranded bytes the verdict weighs.
	At   *Moment
	Frag *Fragmentation
	// Cap is the per-process limit the allocator enforced
	// (torch.cuda.set_per_process_memory_fraction) when the device had
	// room for the segment but the allocator refused it; nil when the
	// device itself was full.
	Cap *Cap
	// Capacity is true when the request would not have fit even if every
	// free byte stranded in split segments had been usable; false
	// (fragmentation) when it would have, but no single free block was
	// large enough.
	Capacity bool
	Verdict  string
}

// Cap brackets a per-process memory limit that no snapshot records: the
// allocator reserved Low at some moment (so the limit is at least that),
// and refused to grow from the reserved memory at the OOM by the segment
// the request needed (so it is below High).
type Cap struct {
	Low, High int64
}

// allocSize mirrors the caching allocator's get_allocation_size for a
// rounded request: the segment cudaMalloc is asked for (or, with
// expandable segments, the pages mapped).
func allocSize(size int64, expandable bool) int64 {
	const small, large, minLarge, roundLarge = 2 << 20, 20 << 20, 10 << 20, 2 << 20
	up := func(n, m int64) int64 { return (n + m - 1) / m * m }
	switch {
	case expandable && size <= smallRequest:
		return up(size, small)
	case expandable:
		return up(size, large)
	case size <= smallRequest:
		return small
	case size < minLarge:
		return large
	}
	return up(size, roundLarge)
}

func (d *Device) oom(index, k int) *OOM {
	ev := &d.Timeline.Events[index]
	st := d.an.Snapshot.Stacks
	m := d.At(index, fmt.Sprintf("oom %d", k+1))
	expandable, _ := d.an.Snapshot.Settings["expandable_segments"].(bool)
	o := &OOM{N: k + 1, Index: index, TimeUS: ev.TimeUS, Request: ev.Size,
		DeviceFree: ev.DeviceFree(), AllocSize: allocSize(ev.Size, expandable),
		Stack: ev.Stack, Site: d.an.Filter.SiteOf(st, ev.Stack), Numbers: m.Numbers, At: m}
	o.SiteLabel = o.Site.Label(st)
	o.Step = -1
	if name, pi := d.class.phaseName(index); pi >= 0 {
		o.Step, o.Phase = d.Phases.List[pi].Step, name
	}
	headroom := o.DeviceFree
	if o.DeviceFree >= o.AllocSize {
		// The device had room for the segment: a limit of the process's
		// refused it. The most reserved up to now is within the limit.
		c := &Cap{Low: max(d.reservedBefore[index], o.Reserved), High: o.Reserved + o.AllocSize}
		if c.Low < c.High {
			o.Cap = c
			headroom = c.Low - o.Reserved
		} else {
			headroom = 0
		}
	}
	o.Frag = d.fragmentation(m)
	o.Frag.unusableFor(d, m, ev.Size, headroom)
	o.Capacity = !o.Frag.fragmented()
	o.Verdict = o.verdict()
	return o
}

// verdict says in words what failed and what to change.
func (o *OOM) verdict() string {
	f := o.Frag
	pool, largest := f.pool()
	within := "from the device"
	if o.Cap != nil {
		within = "under the cap"
	}
	var v string
	if !o.Capacity {
		v = fmt.Sprintf("fragmentation: no free block could take the %s request (the largest in the %s pool was %s), but it would have fit in the %s free in split segments (stranded: release cannot return them) plus the %s the allocator could still reserve %s; set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so free space stays contiguous (or max_split_size_mb to keep large blocks whole)",
			units.Bytes(o.Request), pool, units.Bytes(largest), units.Bytes(f.Stranded), units.Bytes(f.Headroom), within)
	} else {
		v = fmt.Sprintf("capacity: %s allocated + %s requested = %s does not fit: only %s was free in reserved segments (%s stranded in split segments of the %s pool, the largest block %s) and %s more could be reserved %s",
			units.Bytes(o.Allocated), units.Bytes(o.Request), units.Bytes(o.Allocated+o.Request),
			units.Bytes(o.Reserved-o.Active), units.Bytes(f.Stranded), pool, units.Bytes(largest), units.Bytes(f.Headroom), within)
	}
	if c := o.Cap; c != nil {
		v += fmt.Sprintf("; a per-process cap applied (torch.cuda.set_per_process_memory_fraction): the device still had %s free, but the allocator would not reserve past a limit between %s (the most reserved) and %s (reserved then plus the %s segment refused)",
			units.Bytes(o.DeviceFree), units.Bytes(c.Low), units.Bytes(c.High), units.Bytes(o.AllocSize))
	} else {
		v += fmt.Sprintf("; the device had %s free, less than the %s segment needed: it was full", units.Bytes(o.DeviceFree), units.Bytes(o.AllocSize))
	}
	if o.Capacity {
		v += "; shrink what is live at this moment ('memscope oom' lists it by site and category) or raise the limit"
	}
	return v
}
