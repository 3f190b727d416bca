package allocator

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/memscope/memscope/internal/addrmap"
	"github.com/memscope/memscope/snapshot"
)

// This file is the what-if: one device's recorded requests driven through
// a fresh Allocator under other settings, over a device of a given
// capacity (ALLOCATOR.md §3.12: "same requests, different allocator").

// WhatIfOptions tune WhatIf.
type WhatIfOptions struct {
	// Capacity is the memory in bytes the device grants the allocator
	// (cudaMalloc and page maps succeed while reserved + size ≤ Capacity).
	// 0: the per-process cap when one is given (MemoryFraction ×
	// DeviceTotal, or MemoryLimit); else the recorded oom's: reserved at
	// that moment plus its device_free, or, when device_free had room for
	// the segment the request needed (a per-process cap refused it), a
	// cap just below the least reserved + size of the recording's failed
	// cudaMallocs; without an oom, the same cap from the failures (the
	// retries); else unlimited.
	Capacity int64
	// DeviceTotal and MemoryFraction are the device's memory and the
	// per-process cap the recorded run set (a snapshot records neither);
	// they apply to the what-if's settings too, unless those set their own.
	DeviceTotal    int64
	MemoryFraction float64
	// MemoryLimit is a per-process cap in bytes for the what-if (as
	// set_per_process_memory_fraction sets one: alloc_block refuses a new
	// segment past it, before asking the device), unless the settings set
	// their own.
	MemoryLimit int64
	// Timeline, when set, is the device's snapshot.Replay already made, or
	// being made: it may be the one ReplayOptions.Started hands out.
	Timeline *snapshot.Timeline
	// Stop, when set, is asked each time the what-if's reserved peak
	// rises, where its capacity is unlimited (so that no request can fail
	// later): true stops the what-if there (Outcome.Stopped). A caller
	// that keeps only settings whose peak stays under some bound learns
	// as soon as one cannot.
	Stop func(peakReserved int64) bool
	// StopInexact stops every what-if once the check under the recorded
	// settings has found a divergence (Outcome.Stopped is set; the caller
	// keeps only answers of a model that matches the recording, as the
	// fragmentation verdict does): on a recording the model does not
	// follow, the what-ifs do not run to its end for nothing.
	StopInexact bool
}

// Capacity sources, for Outcome.CapacityFrom.
const (
	CapacityGiven     = "given"     // WhatIfOptions.Capacity
	CapacityOOM       = "oom"       // the recorded oom: reserved + device_free
	CapacityOOMCap    = "oom-cap"   // the recorded oom had room on the device: a cap below every recorded failure (reserved + the size asked for); the what-if sets that cap
	CapacityFailures  = "failures"  // no oom, but failed cudaMallocs (retries): a cap below every one of them, set likewise
	CapacityCap       = "cap"       // the per-process cap
	CapacityUnlimited = "unlimited" // nothing known: every cudaMalloc succeeds
)

