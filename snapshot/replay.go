package snapshot

import (
	"slices"
	"sync"
)

// Numbers are the allocator's quantities at one moment on one device.
// Device used (the driver's view) is not in a snapshot and is not here.
type Numbers struct {
	Requested int64 // Σ requested bytes of allocated blocks (requested_bytes)
	Allocated int64 // Σ block bytes of allocated blocks (allocated_bytes)
	Active    int64 // allocated plus freed-but-pending blocks (active_bytes)
	Reserved  int64 // Σ segment bytes (reserved_bytes)
}

// Peak is the highest value of one quantity and when it was first reached.
type Peak struct {
	Bytes  int64
	Index  int   // event index after which it was reached; -1 at the start
	TimeUS int64 // time of that event; 0 at the start
}

// Point is the state after one event.
type Point struct {
	Index  int
	TimeUS int64
	Numbers
}

// LiveBlock is one active block during replay.
type LiveBlock struct {
	Addr      uint64
	Size      int64 // block bytes
	Requested int64
	Stream    int64
	Stack     StackID
	// AllocIndex is the index of the alloc event, or -1 for a block that was
	// live before the first recorded event.
	AllocIndex  int
	AllocTimeUS int64
	PendingFree bool // free_requested seen, free_completed not yet
	// FreeStack is true when Stack is where the block was freed, not where it
	// was allocated (a block allocated before recording began).
	FreeStack bool
	// Estimated is true when Size could not be recovered exactly from the
	// layout and the rounded request stands in.
	Estimated bool
}

// Churn counts the segment events and ooms of a trace.
type Churn struct {
	SegmentAllocs, SegmentFrees, Maps, Unmaps, OOMs int
}

// Timeline is the replay of one device's recorded events.
type Timeline struct {
	Device int
	Events []Event // the device's trace, oldest first (aliases the Snapshot)

	Start, End                                             Numbers // before the first event, after the last
	PeakRequested, PeakAllocated, PeakActive, PeakReserved Peak

	// Points holds the state after every event; nil unless asked for.
	Points []Point

	// Initial is what was live before the first recorded event, by address.
	Initial []LiveBlock
	// OOMs are the indexes of oom events; OOMStates the numbers after
	// each (the state the allocator was in when it gave up).
	OOMs      []int
	OOMStates []Numbers
	// Churn counts the trace's segment events and ooms, valid or not.
	Churn Churn

	// With ReplayOptions.Lifetimes: Death[i] is the event that ended the
	// block allocated at event i (its free_requested, or its free_completed
	// when no request was recorded, or an alloc at its address when the
	// trace lacks its free), -1 when it lives to the end; PreDeath gives
	// the same by address for blocks live before the first event.
	Death    []int32
	PreDeath map[uint64]int32

	// What the trace holds, as far as the snapshot tells: Wrapped when the
	// ring buffer dropped its oldest entries; MaxEntries the buffer's size
	// when allocator_settings records it (0 otherwise); Timed when entries
	// carry time_us (torch ≥ 2.2; not torch_npu).
	Wrapped    bool
	MaxEntries int64
	Timed      bool
	// OneEntry is true when the trace holds one entry from a recording
	// that keeps one (the legacy _record_memory_history(True, …), whose
	// trace_alloc_max_entries defaults to 1; enabled="state", which keeps
	// only torch's marker of the snapshot): there is no history, only the
	// end state.
	OneEntry bool
	// NPURounding is true when the segments' blocks are rounded the way
	// torch_npu rounds them (round512(request + 32)); replay then does too.
	NPURounding bool

	Warnings []Warning

	snap             *Snapshot
	replayed         chan struct{} // closed when Replay is done
	final            *engine       // the state after the last event
	cur              *cursor       // the state At and StateAt reached last
	initInconsistent int
	// liveMost is the most blocks live at once in the walk back to the
	// start state (initialState): the forward replay's engine is sized
	// for it.
	liveMost int
	round    rounding
	init     layout
}

// ReplayOptions tune Replay.
type ReplayOptions struct {
	Series bool // keep a Point per event
	// Lifetimes keeps, for every block, the event that ended it:
	// Timeline.Death and Timeline.PreDeath.
	Lifetimes bool
	// Observe, when set, is called with index -1 and the state before the
	// first event, then with the state after every event, in order:
	// analyses that need per-event numbers ride on the one pass.
	Observe func(index int, n Numbers)
	// ObserveAlloc, when set, is called after every alloc event, before
	// Observe, with the block size recovered as for AllocSizes.
	ObserveAlloc func(index int, blockSize int64)
	// Started, when set, is called with the timeline as soon as the state
	// before the first event is known, before the events are replayed:
	// work that needs only that (StartState, Initial, NPURounding, Events,
	// Device) may begin beside the replay, and waits on Timeline.Wait
	// before it reads anything else.
	Started func(t *Timeline)
}

// Devices returns the device ordinals that have segments or trace entries.
func (s *Snapshot) Devices() []int {
	return slices.Clone(s.index().devices)
}

