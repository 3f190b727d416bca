package snapshot

import (
	"errors"
	"fmt"
	"slices"
)

// This file checks the invariants the replay and the analyses rely on,
// for a Snapshot as Decode returns it and for a Timeline as Replay
// returns it. Both hold for every input Decode accepts (the valid part of
// a salvaged one included); tests and fuzz targets call them.

// CheckValid verifies the invariants the analyses rely on: every ID held
// by a segment, block or trace entry in range of its table, device indexes
// non-negative and among Devices(), each segment's blocks sorted by
// address, non-overlapping and inside the segment, the per-device index
// consistent with the segments, and the values the replay indexes or sums
// with inside checkValues' bounds. Decode's output always passes; it is
// cheap enough to call in tests and fuzzing.
func (s *Snapshot) CheckValid() error {
	if s.Stacks == nil || s.Strings == nil {
		return errors.New("no stack table or string table")
	}
	if err := s.Stacks.checkValid(); err != nil {
		return err
	}
	nStacks, nStrings := s.Stacks.Len(), len(s.Strings.list)
	devs := s.Devices()
	isDevice := func(d int) bool { _, ok := slices.BinarySearch(devs, d); return ok }
	for i := range s.Segments {
		if err := s.checkSegment(i, nStacks, isDevice); err != nil {
			return err
		}
	}
	for i, d := range devs {
		if d < 0 || d >= maxDevice || i > 0 && devs[i-1] >= d {
			return fmt.Errorf("Devices() = %v: not sorted, unique device indexes from 0 to %d", devs, maxDevice-1)
		}
	}
	n := 0
	for _, d := range devs {
		for _, si := range s.SegmentsOf(d) {
			if si < 0 || int(si) >= len(s.Segments) || s.Segments[si].Device != d {
				return fmt.Errorf("SegmentsOf(%d) holds segment %d, not one of device %d", d, si, d)
			}
			n++
		}
	}
	if n != len(s.Segments) {
		return fmt.Errorf("SegmentsOf over Devices() gives %d segments, the snapshot has %d", n, len(s.Segments))
	}
	if !s.HasTraces && len(s.Traces) > 0 {
		return fmt.Errorf("%d device traces, but HasTraces is false", len(s.Traces))
	}
	if len(s.Traces) > maxDevice {
		return fmt.Errorf("%d device traces, more than the %d device indexes", len(s.Traces), maxDevice)
	}
	for d, tr := range s.Traces {
		if len(tr) > 0 && !isDevice(d) {
			return fmt.Errorf("device_traces[%d] has %d entries, but device %d is not among Devices() %v", d, len(tr), d, devs)
		}
		for i := range tr {
			if err := checkEvent(d, i, &tr[i], nStacks, nStrings); err != nil {
				return err
			}
		}
	}
	if err := s.checkTotals(); err != nil {
		return err
	}
	for i := range s.Annotations {
		if a := &s.Annotations[i]; a.Device < -1 || a.Device >= maxDevice {
			return fmt.Errorf("annotation %d (%q): device %d out of range (want -1 to %d)", i, a.Name, a.Device, maxDevice-1)
		}
	}
	return nil
}

// checkTotals checks each device's sum of segment total_size, block
// requested_size and entry sizes against maxTotal, which keeps the
// replay's numbers from overflowing. The other checks ran first: every
// term is within maxSize.
func (s *Snapshot) checkTotals() error {
	total := map[int]int64{}
	for i := range s.Segments {
		g := &s.Segments[i]
		total[g.Device] += g.TotalSize
		for j := range g.Blocks {
			total[g.Device] += max(g.Blocks[j].RequestedSize, 0)
		}
		if total[g.Device] > maxTotal {
			return fmt.Errorf("segment %d (address %#x): device %d's segments' total_size and requested_size add up past %d", i, g.Address, g.Device, int64(maxTotal))
		}
	}
	for d, tr := range s.Traces {
		for i := range tr {
			if e := &tr[i]; e.Action != ActionOOM {
				if total[d] += max(e.Size, -e.Size); total[d] > maxTotal {
					return fmt.Errorf("device_traces[%d][%d] (%s): device %d's sizes add up past %d", d, i, e.Action, d, int64(maxTotal))
				}
			}
		}
	}
	return nil
}