// Outcome is what the recorded requests do under other settings.
type Outcome struct {
	Device   int
	Settings Settings
	// Capacity is the device's memory the what-if grants (0: unlimited),
	// CapacityFrom where it comes from.
	Capacity     int64
	CapacityFrom string
	// Requests counts the requests driven (allocs and recorded ooms) of
	// Total in the trace.
	Requests, Total int

	PeakReserved, EndReserved int64
	PeakReservedAt            int // event index after which the peak was first reached; -1 at the start
	PeakAllocated             int64
	PeakSegments, EndSegments int // cudaMalloc'd segments (torch's "segment" stat: expandable memory is not counted)
	// InactiveSplit and InactiveSplitBytes are the free blocks of split
	// segments (inactive_split) at the peak of reserved.
	InactiveSplit      int
	InactiveSplitBytes int64
	Retries            int // num_alloc_retries
	// EmptyCaches counts the empty_cache() calls of the recording, made
	// at their places.
	EmptyCaches int

	// OOM is the request the what-if could not serve, nil when every
	// request was served; the what-if stops there (the program would have
	// raised).
	OOM *WhatIfOOM
	// ServedOOMs are the recorded ooms the what-if served: the recorded run
	// raised there and went on differently (or stopped), so what follows
	// in the trace is not what this program would have done.
	ServedOOMs []int

	// OOMRequests are the recorded ooms whose entry holds the request
	// rounded under the recorded settings past the 512-byte grain
	// (roundup_power2_divisions): the program asked for a size in
	// [From, Recorded], and the what-if asks for Used, the middle.
	OOMRequests []OOMRequest
	// DeferredFrees counts the frees that waited for work on other
	// streams (record_stream): free_completed came after a later request.
	// They complete at their recorded places; in another run the GPU can
	// finish them elsewhere (a block reused or not), so a what-if of a
	// recording with them is exact only for the recorded timing. Not
	// counted (0) when WhatIfOptions.Stop stopped the what-if.
	DeferredFrees int

	// Stopped, when 0 or more, is the event at which WhatIfOptions.Stop
	// stopped the what-if: the peaks are then those up to there, and the
	// end numbers are not known. -1 when it ran to the end.
	Stopped int

	// Window is true when the recording began late (or its ring buffer
	// wrapped) and the what-if starts from the rebuilt state: it covers
	// the recorded window only.
	Window bool
	// StartPlaced is true when that start state was re-made under the
	// what-if's settings (they are not the recorded ones: whatif_start.go),
	// and StartUnknown then the bytes of it that were cached, not live:
	// their history is not in the trace, and under these settings the
	// program might have kept more or less of them. Under the recorded
	// settings the start state is the recorded one, and StartUnknown 0.
	StartPlaced  bool
	StartUnknown int64
	// PeakReservedLow and PeakReservedHigh bound PeakReserved when the
	// start state was re-made: the peak from the same start with none of
	// its cached memory kept, and PeakReserved + StartUnknown, were all of
	// it kept on top. PeakReserved is the point between: the cached
	// segments re-made under these settings. OOMUncertain is true when
	// the what-if ran out of memory but not without the cached memory.
	// Zero, and false, otherwise.
	PeakReservedLow, PeakReservedHigh int64
	OOMUncertain                      bool
	// Survived counts the requests WhatIfSized marked as survivable that
	// could not be served (torch counts each in num_ooms).
	Survived int
	// Unmatched counts frees of blocks the what-if did not hold (a
	// damaged start state): they are skipped.
	Unmatched int

	// Replay is the check of the recording under its own settings
	// (ReplayWith): how far the model and torch agree on this trace.
	Replay *ReplayReport

	// speculated: run before the check found the failures its capacity
	// comes from, as if there were none; aborted: stopped when the check
	// found one.
	speculated, aborted bool
}

// WhatIfOOM is the request a what-if fails.
type WhatIfOOM struct {
	Index    int   // event index in the device's trace
	Size     int64 // bytes requested, rounded under the settings (as torch's oom entry holds it)
	Stream   int64
	Reserved int64 // reserved when it failed
}

// OOMRequest is a recorded oom's request, known only to within the
// recorded rounding.
type OOMRequest struct {
	Index    int   // event index of the oom entry
	Recorded int64 // the entry's size: rounded under the recorded settings
	From     int64 // the smallest request those settings round to Recorded
	Used     int64 // what the what-if asks for: the middle, a multiple of 512
}

// WhatIf drives a fresh Allocator under set by device's recorded requests
// (each alloc with its size and stream, each free_requested and
// free_completed at its recorded place, each recorded oom as a request of
// its size, each empty_cache() the replay found at its place) over a
// device of a capacity (WhatIfOptions.Capacity), and reports the peaks,
// the end state, the retries and the first request it cannot serve. It
// starts as Replay does (empty, or from the rebuilt state when recording
// began late), and refuses (ErrNotReplayable) what Replay refuses and a
// trace whose allocs or frees were dropped (skip_actions).
func WhatIf(s *snapshot.Snapshot, device int, set Settings, opt WhatIfOptions) (*Outcome, error) {
	if set.Async {
		return nil, refusef(device, "backend cudaMallocAsync has no caching allocator")
	}
	rc, err := NewRecording(s, device, opt)
	if err != nil {
		return nil, err
	}
	return rc.WhatIf(set)
}

// Recording is a device's recorded requests, replayed once under the
// recorded settings (the check, and what the what-ifs take from it: the
// empty_cache() calls, the failed cudaMallocs), for what-ifs under any
// number of other settings without replaying the recording again.
type Recording struct {
	s      *snapshot.Snapshot
	device int
	opt    WhatIfOptions
	tl     *snapshot.Timeline
	r      *replayer

	pairs *blockSlots
}

