package trace

import (
	"cmp"
	"slices"
)

// Point is one sample of a device's memory: the running totals after a
// memory event.
type Point struct {
	TimeUS    float64 // epoch µs
	Allocated int64   // Total Allocated: allocated_bytes.all.current
	Reserved  int64   // Total Reserved: reserved_bytes.all.current
}

// Series is a device's allocated and reserved memory over time, one point
// per memory event.
type Series struct {
	Device Device
	Points []Point
}

// Devices lists the devices that have memory events, accelerators first,
// then by type and index.
func (t *Trace) Devices() []Device {
	seen := map[Device]bool{}
	var out []Device
	for i := range t.Memory {
		if d := t.Memory[i].Device(); !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b Device) int {
		ga, gb := isDeviceMem(a.Type), isDeviceMem(b.Type)
		if ga != gb {
			if ga {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// Series returns the running totals of one device's memory events.
func (t *Trace) Series(dev Device) Series {
	s := Series{Device: dev, Points: []Point{}}
	for i := range t.Memory {
		m := &t.Memory[i]
		if m.Device() == dev && !m.OOM {
			s.Points = append(s.Points, Point{TimeUS: m.TimeUS(), Allocated: m.TotalAllocated, Reserved: m.TotalReserved})
		}
	}
	return s
}

// Peak is the high-water mark of Total Allocated on one device.
type Peak struct {
	Device    Device
	Allocated int64 // the maximum Total Allocated: max_memory_allocated over the trace
	Reserved  int64 // Total Reserved at that event
	// MaxReserved is the maximum Total Reserved over the trace.
	MaxReserved int64
	Time        int64 // epoch ns of the first event reaching the peak
	Event       int   // its index in Trace.Memory; -1 when the device has no events
	// Open lists, per thread, the ops open at the peak instant, outermost
	// first (cpu_op and user_annotation).
	Open [][]OpID
}

// PeakDevice is the accelerator with the highest Total Allocated peak (or,
// with none, the device with the highest peak).
func (t *Trace) PeakDevice() Device {
	best, bestVal, gpu := Device{Type: -1, ID: -1}, int64(-1), false
	for i := range t.Memory {
		m := &t.Memory[i]
		if m.OOM {
			continue
		}
		g := m.OnGPU()
		if (g && !gpu) || (g == gpu && m.TotalAllocated > bestVal) {
			best, bestVal, gpu = m.Device(), m.TotalAllocated, g
		}
	}
	return best
}

// Peak finds the first event at which the device's Total Allocated is
// highest, and the ops open on every thread at that instant.
func (t *Trace) Peak(dev Device) Peak {
	p := Peak{Device: dev, Event: -1}
	for i := range t.Memory {
		m := &t.Memory[i]
		if m.Device() != dev || m.OOM {
			continue
		}
		if p.Event < 0 || m.TotalAllocated > p.Allocated {
			p.Allocated, p.Reserved, p.Time, p.Event = m.TotalAllocated, m.TotalReserved, m.Time, i
		}
		p.MaxReserved = max(p.MaxReserved, m.TotalReserved)
	}
	if p.Event >= 0 {
		p.Open = t.OpenAt(p.Time)
	}
	return p
}

// OpenAt returns, for every thread with an op open at epoch ns, the chain
// of open ops from outermost to innermost. Threads come in ThreadID order.
func (t *Trace) OpenAt(ns int64) [][]OpID {
	var out [][]OpID
	for th := range t.Threads {
		var chain []OpID
		for id := t.innermostOp(ThreadID(th), ns); id != NoOp; id = t.Ops[id].Parent {
			chain = append(chain, id)
		}
		if len(chain) > 0 {
			slices.Reverse(chain)
			out = append(out, chain)
		}
	}
	return out
}

// liveAtPeak returns the indexes of the device's allocation events whose
// block is still allocated at the peak event (included), pairing frees with
// allocations by address; none when the events carry no addresses.
func (t *Trace) liveAtPeak(dev Device, peak int) []int {
	if peak < 0 || !t.Recorded(dev).Addr {
		return nil
	}
	live := map[int64]int{}
	for i := 0; i <= peak; i++ {
		m := &t.Memory[i]
		if m.Device() != dev || m.OOM {
			continue
		}
		switch {
		case m.Bytes > 0:
			live[m.Addr] = i
		case m.Bytes < 0:
			delete(live, m.Addr)
		}
	}
	out := make([]int, 0, len(live))
	for _, i := range live {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}
