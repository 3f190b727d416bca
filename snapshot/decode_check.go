package snapshot

import "fmt"

// This file checks the schema values the replay and the analyses use as
// indexes, keys or terms of sums, once the snapshot is built: a value no
// torch writes (a negative device, an alloc without an address, a size
// past any GPU) is an error naming the segment or the trace entry, so
// nothing downstream can panic or overflow on it.

// Bounds on values used as indexes and in sums. Each is far above what
// any GPU has; with sizes below maxSize, sums of up to 2^15 of them fit in
// an int64.
const (
	maxDevice = 1 << 20 // device indexes (segments, annotations)
	maxSize   = 1 << 48 // one size in bytes (256 TiB)
	// maxTotal bounds, per device, the sum of its segments' total_size,
	// its blocks' requested_size and its trace entries' sizes (1 EiB):
	// every number the replay keeps is at most twice that sum plus 21 MiB
	// per entry, so none can overflow.
	maxTotal = 1 << 60
)

// needsAddr says which actions replay by address.
var needsAddr = [...]bool{
	ActionAlloc: true, ActionFreeRequested: true, ActionFreeCompleted: true,
	ActionSegmentAlloc: true, ActionSegmentFree: true, ActionSegmentMap: true, ActionSegmentUnmap: true,
}

// checkValues returns an error for the first value of s that no real
// snapshot holds and that the replay or the analyses would index or sum
// with.
func (d *decoder) checkValues(s *Snapshot) error {
	total := map[int]int64{} // per device: see maxTotal
	for i := range s.Segments {
		g := &s.Segments[i]
		what := func(format string, args ...any) error {
			return d.failAt(-1, kindSchema, "segment %d (address %#x): %s", i, g.Address, fmt.Sprintf(format, args...))
		}
		switch {
		case g.Device < 0 || g.Device >= maxDevice:
			return what("device %d is not a device index (want 0 to %d)", g.Device, maxDevice-1)
		case g.Address == 0:
			return what("no \"address\", or address 0")
		case g.TotalSize < 0 || g.TotalSize > maxSize:
			return what("total_size %d is out of range (want 0 to %d)", g.TotalSize, int64(maxSize))
		case g.Address+uint64(g.TotalSize) < g.Address:
			return what("address + total_size overflows 64 bits")
		}
		for _, n := range []int64{g.AllocatedSize, g.ActiveSize, g.RequestedSize} {
			if n < -maxSize || n > maxSize {
				return what("a size of %d is out of range", n)
			}
		}
		var sum int64
		total[g.Device] += g.TotalSize
		for j := range g.Blocks {
			b := &g.Blocks[j]
			if b.Size < 0 || b.Size > maxSize || b.RequestedSize < -maxSize || b.RequestedSize > maxSize {
				return what("block %d: size %d, requested_size %d out of range (want 0 to %d)", j, b.Size, b.RequestedSize, int64(maxSize))
			}
			if sum += b.Size; sum > maxSize {
				return what("its blocks' sizes add up past %d", int64(maxSize))
			}
			if total[g.Device] += max(b.RequestedSize, 0); total[g.Device] > maxTotal {
				return what("the total_size and requested_size of device %d's segments up to it add up past %d", g.Device, int64(maxTotal))
			}
		}
		if total[g.Device] > maxTotal {
			return what("the total_size and requested_size of device %d's segments up to it add up past %d", g.Device, int64(maxTotal))
		}
		// Blocks are laid end to end from the segment's address
		// (convSegment): past total_size they would lie outside it.
		if sum > g.TotalSize {
			return what("its blocks' sizes add up to %d, past its total_size %d", sum, g.TotalSize)
		}
	}
	if len(s.Traces) > maxDevice {
		return d.failAt(-1, kindSchema, "device_traces[%d]: past the last device index %d (%d device lists)", maxDevice, maxDevice-1, len(s.Traces))
	}
	for dev, tr := range s.Traces {
		what := func(i int, format string, args ...any) error {
			return d.failAt(-1, kindSchema, "device_traces[%d][%d] (%s): %s", dev, i, tr[i].Action, fmt.Sprintf(format, args...))
		}
		sum := total[dev]
		for i := range tr {
			e := &tr[i]
			if e.Action == ActionOOM {
				continue
			}
			if e.Addr == 0 && int(e.Action) < len(needsAddr) && needsAddr[e.Action] {
				return what(i, "no \"addr\", or addr 0")
			}
			if e.Size < -maxSize || e.Size > maxSize {
				return what(i, "size %d is out of range (want at most %d)", e.Size, int64(maxSize))
			}
			if sum += max(e.Size, -e.Size); sum > maxTotal {
				return what(i, "the sizes of the device's entries up to it, with its segments' total_size and requested_size, add up past %d", int64(maxTotal))
			}
		}
		total[dev] = sum
	}
	for i := range s.Annotations {
		if a := &s.Annotations[i]; a.Device < -1 || a.Device >= maxDevice {
			return d.failAt(-1, kindSchema, "external_annotations[%d] (%q): device %d is not a device index", i, a.Name, a.Device)
		}
	}
	return nil
}