// blockSlots pairs the recorded entries that name one block: each alloc
// gets a slot, and each free_requested and free_completed the slot of the
// alloc that last used its address (-1: none; a free_requested of an
// address no alloc used gets a slot of its own, which holds no block).
// Blocks live before the first entry get slots too, by address. The
// what-ifs keep their blocks by slot, in a slice, not by address in a
// map. Entries are paired a stretch at a time: ahead, on a goroutine of
// their own while the replay check runs (pairAhead), and as far as the
// furthest what-if has gone, so a what-if waits for none of it, and one
// stopped early (WhatIfOptions.Stop) needs the pairing of the entries it
// ran only; the what-ifs share the pairing.
type blockSlots struct {
	evs  []snapshot.Event
	of   []int32 // valid below done
	done atomic.Int64
	pre  map[uint64]int32
	// halt stops pairAhead: the what-ifs that needed the slots are done.
	halt atomic.Bool

	mu      sync.Mutex
	byAddr  *addrmap.Map
	freedAt []int32 // by slot: the requests seen before its free_requested, -1 before it
	n       int32   // slots made
	// requests counts the allocs and ooms paired; deferred the frees
	// whose free_completed came after a request that followed their
	// free_requested: frees that waited for the streams a block was used
	// on (record_stream).
	requests, deferred int32
}

// slotStretch is how many entries blockSlots pairs at a time.
const slotStretch = 1 << 15

// The address map is sized for mostLive blocks, the most the trace holds
// at once (Timeline.MostLive), so that it never grows.
func newBlockSlots(evs []snapshot.Event, initial []snapshot.LiveBlock, mostLive int) *blockSlots {
	bs := &blockSlots{evs: evs, of: make([]int32, len(evs)), pre: make(map[uint64]int32, len(initial)),
		byAddr: addrmap.New(max(len(initial), mostLive))}
	for _, b := range initial {
		bs.pre[b.Addr] = bs.slot(b.Addr)
	}
	return bs
}

// slot makes a slot for the block at addr (mu held, or while new).
func (bs *blockSlots) slot(addr uint64) int32 {
	k := bs.n
	bs.byAddr.Put(addr, k)
	bs.freedAt = append(bs.freedAt, -1)
	bs.n++
	return k
}

// at returns entry i's slot (-1: none).
func (bs *blockSlots) at(i int) int32 {
	if int64(i) >= bs.done.Load() {
		bs.pairTo(i + 1)
	}
	return bs.of[i]
}

// pairTo pairs the entries below end (and a stretch more).
func (bs *blockSlots) pairTo(end int) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	from := int(bs.done.Load())
	if from >= end {
		return
	}
	end = min(len(bs.evs), max(end, from+slotStretch))
	for i := from; i < end; i++ {
		ev := &bs.evs[i]
		if i+addrmap.PrefetchAhead < len(bs.evs) {
			bs.byAddr.Prefetch(bs.evs[i+addrmap.PrefetchAhead].Addr)
		}
		bs.of[i] = -1
		switch ev.Action {
		case snapshot.ActionAlloc:
			bs.requests++
			bs.of[i] = bs.slot(ev.Addr)
		case snapshot.ActionOOM:
			bs.requests++
		case snapshot.ActionFreeRequested:
			k, ok := bs.byAddr.Get(ev.Addr)
			if !ok {
				k = bs.slot(ev.Addr)
			}
			bs.of[i] = k
			bs.freedAt[k] = bs.requests
		case snapshot.ActionFreeCompleted:
			if k, ok := bs.byAddr.Get(ev.Addr); ok {
				bs.of[i] = k
				bs.byAddr.Del(ev.Addr)
				if at := bs.freedAt[k]; at >= 0 && bs.requests > at {
					bs.deferred++
				}
			}
		}
	}
	bs.done.Store(int64(end))
}

// pairAhead pairs the entries a stretch at a time, to the end or until
// halt is set.
func (bs *blockSlots) pairAhead() {
	for n := int(bs.done.Load()); n < len(bs.evs) && !bs.halt.Load(); n = int(bs.done.Load()) {
		bs.pairTo(n + 1)
	}
}

// deferredFrees pairs every entry and returns the count of deferred frees.
func (bs *blockSlots) deferredFrees() int {
	bs.pairTo(len(bs.evs))
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return int(bs.deferred)
}