// Replay rebuilds device's memory over its recorded events: the four
// numbers after every event, their peaks, what was live before recording
// began, and a check of the end state against the snapshot's segments.
func Replay(s *Snapshot, device int, opt ReplayOptions) *Timeline {
	t := &Timeline{Device: device, snap: s, round: newRounding(s.Settings), replayed: make(chan struct{})}
	defer close(t.replayed)
	if device >= 0 && device < len(s.Traces) {
		t.Events = s.Traces[device]
	}
	t.NPURounding = t.round.detectNPU(s, device)
	t.Timed = timed(t.Events)
	t.initialState()

	e := t.newEngine()
	if opt.Lifetimes {
		e.death = make([]int32, len(t.Events))
		for i := range e.death {
			e.death[i] = -1
		}
		e.preDeath = map[uint64]int32{}
	}
	t.Start = e.n
	t.PeakRequested = Peak{Bytes: e.n.Requested, Index: -1}
	t.PeakAllocated = Peak{Bytes: e.n.Allocated, Index: -1}
	t.PeakActive = Peak{Bytes: e.n.Active, Index: -1}
	t.PeakReserved = Peak{Bytes: e.n.Reserved, Index: -1}
	if opt.Series {
		t.Points = make([]Point, 0, len(t.Events))
	}
	if opt.Started != nil {
		opt.Started(t)
	}
	ob := &observer{t: t, opt: opt}
	ob.w.trace = t.Events
	if opt.Observe != nil {
		opt.Observe(-1, e.n)
	}
	ob.w.observe(-1, e.n)
	if len(t.Events) < pipelineMin {
		for i := range t.Events {
			ev := &t.Events[i]
			e.apply(i, ev)
			ob.post(i, ev, &e.n, e.allocSize)
		}
	} else {
		t.pipelined(e, ob)
	}
	t.End = e.n
	t.Death, t.PreDeath = e.death, e.preDeath
	t.warnings(e, &ob.w)
	t.final = e
	t.cur = &cursor{}
	return t
}

// pipelineMin is the trace length from which Replay observes the numbers
// on a second goroutine while the first applies the events.
// (A variable: tests pipeline small traces.)
var pipelineMin = 1 << 16

// observer is the half of Replay that follows the numbers: peaks, OOMs,
// the warnings' watch, points and the caller's Observe functions.
type observer struct {
	t   *Timeline
	opt ReplayOptions
	w   watch
}

// post observes the state n after event i; size is the block size of an
// alloc.
func (ob *observer) post(i int, ev *Event, n *Numbers, size int64) {
	t, opt := ob.t, &ob.opt
	if opt.ObserveAlloc != nil && ev.Action == ActionAlloc {
		opt.ObserveAlloc(i, size)
	}
	if ev.Action == ActionOOM && ev.Size >= 0 {
		t.OOMs = append(t.OOMs, i)
		t.OOMStates = append(t.OOMStates, *n)
	}
	if n.Requested > t.PeakRequested.Bytes {
		t.PeakRequested = Peak{n.Requested, i, ev.TimeUS}
	}
	if n.Allocated > t.PeakAllocated.Bytes {
		t.PeakAllocated = Peak{n.Allocated, i, ev.TimeUS}
	}
	if n.Active > t.PeakActive.Bytes {
		t.PeakActive = Peak{n.Active, i, ev.TimeUS}
	}
	if n.Reserved > t.PeakReserved.Bytes {
		t.PeakReserved = Peak{n.Reserved, i, ev.TimeUS}
	}
	ob.w.observe(i, *n)
	if opt.Series {
		t.Points = append(t.Points, Point{i, ev.TimeUS, *n})
	}
	if opt.Observe != nil {
		opt.Observe(i, *n)
	}
}

// replayBatch is the numbers after a run of events, and the block size of
// each alloc among them, passed from the engine to the observer.
type replayBatch struct {
	first int
	nums  []Numbers
	sizes []int64
}

const replayBatchLen = 4096

// pipelined applies the events on this goroutine and observes their
// numbers on another, in order; it returns when both are done.
func (t *Timeline) pipelined(e *engine, ob *observer) {
	const depth = 4
	full := make(chan *replayBatch, depth)
	empty := make(chan *replayBatch, depth)
	for range depth {
		empty <- &replayBatch{nums: make([]Numbers, 0, replayBatchLen), sizes: make([]int64, 0, replayBatchLen)}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range full {
			for k := range b.nums {
				i := b.first + k
				ob.post(i, &t.Events[i], &b.nums[k], b.sizes[k])
			}
			empty <- b
		}
	}()
	for first := 0; first < len(t.Events); first += replayBatchLen {
		b := <-empty
		b.first, b.nums, b.sizes = first, b.nums[:0], b.sizes[:0]
		last := min(first+replayBatchLen, len(t.Events))
		for i := first; i < last; i++ {
			e.prefetch(i)
			e.apply(i, &t.Events[i])
			b.nums = append(b.nums, e.n)
			b.sizes = append(b.sizes, e.allocSize)
		}
		full <- b
	}
	close(full)
	<-done
}

