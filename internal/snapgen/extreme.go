package snapgen

import (
	"fmt"

	"github.com/memscope/memscope/snapshot"
)

// This file builds, in memory, snapshots of extreme shape one dimension at
// a time (issue 11): many segments, many split segments, many blocks in
// one segment at falling addresses, many devices, many OOMs, many steps of
// a staircase. Each is
// small per event, so a replay or analysis that is quadratic in the
// dimension shows at once; the numbers a correct replay must give follow
// from the construction and are documented on each builder.

const (
	extremeBase  = uint64(0x7f0000000000)
	extremeStart = int64(1_700_000_000_000_000)
	extremeBlock = 2 << 20 // bytes of every block the builders make
)

// trace is a builder's trace: each entry one microsecond after the last.
type trace struct {
	evs []snapshot.Event
	t   int64
}

func newTrace(capacity int) *trace {
	return &trace{evs: make([]snapshot.Event, 0, capacity), t: extremeStart}
}

// add appends an entry.
func (tr *trace) add(a snapshot.Action, addr uint64, size int64) {
	tr.t++
	tr.evs = append(tr.evs, snapshot.Event{Action: a, Addr: addr, Size: size, TimeUS: tr.t})
}

func newExtreme(name string) *snapshot.Snapshot {
	return &snapshot.Snapshot{Source: name, HasTraces: true,
		Stacks: snapshot.NewStacks(), Strings: snapshot.NewStrings()}
}

// ManySegments is n segments of 4 MiB on device 0, each cudaMalloc'd and
// given one 2 MiB block, all live together, then freed (block and segment)
// in allocation order except every tenth, which stays to the end.
// Allocated peaks at n × 2 MiB and reserved at n × 4 MiB; the end holds
// ceil(n/10) segments of one live block each.
func ManySegments(n int) *snapshot.Snapshot {
	const seg = 2 * extremeBlock
	s := newExtreme(fmt.Sprintf("many-segments(%d)", n))
	tr := newTrace(4 * n)
	ev := tr.add
	addr := func(i int) uint64 { return extremeBase + uint64(i)*2*seg } // a gap between segments
	for i := range n {
		ev(snapshot.ActionSegmentAlloc, addr(i), seg)
		ev(snapshot.ActionAlloc, addr(i), extremeBlock)
	}
	for i := range n {
		if i%10 == 0 {
			s.Segments = append(s.Segments, snapshot.Segment{Address: addr(i), TotalSize: seg,
				AllocatedSize: extremeBlock, ActiveSize: extremeBlock, RequestedSize: extremeBlock,
				Blocks: []snapshot.Block{
					{Address: addr(i), Size: extremeBlock, RequestedSize: extremeBlock, State: snapshot.BlockActiveAllocated},
					{Address: addr(i) + extremeBlock, Size: seg - extremeBlock},
				}})
			continue
		}
		ev(snapshot.ActionFreeRequested, addr(i), extremeBlock)
		ev(snapshot.ActionFreeCompleted, addr(i), extremeBlock)
		ev(snapshot.ActionSegmentFree, addr(i), seg)
	}
	s.Traces = [][]snapshot.Event{tr.evs}
	return s
}

// SplitSegments is n segments of 12 MiB on device 0, each cudaMalloc'd
// for a block of 10.5 MiB that stays live: under the recorded (default)
// settings the allocator splits each, leaving a 1.5 MiB free block that
// no later request fits, so every alloc raises the reserved peak, and the
// free blocks of split segments (inactive_split) grow by one a step.
// Reserved peaks and ends at n × 12 MiB, allocated at n × 10.5 MiB, with
// n inactive split blocks of 1.5 MiB; the model's replay matches every
// decision.
func SplitSegments(n int) *snapshot.Snapshot {
	const seg, blk = 12 << 20, 21 << 19
	s := newExtreme(fmt.Sprintf("split-segments(%d)", n))
	tr := newTrace(2 * n)
	ev := tr.add
	s.Segments = make([]snapshot.Segment, 0, n)
	for i := range n {
		addr := extremeBase + uint64(i)*2*seg // a gap between segments
		ev(snapshot.ActionSegmentAlloc, addr, seg)
		ev(snapshot.ActionAlloc, addr, blk)
		s.Segments = append(s.Segments, snapshot.Segment{Address: addr, TotalSize: seg,
			AllocatedSize: blk, ActiveSize: blk, RequestedSize: blk,
			Blocks: []snapshot.Block{
				{Address: addr, Size: blk, RequestedSize: blk, State: snapshot.BlockActiveAllocated},
				{Address: addr + blk, Size: seg - blk},
			}})
	}
	s.Traces = [][]snapshot.Event{tr.evs}
	return s
}