// NewRecording replays device's recorded requests for what-ifs; it
// refuses (ErrNotReplayable) what WhatIf refuses.
func NewRecording(s *snapshot.Snapshot, device int, opt WhatIfOptions) (*Recording, error) {
	tl := opt.Timeline
	if tl == nil && device >= 0 && device < len(s.Traces) && len(s.Traces[device]) > 0 {
		tl = snapshot.Replay(s, device, snapshot.ReplayOptions{})
	}
	var evs []snapshot.Event
	if device >= 0 && device < len(s.Traces) {
		evs = s.Traces[device]
	}
	var live []snapshot.LiveBlock
	mostLive := 0
	if tl != nil {
		_, live, _ = tl.StartState()
		mostLive = tl.MostLive()
	}
	r, err := newReplayer(s, device, ReplayOptions{DeviceTotal: opt.DeviceTotal, MemoryFraction: opt.MemoryFraction, Timeline: tl, refuseSkipped: true})
	if err != nil {
		return nil, err
	}
	r.stopFirst = opt.StopInexact
	pairs := newBlockSlots(evs, live, mostLive)
	go pairs.pairAhead() // beside the check, which needs none of it
	r.prog = newProgress()
	r.dev.prog = r.prog
	go r.check(s, device) // the what-ifs run beside it
	return &Recording{s: s, device: device, opt: opt, tl: tl, r: r, pairs: pairs}, nil
}

// WhatIf drives the recorded requests under set (see the package's WhatIf).
// The replay it rests on is shared, read only, by every call. It runs
// beside the check: it waits for the check only at a release run whose
// reading needs the model, and when its capacity comes from the
// recording's failed cudaMallocs, which the check finds, it runs as if
// there were none and is run again if the check finds one.
func (rc *Recording) WhatIf(set Settings) (*Outcome, error) {
	return rc.WhatIfSized(set, nil)
}

// WhatIfSized is WhatIf with the requests' sizes changed: sizes[i], where
// it is not 0, is asked for at the alloc at event i instead of the
// recorded size (the same program at another batch, say: package fit);
// a negative one asks for −sizes[i] and marks a request the program
// survives failing (a library's try-allocation with a fallback, as
// cuDNN's workspaces): its failure is counted (Outcome.Survived), not an
// OOM, and the run goes on without the block.
// Everything else is the recording's: the order of requests and frees,
// their streams and pools, the empty_cache() calls and deferred frees.
func (rc *Recording) WhatIfSized(set Settings, sizes []int64) (*Outcome, error) {
	out, err := rc.whatIfOnce(set, true, sizes)
	if err != nil || !out.StartPlaced || out.Stopped >= 0 {
		return out, err // a what-if stopped early (WhatIfOptions.Stop) has no bound to give
	}
	// A start state re-made under set: the bound, from the same start
	// with none of its cached memory kept, and with all of it kept on top.
	low, err := rc.whatIfOnce(set, false, sizes)
	if err != nil {
		return nil, err
	}
	out.PeakReservedLow = min(low.PeakReserved, out.PeakReserved)
	out.PeakReservedHigh = out.PeakReserved + out.StartUnknown
	if low.OOM == nil && out.OOM != nil {
		out.OOMUncertain = true
	}
	return out, nil
}

// whatIfOnce is WhatIf with a re-made start state's cached memory kept
// (cached) or not.
func (rc *Recording) whatIfOnce(set Settings, cached bool, sizes []int64) (*Outcome, error) {
	p := rc.r.prog
	select {
	case <-p.done:
		return rc.whatIf(set, false, cached, sizes)
	default:
	}
	out, err := rc.whatIf(set, true, cached, sizes)
	<-p.done
	if err == nil && out.speculated && (out.aborted || rc.r.dev.limit > 0) {
		return rc.whatIf(set, false, cached, sizes)
	}
	return out, err
}

