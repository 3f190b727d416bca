package snapshot

import (
	"errors"
	"fmt"
)

// CheckValid verifies the invariants the analyses rely on in a Timeline
// from Replay: Events are the device's trace; what was live before the
// first event is sorted by address and sums to Start; replayed again, no
// number is ever negative and allocated never exceeds active; each peak is
// the first maximum of its series, with an event index in [-1,
// len(Events)); Points, when kept, are that series; End is the state after
// the last event and the sum of what is live and reserved then; OOMs,
// Death and PreDeath point at events of the right actions. It costs one
// replay.
func (t *Timeline) CheckValid() error {
	s := t.snap
	if s == nil {
		return errors.New("timeline: not made by Replay (no snapshot)")
	}
	var trace []Event
	if t.Device >= 0 && t.Device < len(s.Traces) {
		trace = s.Traces[t.Device]
	}
	if len(t.Events) != len(trace) || len(trace) > 0 && &t.Events[0] != &trace[0] {
		return fmt.Errorf("device %d: Events (%d) are not the device's trace (%d entries)", t.Device, len(t.Events), len(trace))
	}
	if err := t.checkInitial(); err != nil {
		return err
	}
	if err := t.checkSeries(); err != nil {
		return err
	}
	if e := t.final; e != nil {
		if got := liveSum(e.liveBlocks(), e.lay.ranges()); got != t.End {
			return fmt.Errorf("device %d: End = %+v, but the blocks live and the ranges reserved after the last event add up to %+v", t.Device, t.End, got)
		}
	}
	return t.checkIndexes()
}

// liveSum returns the four numbers that live blocks and reserved ranges
// add up to.
func liveSum(live []LiveBlock, ranges []ReservedRange) Numbers {
	var n Numbers
	for i := range live {
		b := &live[i]
		n.Active += b.Size
		if !b.PendingFree {
			n.Allocated += b.Size
			n.Requested += b.Requested
		}
	}
	for _, r := range ranges {
		n.Reserved += int64(r.End - r.Addr)
	}
	return n
}

// checkInitial checks what was live before the first event against Start.
func (t *Timeline) checkInitial() error {
	for i := range t.Initial {
		b := &t.Initial[i]
		switch {
		case i > 0 && t.Initial[i-1].Addr >= b.Addr:
			return fmt.Errorf("device %d: initial block %d at %#x: not after block %d at %#x (sorted by address, one block per address)",
				t.Device, i, b.Addr, i-1, t.Initial[i-1].Addr)
		case b.AllocIndex != -1:
			return fmt.Errorf("device %d: initial block %d at %#x: AllocIndex %d, want -1", t.Device, i, b.Addr, b.AllocIndex)
		case b.Size < 0 || b.Requested < 0:
			return fmt.Errorf("device %d: initial block %d at %#x: size %d, requested %d: negative", t.Device, i, b.Addr, b.Size, b.Requested)
		}
	}
	if got := liveSum(t.Initial, t.init.ranges()); got != t.Start {
		return fmt.Errorf("device %d: Start = %+v, but the blocks live and the ranges reserved before the first event add up to %+v", t.Device, t.Start, got)
	}
	return nil
}