// FallingBlocks is one segment of n × 2 MiB on device 0 filled with n
// blocks of 2 MiB allocated at falling addresses (the highest first), then
// the lower half freed at rising addresses. Allocated peaks at n × 2 MiB;
// the end holds the upper n - n/2 blocks.
func FallingBlocks(n int) *snapshot.Snapshot {
	s := newExtreme(fmt.Sprintf("falling-blocks(%d)", n))
	size := int64(n) * extremeBlock
	tr := newTrace(1 + n + 2*(n/2))
	ev := tr.add
	at := func(i int) uint64 { return extremeBase + uint64(i)*extremeBlock }
	ev(snapshot.ActionSegmentAlloc, extremeBase, size)
	for i := n - 1; i >= 0; i-- {
		ev(snapshot.ActionAlloc, at(i), extremeBlock)
	}
	for i := range n / 2 {
		ev(snapshot.ActionFreeRequested, at(i), extremeBlock)
		ev(snapshot.ActionFreeCompleted, at(i), extremeBlock)
	}
	seg := snapshot.Segment{Address: extremeBase, TotalSize: size}
	if n/2 > 0 {
		seg.Blocks = append(seg.Blocks, snapshot.Block{Address: extremeBase, Size: int64(n/2) * extremeBlock})
	}
	for i := n / 2; i < n; i++ {
		seg.Blocks = append(seg.Blocks, snapshot.Block{Address: at(i), Size: extremeBlock,
			RequestedSize: extremeBlock, State: snapshot.BlockActiveAllocated})
		seg.AllocatedSize += extremeBlock
	}
	seg.ActiveSize, seg.RequestedSize = seg.AllocatedSize, seg.AllocatedSize
	s.Segments = []snapshot.Segment{seg}
	s.Traces = [][]snapshot.Event{tr.evs}
	return s
}

// ManyDevices is n devices, each with one 4 MiB segment holding one live
// block of 2 MiB, a trace of its segment_alloc and alloc inside one
// "step" record_function range, and nothing else; device d's block is
// allocated at line d+1 of train.py, so the stack table holds n stacks.
// Every device peaks at 2 MiB allocated and 4 MiB reserved.
func ManyDevices(n int) *snapshot.Snapshot {
	const seg = 2 * extremeBlock
	s := newExtreme(fmt.Sprintf("many-devices(%d)", n))
	s.Traces = make([][]snapshot.Event, n)
	s.Segments = make([]snapshot.Segment, 0, n)
	s.Annotations = make([]snapshot.Annotation, 0, 2*n)
	for d := range n {
		t := extremeStart + int64(d)*10
		f := s.Stacks.InternFrame(snapshot.Frame{Name: "main", Filename: "<repo>/train.py", Line: int64(d + 1)})
		stack := s.Stacks.InternStack([]snapshot.FrameID{f})
		s.Traces[d] = []snapshot.Event{
			{Action: snapshot.ActionSegmentAlloc, Addr: extremeBase, Size: seg, TimeUS: t + 1},
			{Action: snapshot.ActionAlloc, Addr: extremeBase, Size: extremeBlock, TimeUS: t + 2, Stack: stack},
		}
		s.Segments = append(s.Segments, snapshot.Segment{Device: d, Address: extremeBase, TotalSize: seg,
			AllocatedSize: extremeBlock, ActiveSize: extremeBlock, RequestedSize: extremeBlock,
			Blocks: []snapshot.Block{
				{Address: extremeBase, Size: extremeBlock, RequestedSize: extremeBlock, State: snapshot.BlockActiveAllocated, Stack: stack},
				{Address: extremeBase + extremeBlock, Size: seg - extremeBlock},
			}})
		s.Annotations = append(s.Annotations,
			snapshot.Annotation{Start: true, Name: "step", Device: d, TimeUS: t},
			snapshot.Annotation{Start: false, Name: "step", Device: d, TimeUS: t + 3})
	}
	return s
}