// whatIf is WhatIf; with early the check may still be running.
func (rc *Recording) whatIf(set Settings, early, cached bool, sizes []int64) (*Outcome, error) {
	s, device, opt, tl, r := rc.s, rc.device, rc.opt, rc.tl, rc.r
	refuse := func(format string, args ...any) error { return refusef(device, format, args...) }
	if set.Async {
		return nil, refuse("backend cudaMallocAsync has no caching allocator")
	}
	if set.DeviceTotal == 0 {
		set.DeviceTotal = opt.DeviceTotal
	}
	if set.MemoryFraction == 0 {
		set.MemoryFraction = opt.MemoryFraction
	}
	if set.MemoryLimit == 0 {
		set.MemoryLimit = opt.MemoryLimit
	}
	w := &whatIf{evs: s.Traces[device], rec: r, early: early, stopInexact: opt.StopInexact, sizes: sizes,
		out: &Outcome{Device: device, Settings: set, Replay: r.rep, PeakReservedAt: -1, Stopped: -1}}
	w.capacity(tl, opt)
	w.dev = &capacityDevice{capacity: w.out.Capacity, next: 1 << 62}
	w.a = New(w.out.Settings, w.dev)
	_, live, ranges := tl.StartState()
	w.slots = rc.pairs
	if len(ranges) > 0 || len(live) > 0 {
		w.out.Window = true
		if sameDecisions(set, r.set) {
			// The recorded settings: the start state as it was.
			if err := w.a.load(live, ranges, r.info); err != nil {
				return nil, refuse("%v", err)
			}
			for addr, b := range w.a.live {
				if k, ok := w.slots.pre[addr]; ok {
					w.setBlock(k, b)
				}
			}
		} else if !w.placeStart(live, ranges, r.info, cached) {
			w.out.OOM = &WhatIfOOM{Index: -1, Reserved: w.a.Reserved}
			return w.out, nil
		}
		w.dev.used = w.a.Reserved
		for _, b := range w.a.live {
			if b.allocated {
				w.allocated += b.size
			}
		}
		w.segs = len(w.a.segs)
		w.out.PeakReserved, w.out.PeakAllocated, w.out.PeakSegments = w.a.Reserved, w.allocated, w.segs
		w.out.InactiveSplit, w.out.InactiveSplitBytes = w.a.inactiveSplit()
	}
	if opt.Stop != nil && w.out.CapacityFrom == CapacityUnlimited {
		w.stop = opt.Stop
		if w.stop(w.out.PeakReserved) { // the state the recording began in
			w.out.Stopped = 0
			return w.out, nil
		}
	}
	w.a.live = nil // the what-if keeps its blocks by slot
	w.run()
	if w.out.Stopped < 0 {
		w.out.DeferredFrees = w.slots.deferredFrees()
	}
	return w.out, nil
}

// WhatIfs runs WhatIf under each of sets, as many at a time as there are
// CPUs (the recording is shared, read only), and returns the outcomes and
// errors in the order of sets.
func (rc *Recording) WhatIfs(sets []Settings) ([]*Outcome, []error) {
	outs, errs := make([]*Outcome, len(sets)), make([]error, len(sets))
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i := range sets {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			outs[i], errs[i] = rc.WhatIf(sets[i])
		}()
	}
	wg.Wait()
	// The pairing ahead stops: a what-if run later pairs what it needs.
	rc.pairs.halt.Store(true)
	<-rc.r.prog.done
	return outs, errs
}

// actionCounts counts a trace's entries by action.
type actionCounts [snapshot.ActionAnnotate + 1]int

// skipped returns why a trace of the actions n counts looks recorded with
// skip_actions (allocs or frees left out), or "".
func skipped(n *actionCounts, s *snapshot.Snapshot, device int) string {
	allocs, req, done := n[snapshot.ActionAlloc], n[snapshot.ActionFreeRequested], n[snapshot.ActionFreeCompleted]
	segs := n[snapshot.ActionSegmentAlloc] + n[snapshot.ActionSegmentMap]
	switch {
	case allocs == 0 && req+done+segs > 0:
		return "the trace has frees or segments but no alloc entry: recorded with skip_actions leaving allocs out"
	case req == 0 && done > 0:
		return "the trace has free_completed but no free_requested entry: recorded with skip_actions leaving them out"
	case done == 0 && req > 0:
		return "the trace has free_requested but no free_completed entry: recorded with skip_actions leaving them out"
	case req == 0 && allocs > 0:
		active := 0
		for _, si := range s.SegmentsOf(device) {
			for _, b := range s.Segments[si].Blocks {
				if b.State.Active() {
					active++
				}
			}
		}
		if allocs > active {
			return fmt.Sprintf("the trace has %d allocs and no free, but only %d blocks are live at the end: recorded with skip_actions leaving frees out", allocs, active)
		}
	}
	return ""
}

