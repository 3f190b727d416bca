package attribution

import (
	"fmt"

	"github.com/memscope/memscope/internal/units"
)

// OOM is the post-mortem of one out-of-memory event.
type OOM struct {
	N      int // 1 for the device's first OOM
	Index  int // the oom event
	TimeUS int64
	// Request is the allocation that failed; DeviceFree what the driver
	// reported free on the whole device at that moment.
	Request, DeviceFree int64
	Numbers
	// At is what was live, by site and category; Frag the free memory.
	At   *Moment
	Frag *Fragmentation
	// Capacity is true when the live set alone could not take the request
	// (no reserved hole large enough and not enough free reserved memory
	// either); false when enough memory was free in reserved segments but
	// split into holes too small (fragmentation).
	Capacity bool
	Verdict  string
}

func (d *Device) oom(index, k int) *OOM {
	ev := &d.Timeline.Events[index]
	m := d.At(index, fmt.Sprintf("oom %d", k+1))
	o := &OOM{N: k + 1, Index: index, TimeUS: ev.TimeUS, Request: ev.Size,
		DeviceFree: ev.DeviceFree(), Numbers: m.Numbers, At: m}
	o.Frag = d.fragmentation(m)
	o.Frag.unusableFor(d, m, ev.Size)
	pool := 0
	if ev.Size > smallRequest {
		pool = 1
	}
	largest := o.Frag.LargestFree[pool]
	free := o.Reserved - o.Active
	switch {
	case free >= o.Request && largest < o.Request:
		o.Verdict = fmt.Sprintf("fragmentation: %s was free in reserved segments, enough for the %s request, but the largest free block was %s; set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so free space stays contiguous (or max_split_size_mb to keep large blocks whole)",
			units.Bytes(free), units.Bytes(o.Request), units.Bytes(largest))
	default:
		o.Capacity = true
		o.Verdict = fmt.Sprintf("capacity: %s allocated + %s requested = %s, and only %s of the %s reserved was free",
			units.Bytes(o.Allocated), units.Bytes(o.Request), units.Bytes(o.Allocated+o.Request),
			units.Bytes(free), units.Bytes(o.Reserved))
		if o.DeviceFree >= o.Request {
			o.Verdict += fmt.Sprintf("; the device still had %s free, so a per-process cap (set_per_process_memory_fraction, or another limit) refused the new segment", units.Bytes(o.DeviceFree))
		} else {
			o.Verdict += fmt.Sprintf("; the device had %s free: it was full", units.Bytes(o.DeviceFree))
		}
		o.Verdict += "; shrink what is live at this moment ('memscope oom' lists it by site and category) or raise the limit"
	}
	return o
}