// ManyOOMs is one 4 MiB segment on device 0 and n rounds of: a 2 MiB
// block allocated, an oom event for a 1 GiB request (with 1 MiB free on
// the device), the block freed. Allocated peaks at 2 MiB after the first
// alloc; every OOM sees 2 MiB allocated and 4 MiB reserved; the end holds
// the segment and no block.
func ManyOOMs(n int) *snapshot.Snapshot {
	const seg = 2 * extremeBlock
	s := newExtreme(fmt.Sprintf("many-ooms(%d)", n))
	tr := newTrace(1 + 4*n)
	ev := tr.add
	ev(snapshot.ActionSegmentAlloc, extremeBase, seg)
	for range n {
		ev(snapshot.ActionAlloc, extremeBase, extremeBlock)
		ev(snapshot.ActionOOM, 1<<20, 1<<30)
		ev(snapshot.ActionFreeRequested, extremeBase, extremeBlock)
		ev(snapshot.ActionFreeCompleted, extremeBase, extremeBlock)
	}
	s.Segments = []snapshot.Segment{{Address: extremeBase, TotalSize: seg,
		Blocks: []snapshot.Block{{Address: extremeBase, Size: seg}}}}
	s.Traces = [][]snapshot.Event{tr.evs}
	return s
}

// Staircase is n training steps under memscope's harness annotations
// (memscope/step/N/forward, backward, optimizer) on device 0, in one
// segment of (n+2) × 2 MiB. Each step allocates a 2 MiB activation in
// forward and frees it in backward, and allocates a 2 MiB block in the
// optimizer that is never freed: a leak, so the floor rises by 2 MiB a
// step and step k's forward peaks at (k+1) × 2 MiB.
func Staircase(n int) *snapshot.Snapshot {
	s := newExtreme(fmt.Sprintf("staircase(%d)", n))
	size := int64(n+2) * extremeBlock
	leakFrame := s.Stacks.InternFrame(snapshot.Frame{Name: "step", Filename: "<repo>/train.py", Line: 42})
	leak := s.Stacks.InternStack([]snapshot.FrameID{leakFrame})
	actFrame := s.Stacks.InternFrame(snapshot.Frame{Name: "forward", Filename: "<repo>/model.py", Line: 7})
	act := s.Stacks.InternStack([]snapshot.FrameID{actFrame})
	t := extremeStart
	tr := make([]snapshot.Event, 0, 1+4*n)
	tr = append(tr, snapshot.Event{Action: snapshot.ActionSegmentAlloc, Addr: extremeBase, Size: size, TimeUS: t})
	top := extremeBase + uint64(n+1)*extremeBlock // the activation's place
	seg := snapshot.Segment{Address: extremeBase, TotalSize: size}
	mark := func(start bool, name string) {
		t++
		s.Annotations = append(s.Annotations, snapshot.Annotation{Start: start, Name: name, TimeUS: t})
	}
	ev := func(a snapshot.Action, addr uint64, stack snapshot.StackID) {
		t++
		tr = append(tr, snapshot.Event{Action: a, Addr: addr, Size: extremeBlock, TimeUS: t, Stack: stack})
	}
	for k := range n {
		p := fmt.Sprintf("memscope/step/%d/", k)
		mark(true, p+"forward")
		ev(snapshot.ActionAlloc, top, act)
		mark(false, p+"forward")
		mark(true, p+"backward")
		ev(snapshot.ActionFreeRequested, top, act)
		ev(snapshot.ActionFreeCompleted, top, act)
		mark(false, p+"backward")
		mark(true, p+"optimizer")
		addr := extremeBase + uint64(k)*extremeBlock
		ev(snapshot.ActionAlloc, addr, leak)
		mark(false, p+"optimizer")
		seg.Blocks = append(seg.Blocks, snapshot.Block{Address: addr, Size: extremeBlock,
			RequestedSize: extremeBlock, State: snapshot.BlockActiveAllocated, Stack: leak})
		seg.AllocatedSize += extremeBlock
	}
	seg.Blocks = append(seg.Blocks, snapshot.Block{Address: extremeBase + uint64(n)*extremeBlock, Size: size - seg.AllocatedSize})
	seg.ActiveSize, seg.RequestedSize = seg.AllocatedSize, seg.AllocatedSize
	s.Segments = []snapshot.Segment{seg}
	s.Traces = [][]snapshot.Event{tr}
	return s
}