// capacity chooses the device's capacity and, where the recording shows
// that a cap refused memory the device had, the cap (see
// WhatIfOptions.Capacity).
func (w *whatIf) capacity(tl *snapshot.Timeline, opt WhatIfOptions) {
	o := w.out
	if opt.Capacity > 0 {
		o.Capacity, o.CapacityFrom = opt.Capacity, CapacityGiven
		return
	}
	lim, capped := o.Settings.allowedMax()
	// The recorded failures (cudaMalloc or page maps the recording shows
	// failed, the ooms' included) bound the memory the process could get:
	// less than reserved then plus the size asked for. While the check
	// runs they are not known: the what-if takes none, and is run again
	// when the check finds one (Recording.WhatIf).
	var failed int64
	if !w.early {
		failed = w.rec.dev.limit
	}
	var ooms []int
	if w.rec.ooms > 0 {
		tl.Wait() // the timeline may still be replaying (ReplayOptions.Started)
		ooms = tl.OOMs
	}
	room := len(ooms) == 0
	for k, i := range ooms {
		n := tl.OOMStates[k] // not tl.At: the what-ifs run at once, and would move its cursor back and forth
		ev := &w.evs[i]
		if need := w.rec.set.AllocationSize(ev.Size); ev.DeviceFree() >= need {
			room = true // the device had room: a cap refused it
			continue
		}
		if c := n.Reserved + ev.DeviceFree(); c > 0 && (o.Capacity == 0 || c < o.Capacity) {
			o.Capacity, o.CapacityFrom = c, CapacityOOM
		}
	}
	switch {
	case capped:
		if o.Capacity == 0 || lim < o.Capacity {
			o.Capacity, o.CapacityFrom = lim, CapacityCap
		}
	case o.Capacity == 0 && room && w.early:
		o.CapacityFrom = CapacityUnlimited
		o.speculated = true
	case o.Capacity == 0 && room && failed > 0 && failed-MinBlockSize < w.reservedPeak(tl) && len(ooms) == 0:
		// A cap below what the recording went on to reserve contradicts
		// it: the "failure" was an empty_cache() read as the retry's
		// release (a CUDA graph's capture calls one), not a cap.
		o.CapacityFrom = CapacityUnlimited
	case o.Capacity == 0 && room && failed > 0:
		// A cap acts before the device is asked (alloc_block's check of
		// allowed_memory_maximum, with the whole segment's size), so the
		// what-if gets one: the largest below every recorded failure.
		o.Capacity, o.CapacityFrom = failed-MinBlockSize, CapacityFailures
		if len(ooms) > 0 {
			o.CapacityFrom = CapacityOOMCap
		}
		o.Settings.MemoryLimit = o.Capacity
	case o.Capacity == 0:
		o.CapacityFrom = CapacityUnlimited
	}
	// A capacity read from the recording is never below what the
	// recording reserved: the device granted that much (a recorded oom's
	// device_free, or a failure, below it says the device's free memory
	// changed, which a fixed capacity cannot follow; the recorded run
	// must replay as recorded).
	if o.Capacity > 0 && o.CapacityFrom != CapacityCap {
		if peak := w.reservedPeak(tl); o.Capacity < peak {
			o.Capacity = peak
			if o.Settings.MemoryLimit > 0 {
				o.Settings.MemoryLimit = peak
			}
		}
	}
}

// reservedPeak is the most the recording reserved (0 while the timeline
// is still replaying: nothing contradicts a cap then).
func (w *whatIf) reservedPeak(tl *snapshot.Timeline) int64 {
	if w.early {
		return 0
	}
	tl.Wait()
	return tl.PeakReserved.Bytes
}

// whatIf holds one what-if's state.
type whatIf struct {
	evs    []snapshot.Event
	rec    *replayer // the replay under the recorded settings
	a      *Allocator
	dev    *capacityDevice
	out    *Outcome
	slots  *blockSlots
	blocks []*block // by slot, the model's block while live (grown as slots come)
	// stop is WhatIfOptions.Stop where it applies; stopped is set when it
	// said to stop.
	stop    func(int64) bool
	stopped bool
	// stopInexact: WhatIfOptions.StopInexact.
	stopInexact bool
	held        []int // free_completed entries held for the next request (as Replay holds them)
	// early: the check may still be running (Recording.WhatIf); empties
	// is how far the check's emptyAt has been read.
	early   bool
	empties int

	allocated int64 // allocated_bytes
	segs      int   // cudaMalloc'd segments

	sizes   []int64        // Recording.WhatIfSized's sizes by event, nil for the recorded ones
	skipped map[int32]bool // slots of survived requests (WhatIfSized's optional ones) not yet freed
}

func (w *whatIf) run() {
	o := w.out
	collects := w.rec.collect
	queued := false // segment entries since the last request or free
	inexact := w.rec.prog != nil && w.stopInexact
	for i := range w.evs {
		if w.stopped || inexact && i&1023 == 0 && w.rec.prog.diverged.Load() {
			o.Stopped = i
			return
		}
		ev := &w.evs[i]
		switch ev.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentFree,
			snapshot.ActionSegmentMap, snapshot.ActionSegmentUnmap:
			if !queued && w.emptyCache(i) {
				o.EmptyCaches++
				w.a.EmptyCache()
				w.account()
				w.flushHeld()
			}
			queued = true
			continue
		case snapshot.ActionAlloc, snapshot.ActionOOM:
			o.Total++
			if o.OOM != nil {
				continue
			}
			w.request(i)
		case snapshot.ActionFreeRequested:
			if o.OOM == nil {
				w.free(i)
			}
		case snapshot.ActionFreeCompleted:
			if o.OOM != nil {
				break
			}
			// As Replay: a free_completed just before a release is the
			// release's own (synchronize_and_free_events), completed
			// after get_free_block failed.
			if !queued && !(collects && w.rec.immediate(i)) && w.rec.beforeRelease(i) {
				w.held = append(w.held, i)
				continue
			}
			w.complete(i)
		}
		queued = false
		if debugCheck && i%64 == 0 {
			w.checkValid(i)
		}
	}
	if debugCheck {
		w.checkValid(len(w.evs) - 1)
	}
	if o.OOM == nil {
		w.flushHeld()
	}
	o.EndReserved, o.EndSegments, o.Retries = w.a.Reserved, w.segs, w.a.Retries
}