// checkSegment checks segment i and its blocks.
func (s *Snapshot) checkSegment(i, nStacks int, isDevice func(int) bool) error {
	g := &s.Segments[i]
	what := func(format string, args ...any) error {
		return fmt.Errorf("segment %d (address %#x): %s", i, g.Address, fmt.Sprintf(format, args...))
	}
	switch {
	case g.Device < 0 || g.Device >= maxDevice:
		return what("device %d out of range (want 0 to %d)", g.Device, maxDevice-1)
	case !isDevice(g.Device):
		return what("device %d is not among Devices() %v", g.Device, s.Devices())
	case g.Address == 0:
		return what("address 0")
	case g.TotalSize < 0 || g.TotalSize > maxSize || g.End() < g.Address:
		return what("total_size %d out of range (want 0 to %d, ending below 2^64)", g.TotalSize, int64(maxSize))
	case int(g.Stack) >= nStacks:
		return what("stack %d out of range (%d stacks)", g.Stack, nStacks)
	}
	for _, n := range []int64{g.AllocatedSize, g.ActiveSize, g.RequestedSize} {
		if n < -maxSize || n > maxSize {
			return what("a size of %d is out of range", n)
		}
	}
	next := g.Address // where the previous block ends
	for j := range g.Blocks {
		b := &g.Blocks[j]
		end := b.Address + uint64(b.Size)
		switch {
		case b.Size < 0 || b.Size > maxSize || b.RequestedSize < -maxSize || b.RequestedSize > maxSize:
			return what("block %d: size %d, requested_size %d out of range (want 0 to %d)", j, b.Size, b.RequestedSize, int64(maxSize))
		case b.Address < next:
			if j == 0 {
				return what("block 0 at %#x starts before the segment", b.Address)
			}
			return what("block %d at %#x starts before block %d ends (%#x): not sorted by address, or overlapping", j, b.Address, j-1, next)
		case end < b.Address || end > g.End():
			return what("block %d [%#x, %#x) ends past the segment's end %#x", j, b.Address, end, g.End())
		case b.State > BlockUnknown:
			return what("block %d: state %d is not a BlockState", j, b.State)
		case int(b.Stack) >= nStacks:
			return what("block %d: stack %d out of range (%d stacks)", j, b.Stack, nStacks)
		}
		next = end
	}
	return nil
}

// checkEvent checks entry i of device d's trace.
func checkEvent(d, i int, e *Event, nStacks, nStrings int) error {
	what := func(format string, args ...any) error {
		return fmt.Errorf("device_traces[%d][%d] (%s): %s", d, i, e.Action, fmt.Sprintf(format, args...))
	}
	switch {
	case e.Action >= numActions:
		return what("action %d is not an Action", e.Action)
	case int(e.Stack) >= nStacks:
		return what("stack %d out of range (%d stacks)", e.Stack, nStacks)
	case int(e.CompileContext) >= nStrings || int(e.UserMetadata) >= nStrings:
		return what("compile_context %d or user_metadata %d out of range (%d strings)", e.CompileContext, e.UserMetadata, nStrings)
	case int(e.Action) < len(needsAddr) && needsAddr[e.Action] && e.Addr == 0:
		return what("addr 0")
	case e.Action != ActionOOM && (e.Size < -maxSize || e.Size > maxSize):
		return what("size %d out of range (want at most %d)", e.Size, int64(maxSize))
	}
	return nil
}

// checkValid checks the table's own links: stack offsets rising to the end
// of the frame ID list, every frame ID in range, stack 0 empty.
func (t *Stacks) checkValid() error {
	if len(t.offsets) < 2 || t.offsets[0] != 0 || t.offsets[1] != 0 {
		return errors.New("stack table: stack 0 is not the empty stack")
	}
	for i := 1; i < len(t.offsets); i++ {
		if t.offsets[i] < t.offsets[i-1] {
			return fmt.Errorf("stack table: stack %d ends at %d, before it starts at %d", i-1, t.offsets[i], t.offsets[i-1])
		}
	}
	if last := t.offsets[len(t.offsets)-1]; int(last) != len(t.ids) {
		return fmt.Errorf("stack table: the last stack ends at %d, the frame ID list holds %d", last, len(t.ids))
	}
	for i, id := range t.ids {
		if int(id) >= len(t.Frames) {
			return fmt.Errorf("stack table: frame ID %d (at %d) out of range (%d frames)", id, i, len(t.Frames))
		}
	}
	return nil
}