// cursor is a replay stopped after event at, kept so that At and StateAt
// at rising indexes (every OOM of a device, every step of a staircase) go
// on from the last state instead of replaying from the first event.
type cursor struct {
	mu sync.Mutex
	e  *engine
	at int
	// kept are the states KeepStates kept, by event: a cursor past index,
	// or further before it than one of them, starts again from the latest
	// at or before index.
	kept keptStates
}

// upTo returns an engine in the state after event index: the cursor's,
// moved forward, or a fresh one when the cursor is past index. fn runs
// with the engine while the cursor is held.
func (t *Timeline) upTo(index int, fn func(e *engine)) {
	index = min(index, len(t.Events)-1)
	if t.cur == nil {
		e := t.newEngine()
		for i := 0; i <= index; i++ {
			e.apply(i, &t.Events[i])
		}
		fn(e)
		return
	}
	c := t.cur
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := c.nearestKept(index); k != nil && (c.e == nil || c.at > index || c.at < k.at) {
		c.e, c.at = t.restore(k), k.at
	} else if c.e == nil || c.at > index {
		c.e, c.at = t.newEngine(), -1
	}
	for i := c.at + 1; i <= index; i++ {
		c.e.prefetch(i)
		c.e.apply(i, &t.Events[i])
	}
	c.at = max(c.at, index)
	fn(c.e)
}

// Range is one reserved range at a moment: a segment, or a mapped range of
// an expandable segment.
type ReservedRange struct {
	Addr, End  uint64
	Expandable bool
}

// At replays up to and including event index (-1: nothing) and returns the
// numbers, the active blocks sorted by address, and the reserved ranges
// sorted by address.
func (t *Timeline) At(index int) (n Numbers, live []LiveBlock, ranges []ReservedRange) {
	if e := t.final; e != nil && index >= len(t.Events)-1 {
		return e.n, e.liveBlocks(), e.lay.ranges()
	}
	t.upTo(index, func(e *engine) { n, live, ranges = e.n, e.liveBlocks(), e.lay.ranges() })
	return n, live, ranges
}

// MostLive returns the most blocks live at once in the trace, as the walk
// back to the start state found it: a hint for sizing what a caller keeps
// per live block. It is known from the moment Replay calls Started.
func (t *Timeline) MostLive() int { return t.liveMost }

// Wait returns when the replay that made t is done (at once unless
// ReplayOptions.Started handed t out before).
func (t *Timeline) Wait() {
	if t.replayed != nil {
		<-t.replayed
	}
}

// StartState is At(-1) without replaying or copying: the numbers, the
// blocks live (Timeline.Initial itself, which the caller must not change)
// and the reserved ranges before the first event. It leaves the cursor
// of At and StateAt where it was, so it may be called while they run.
func (t *Timeline) StartState() (n Numbers, live []LiveBlock, ranges []ReservedRange) {
	return t.Start, t.Initial, t.init.ranges()
}

// LiveAt returns the blocks live after event index (before the first event
// when index is -1), sorted by address.
func (t *Timeline) LiveAt(index int) []LiveBlock {
	_, live, _ := t.At(index)
	return live
}

// AllocSizes returns the block size of every alloc event (0 for other
// events), recovered as in Replay.
func (t *Timeline) AllocSizes() []int64 {
	sizes := make([]int64, len(t.Events))
	e := t.newEngine()
	for i := range t.Events {
		ev := &t.Events[i]
		e.apply(i, ev)
		if ev.Action == ActionAlloc {
			if j, ok := e.live.Get(ev.Addr); ok {
				sizes[i] = e.slab[j].Size
			}
		}
	}
	return sizes
}

// Window returns the blocks live before event first (sorted by address)
// and the block size of every alloc event in [first, last] (sizes[i−first];
// 0 for other events): one replay up to last, continuing the timeline's
// cursor when it has one, instead of a replay of the whole trace.
func (t *Timeline) Window(first, last int) (live []LiveBlock, sizes []int64) {
	first, last = max(first, 0), min(last, len(t.Events)-1)
	sizes = make([]int64, max(last-first+1, 0))
	walk := func(e *engine, at int) {
		for i := at + 1; i < first; i++ {
			e.apply(i, &t.Events[i])
		}
		live = e.liveBlocks()
		for i := first; i <= last; i++ {
			ev := &t.Events[i]
			e.apply(i, ev)
			if ev.Action == ActionAlloc {
				if j, ok := e.live.Get(ev.Addr); ok {
					sizes[i-first] = e.slab[j].Size
				}
			}
		}
	}
	c := t.cur
	if c == nil {
		walk(t.newEngine(), -1)
		return live, sizes
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.e == nil || c.at >= first {
		c.e, c.at = t.newEngine(), -1
	}
	walk(c.e, c.at)
	c.at = max(c.at, last, first-1)
	return live, sizes
}

// StateAt returns the four numbers after event index (-1: the start).
func (t *Timeline) StateAt(index int) (n Numbers) {
	t.upTo(index, func(e *engine) { n = e.n })
	return n
}