// checkValid panics when the model breaks an invariant after event i
// (debugCheck: FuzzReplay).
func (w *whatIf) checkValid(i int) {
	if err := w.a.CheckValid(); err != nil {
		panic(fmt.Sprintf("invariant violation: what-if under %+v, after event %d: %v", w.out.Settings, i, err))
	}
}

// emptyCache reports whether the run of segment entries starting at i is
// an empty_cache() call. The entry after the run tells, as the check reads
// it: a release run before an alloc the check decides (an empty_cache()
// before the request, or the request's own release: the what-if waits
// for its decision); one before an oom, or that begins with a new
// segment, is the request's; any other is an empty_cache(), also where
// the check has stopped.
func (w *whatIf) emptyCache(i int) bool {
	c := i + 1
	for c < len(w.evs) && isSegmentEntry(w.evs[c].Action) {
		c++
	}
	switch {
	case c == len(w.evs):
		return true
	case w.evs[c].Action == snapshot.ActionOOM:
		return false
	case w.evs[c].Action != snapshot.ActionAlloc:
		return true
	case !isRelease(w.evs[i].Action):
		return false
	}
	r := w.rec
	found := false
	read := func() {
		for w.empties < len(r.emptyAt) && r.emptyAt[w.empties] < i {
			w.empties++
		}
		found = w.empties < len(r.emptyAt) && r.emptyAt[w.empties] == i
	}
	if w.early {
		r.prog.waitPast(c, read)
	} else {
		read()
	}
	return found
}

// isSegmentEntry reports whether an entry reserves or releases memory.
func isSegmentEntry(a snapshot.Action) bool {
	switch a {
	case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentFree,
		snapshot.ActionSegmentMap, snapshot.ActionSegmentUnmap:
		return true
	}
	return false
}

// setBlock keeps b in slot k.
func (w *whatIf) setBlock(k int32, b *block) {
	if n := int(k) + 1; n > len(w.blocks) {
		if n > cap(w.blocks) {
			// Doubling: slots come one at a time, and append's growth of a
			// long slice (a quarter at a time) made a 1 GB trace's what-if
			// spend a third of its time copying and clearing this one.
			nb := make([]*block, n, max(2*cap(w.blocks), n, 1024))
			copy(nb, w.blocks)
			w.blocks = nb
		} else {
			w.blocks = w.blocks[:n]
		}
	}
	w.blocks[k] = b
	b.slotted = true
}

// request serves the alloc or recorded oom at i.
func (w *whatIf) request(i int) {
	ev := &w.evs[i]
	o := w.out
	if o.speculated && w.rec.prog.failed.Load() {
		// The capacity comes from failures the check has now found:
		// the what-if is run again, with it.
		o.aborted, w.stopped = true, true
		return
	}
	o.Requests++
	size := ev.Size
	if ev.Action == snapshot.ActionOOM {
		size = w.oomRequest(i)
	}
	optional := false
	if ev.Action != snapshot.ActionOOM && i < len(w.sizes) && w.sizes[i] != 0 {
		size = w.sizes[i]
		if size < 0 {
			size, optional = -size, true
		}
	}
	b := w.a.malloc(size, ev.Stream, w.rec.pools.of(i, ev))
	w.account()
	if b == nil && optional {
		// A request the program survives failing (WhatIfSized): torch
		// released the cache and raised, the caller caught it.
		o.Survived++
		if w.skipped == nil {
			w.skipped = map[int32]bool{}
		}
		w.skipped[w.slots.at(i)] = true
		w.flushHeld()
		return
	}
	if b == nil {
		o.OOM = &WhatIfOOM{Index: i, Size: w.a.set.RoundSize(size), Stream: ev.Stream, Reserved: w.a.Reserved}
		return
	}
	w.allocated += b.size
	if ev.Action == snapshot.ActionOOM {
		o.ServedOOMs = append(o.ServedOOMs, i)
	} else {
		w.setBlock(w.slots.at(i), b)
	}
	o.PeakAllocated = max(o.PeakAllocated, w.allocated)
	o.PeakSegments = max(o.PeakSegments, w.segs)
	if w.a.Reserved > o.PeakReserved {
		o.PeakReserved, o.PeakReservedAt = w.a.Reserved, i
		o.InactiveSplit, o.InactiveSplitBytes = w.a.inactiveSplit()
		w.stopped = w.stop != nil && w.stop(o.PeakReserved)
	}
	w.flushHeld()
}