// checkSeries replays the events again and checks every state, the peaks,
// Points and End against it.
func (t *Timeline) checkSeries() error {
	e := t.newEngine()
	if e.n != t.Start {
		return fmt.Errorf("device %d: Start = %+v, a fresh replay starts at %+v", t.Device, t.Start, e.n)
	}
	if t.Points != nil && len(t.Points) != len(t.Events) {
		return fmt.Errorf("device %d: %d points for %d events", t.Device, len(t.Points), len(t.Events))
	}
	names := [4]string{"PeakRequested", "PeakAllocated", "PeakActive", "PeakReserved"}
	got := [4]Peak{t.PeakRequested, t.PeakAllocated, t.PeakActive, t.PeakReserved}
	for k, p := range got {
		if p.Index < -1 || p.Index >= len(t.Events) {
			return fmt.Errorf("device %d: %s = %+v: event index out of range [-1, %d)", t.Device, names[k], p, len(t.Events))
		}
	}
	value := func(n *Numbers) [4]int64 { return [4]int64{n.Requested, n.Allocated, n.Active, n.Reserved} }
	var want [4]Peak
	for k, v := range value(&e.n) {
		want[k] = Peak{Bytes: v, Index: -1}
	}
	oom := 0 // the oom events passed
	for i := range t.Events {
		ev := &t.Events[i]
		e.apply(i, ev)
		n := e.n
		if n.Requested < 0 || n.Allocated < 0 || n.Active < 0 || n.Reserved < 0 || n.Allocated > n.Active {
			return fmt.Errorf("device %d: after event %d (%s): %+v: a negative number, or more allocated than active", t.Device, i, ev.Action, n)
		}
		for k, v := range value(&n) {
			if v > want[k].Bytes {
				want[k] = Peak{v, i, ev.TimeUS}
			}
		}
		if ev.Action == ActionOOM && ev.Size >= 0 {
			if oom >= len(t.OOMStates) || t.OOMStates[oom] != n {
				return fmt.Errorf("device %d: the state after oom event %d is %+v; OOMStates does not hold it", t.Device, i, n)
			}
			oom++
		}
		if t.Points != nil {
			if p := t.Points[i]; p != (Point{i, ev.TimeUS, n}) {
				return fmt.Errorf("device %d: point %d = %+v, want %+v", t.Device, i, p, Point{i, ev.TimeUS, n})
			}
		}
	}
	if e.n != t.End {
		return fmt.Errorf("device %d: End = %+v, the state after the last event is %+v", t.Device, t.End, e.n)
	}
	for k := range got {
		if got[k] != want[k] {
			return fmt.Errorf("device %d: %s = %+v, want %+v (the first maximum of the series)", t.Device, names[k], got[k], want[k])
		}
	}
	return nil
}

// checkIndexes checks OOMs, Death, PreDeath and the warnings' device.
func (t *Timeline) checkIndexes() error {
	n := len(t.Events)
	want := 0
	for i := range t.Events {
		if ev := &t.Events[i]; ev.Action == ActionOOM && ev.Size >= 0 {
			want++
		}
	}
	if len(t.OOMs) != want {
		return fmt.Errorf("device %d: %d OOMs, the trace has %d oom events", t.Device, len(t.OOMs), want)
	}
	for k, i := range t.OOMs {
		if i < 0 || i >= n || t.Events[i].Action != ActionOOM || k > 0 && t.OOMs[k-1] >= i {
			return fmt.Errorf("device %d: OOMs[%d] = %d: not a rising index of an oom event", t.Device, k, i)
		}
	}
	if len(t.OOMStates) != len(t.OOMs) {
		return fmt.Errorf("device %d: %d OOM states for %d OOMs", t.Device, len(t.OOMStates), len(t.OOMs))
	}
	isFree := func(d int32) bool {
		return d >= 0 && int(d) < n && (t.Events[d].Action == ActionFreeRequested || t.Events[d].Action == ActionFreeCompleted)
	}
	if t.Death != nil && len(t.Death) != n {
		return fmt.Errorf("device %d: %d deaths for %d events", t.Device, len(t.Death), n)
	}
	// ends says whether event d can end the block at addr: a free, or an
	// alloc over it.
	ends := func(d int32, addr uint64) bool {
		return isFree(d) || d >= 0 && int(d) < n && t.Events[d].Action == ActionAlloc && t.Events[d].Addr == addr
	}
	for i, d := range t.Death {
		if d != -1 && (int(d) <= i || t.Events[i].Action != ActionAlloc || !ends(d, t.Events[i].Addr)) {
			return fmt.Errorf("device %d: Death[%d] = %d: not -1, nor a later free of an alloc, nor an alloc over it", t.Device, i, d)
		}
	}
	for addr, d := range t.PreDeath {
		if !ends(d, addr) {
			return fmt.Errorf("device %d: PreDeath[%#x] = %d: not a free event, nor an alloc over the block", t.Device, addr, d)
		}
	}
	for i, w := range t.Warnings {
		if w.Device != t.Device {
			return fmt.Errorf("device %d: warning %d is about device %d: %s", t.Device, i, w.Device, w.Message)
		}
	}
	return nil
}