// oomRequest returns the size the what-if asks for at the recorded oom
// at i. The entry holds the request rounded under the recorded settings;
// where they round past the 512-byte grain (roundup_power2_divisions) the
// request is known only to lie in [From, Recorded], and the what-if asks
// for the middle of it (an error of at most half the interval either way,
// where the top end would always err upwards), noting it in OOMRequests.
func (w *whatIf) oomRequest(i int) int64 {
	ev := &w.evs[i]
	from := w.rec.set.Unround(ev.Size)
	if ev.Size-from < MinBlockSize {
		return ev.Size
	}
	used := (from + (ev.Size-from)/2 + MinBlockSize - 1) &^ (MinBlockSize - 1)
	w.out.OOMRequests = append(w.out.OOMRequests, OOMRequest{Index: i, Recorded: ev.Size, From: from, Used: used})
	return used
}

// account reads the records of the last step: the segment count.
func (w *whatIf) account() {
	for _, r := range w.a.Drain() {
		switch r.Action {
		case snapshot.ActionSegmentAlloc:
			w.segs++
		case snapshot.ActionSegmentFree:
			w.segs--
		}
	}
}

// free is a free_requested: the block stops being allocated; its memory
// stays in use until its free_completed.
func (w *whatIf) free(i int) {
	var b *block
	if k := w.slots.at(i); k >= 0 && int(k) < len(w.blocks) {
		b = w.blocks[k]
	}
	if b == nil || !b.allocated {
		if b == nil && w.skipped[w.slots.at(i)] {
			return // a request that failed and was survived
		}
		w.out.Unmatched++
		return
	}
	w.allocated -= b.size
	w.a.free(b, true)
	w.a.Drain()
}

// complete is the free_completed at i.
func (w *whatIf) complete(i int) {
	var b *block
	if k := w.slots.at(i); k >= 0 && int(k) < len(w.blocks) {
		b, w.blocks[k] = w.blocks[k], nil
	}
	if b == nil {
		if k := w.slots.at(i); w.skipped[k] {
			delete(w.skipped, k)
			return
		}
		w.out.Unmatched++
		return
	}
	b.slotted = false
	if b.pending {
		w.a.freeCompleted(b)
	}
	w.a.Drain()
}

func (w *whatIf) flushHeld() {
	for _, i := range w.held {
		w.complete(i)
	}
	w.held = w.held[:0]
}

// inactiveSplit is inactive_split and inactive_split_bytes: the free
// blocks of split segments (expandable segments are not counted).
func (a *Allocator) inactiveSplit() (int, int64) {
	n, bytes := 0, int64(0)
	for _, p := range a.poolList {
		n += p.free.splitN
		bytes += p.free.splitBytes
	}
	return n, bytes
}

// capacityDevice is a device of a fixed capacity (0: unlimited): cudaMalloc
// and page maps succeed while the memory in use plus the request fits.
// Addresses are handed out upwards from a base above any recorded one, so
// new segments never meet the start state's.
type capacityDevice struct {
	capacity, used int64
	next           uint64
}

func (d *capacityDevice) fits(size int64) bool {
	return d.capacity <= 0 || d.used+size <= d.capacity
}

func (d *capacityDevice) Malloc(size, stream int64) (uint64, bool) {
	if !d.fits(size) {
		return 0, false
	}
	d.used += size
	return d.Reserve(size, stream), true
}

func (d *capacityDevice) Reserve(size, stream int64) uint64 {
	d.next -= uint64(size+RoundLarge-1) / RoundLarge * RoundLarge
	return d.next
}

func (d *capacityDevice) Map(addr uint64, size int64) bool {
	if !d.fits(size) {
		return false
	}
	d.used += size
	return true
}

func (d *capacityDevice) Free(addr uint64, size int64)  { d.used -= size }
func (d *capacityDevice) Unmap(addr uint64, size int64) { d.used -= size }
