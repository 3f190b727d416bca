package allocator

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/memscope/memscope/snapshot"
)

// ErrNotReplayable is what the error Replay returns is (a *RefusedError,
// with the reason) when a device's trace cannot be replayed (no trace, a
// backend or state the model does not cover).
var ErrNotReplayable = errors.New("cannot replay the allocator")

// ReplayOptions tune ReplayWith.
type ReplayOptions struct {
	// TieBreak picks the free-block comparator (the zero value is torch
	// 2.11's, by address).
	TieBreak TieBreak
	// DeviceTotal is the device's memory in bytes, when known (it sizes
	// expandable segments' address space; 0: unknown).
	DeviceTotal int64
	// MemoryFraction is the per-process cap the run set with
	// torch.cuda.set_per_process_memory_fraction (0: none or unknown). A
	// snapshot does not record it, and garbage_collection_threshold acts
	// only under one.
	MemoryFraction float64
	// Timeline, when set, is the device's snapshot.Replay already made
	// (a good part of a replay's time); otherwise one is made.
	Timeline *snapshot.Timeline

	refuseSkipped bool // a what-if's: refuse a trace recorded with skip_actions (skipped)
}

// Replay drives the model by device's recorded requests under the
// recorded settings and checks every recorded decision (see the package
// doc).
func Replay(s *snapshot.Snapshot, device int) (*ReplayReport, error) {
	return ReplayWith(s, device, ReplayOptions{})
}

// maxSize bounds the sizes a replay accepts: no device has a pebibyte.
const maxSize = 1 << 50

// ReplayWith is Replay with options.
func ReplayWith(s *snapshot.Snapshot, device int, opt ReplayOptions) (*ReplayReport, error) {
	rep, _, err := replay(s, device, opt)
	return rep, err
}

// replay is ReplayWith, also returning the model in its final state.
func replay(s *snapshot.Snapshot, device int, opt ReplayOptions) (*ReplayReport, *Allocator, error) {
	r, err := runReplay(s, device, opt)
	if err != nil {
		return nil, nil, err
	}
	return r.rep, r.a, nil
}

// runReplay is ReplayWith, returning the replayer when done.
func runReplay(s *snapshot.Snapshot, device int, opt ReplayOptions) (*replayer, error) {
	r, err := newReplayer(s, device, opt)
	if err != nil {
		return nil, err
	}
	r.check(s, device)
	return r, nil
}

// newReplayer makes the replay of device's trace, ready to check (the
// model in the start state), or says why the trace cannot be replayed.
func newReplayer(s *snapshot.Snapshot, device int, opt ReplayOptions) (*replayer, error) {
	refuse := func(format string, args ...any) error { return refusef(device, format, args...) }
	if s.Legacy {
		return nil, refuse("a torch ≤ 2.0 snapshot (block history, no trace)")
	}
	if device < 0 || device >= len(s.Traces) || len(s.Traces[device]) == 0 {
		return nil, refuse("no recorded trace")
	}
	// One pass over the entries: the actions counted (skipped), the
	// first impossible size, the segments' streams and sizes.
	evs := s.Traces[device]
	info := map[uint64]segInfo{}
	for _, si := range s.SegmentsOf(device) {
		seg := &s.Segments[si]
		info[seg.Address] = segInfo{stream: seg.Stream, small: seg.Small, known: true, pool: seg.Pool}
	}
	var counts actionCounts
	bad := -1
	for i := range evs {
		ev := &evs[i]
		if a := ev.Action; int(a) < len(counts) {
			counts[a]++
		}
		if bad < 0 && (ev.Size < 0 || ev.Size > maxSize || ev.Addr+uint64(ev.Size) < ev.Addr) {
			bad = i
		}
		switch ev.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentFree:
			if _, ok := info[ev.Addr]; !ok {
				info[ev.Addr] = segInfo{stream: ev.Stream, small: ev.Size == SmallBuffer, known: true}
			}
		}
	}
	if opt.refuseSkipped {
		if why := skipped(&counts, s, device); why != "" {
			return nil, refuse("%s", why)
		}
	}
	set, err := SettingsFromSnapshot(s.Settings)
	if err != nil {
		return nil, fmt.Errorf("device %d: %w", device, err)
	}
	if set.Async {
		return nil, refuse("backend cudaMallocAsync has no caching allocator")
	}
	set.TieBreak = opt.TieBreak
	set.DeviceTotal = opt.DeviceTotal
	if opt.MemoryFraction > 0 {
		set.MemoryFraction = opt.MemoryFraction
	}
	if bad >= 0 {
		ev := &evs[bad]
		return nil, refuse("entry %d (%s) has an impossible size %d", bad, ev.Action, ev.Size)
	}
	pools := newPoolRoutes(s, device, evs)
	tl := opt.Timeline
	if tl == nil || tl.Device != device || len(tl.Events) != len(evs) {
		tl = snapshot.Replay(s, device, snapshot.ReplayOptions{})
	}
	if tl.NPURounding {
		return nil, refuse("torch_npu's rounding: not CUDA's allocator")
	}
	r := &replayer{evs: evs, tl: tl, info: info, set: set, pools: pools, ooms: counts[snapshot.ActionOOM],
		rep: &ReplayReport{Device: device, Settings: set, Events: len(evs), LostAt: -1}}
	r.dev = &replayDevice{evs: evs}
	r.a = New(set, r.dev)
	r.dev.a = r.a
	_, live, ranges := tl.StartState()
	if len(ranges) > 0 || len(live) > 0 {
		if err := r.a.load(live, ranges, info); err != nil {
			return nil, refuse("%v", err)
		}
		r.rep.StartFromState = true
		r.rep.StartSegments, r.rep.StartBlocks = len(ranges), len(live)
		for _, seg := range r.a.segs {
			if !seg.expandable {
				r.seen.segs++
			}
		}
		for _, b := range r.a.live {
			if b.allocated {
				r.seen.allocated += b.size
			}
		}
		r.seen.mostAllocated = r.seen.allocated
		r.seen.peak, r.seen.peakAt = r.a.Reserved, -1
		r.seen.split, r.seen.splitBytes = r.a.inactiveSplit()
		r.seen.mostSegs = r.seen.segs
		for i := range live {
			if live[i].Estimated {
				r.rep.StartEstimated++
			}
		}
	}
	_, capped := set.allowedMax()
	r.collect = capped && set.GCThreshold > 0
	return r, nil
}

// check replays the trace, checking every recorded decision, and the end
// state against the snapshot's.
func (r *replayer) check(s *snapshot.Snapshot, device int) {
	r.run()
	r.rep.FailedMallocs = r.dev.failed
	r.rep.Retries, r.rep.OOMs, r.rep.Reserved = r.a.Retries, r.a.OOMs, r.a.Reserved
	if r.rep.LostAt < 0 {
		r.compareEnd(s, device)
	}
	if r.prog != nil {
		r.prog.finish()
	}
}

// resyncSlack is the blocks and segments that resyncs may load in all
// beyond a sixteenth of the trace's length, so that a short trace is
// checked to its end.
const resyncSlack = 1 << 16

// replayer holds one replay's state.
type replayer struct {
	loaded int // blocks and segments the resyncs loaded
	// stopFirst stops checking at the first divergence
	// (WhatIfOptions.StopInexact).
	stopFirst bool
	evs       []snapshot.Event
	tl        *snapshot.Timeline
	info      map[uint64]segInfo
	// pools routes a request to the private pool its recorded address was
	// in (a snapshot's entries name no pool).
	pools poolRoutes
	set   Settings
	a     *Allocator
	dev   *replayDevice
	rep   *ReplayReport
	q     []int // segment entries since the last request
	want  []int
	// held are free_completed entries just before a release: torch's
	// release_cached_blocks completes every pending free itself
	// (synchronize_and_free_events) after get_free_block failed, so they
	// are applied by the model's release, not before the request.
	held []int
	// emptyAt holds, for each release run checked as an empty_cache()
	// call, the index of its first entry: where the program called it.
	// With prog, it is appended under prog.mu.
	emptyAt []int
	// collect reports whether the model runs the garbage collector (a GC
	// threshold under a known memory fraction).
	collect bool
	// ooms counts the trace's oom entries.
	ooms int
	// prog, when set, tells what-ifs running beside the check how far it
	// has gone (a Recording's).
	prog *progress
	// seen is the recorded run's own numbers as the model replays it: what
	// a what-if under the recorded settings reports, read from the check
	// (Recording.Recorded), true to the recording where every decision
	// matched.
	seen replayRun
}

// replayRun is what the check saw of the run: the peak of reserved (the
// first entry reaching it, and inactive_split there), the cudaMalloc'd
// segments (now and at most) and the requests.
type replayRun struct {
	peak, splitBytes         int64
	allocated, mostAllocated int64 // allocated_bytes (a block's bytes from its alloc to its free_requested)
	peakAt, split            int
	segs, mostSegs           int
	requests                 int
}

// track notes the model's state after entry i.
func (r *replayer) track(i int) {
	run := &r.seen
	run.mostSegs = max(run.mostSegs, run.segs)
	run.mostAllocated = max(run.mostAllocated, run.allocated)
	if r.a.Reserved > run.peak {
		run.peak, run.peakAt = r.a.Reserved, i
		run.split, run.splitBytes = r.a.inactiveSplit()
	}
}

// progress is how far a check running on a goroutine of its own has gone,
// for the what-ifs beside it that wait for one of its decisions.
type progress struct {
	at   atomic.Int64 // the entries below at are checked; math.MaxInt64 when the check is done
	want atomic.Int64 // the least at a what-if waits for (math.MaxInt64: none)
	// failed is set at the check's first failed cudaMalloc or page map: a
	// what-if whose capacity comes from the failures is run again.
	failed atomic.Bool
	// diverged is set at the check's first divergence: a what-if whose
	// caller keeps only exact answers (WhatIfOptions.StopInexact) stops.
	diverged atomic.Bool
	mu       sync.Mutex
	cond     sync.Cond
	done     chan struct{} // closed when the check is done
}

// progressEvery is how many entries the check goes between two reports
// of its progress (an atomic store each: a full barrier on amd64).
const progressEvery = 64

func newProgress() *progress {
	p := &progress{done: make(chan struct{})}
	p.want.Store(math.MaxInt64)
	p.cond.L = &p.mu
	return p
}

// reach records that the entries below i are checked, waking the what-ifs
// that wait for that.
func (p *progress) reach(i int) {
	p.at.Store(int64(i))
	if int64(i) >= p.want.Load() {
		p.mu.Lock()
		p.want.Store(math.MaxInt64)
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// finish records that the check is done.
func (p *progress) finish() {
	p.mu.Lock()
	p.at.Store(math.MaxInt64)
	p.cond.Broadcast()
	p.mu.Unlock()
	close(p.done)
}

// waitPast waits until the check has checked entry i, or is done, and
// runs fn with mu held (the check's emptyAt is then read safely).
func (p *progress) waitPast(i int, fn func()) {
	p.mu.Lock()
	for p.at.Load() <= int64(i) {
		if int64(i+1) < p.want.Load() {
			p.want.Store(int64(i + 1))
		}
		p.cond.Wait()
	}
	fn()
	p.mu.Unlock()
}

// beforeRelease reports whether the free_completed at i is one of a run
// of them that a segment_free, a segment_unmap or an oom follows: the
// frees release_cached_blocks completes. (A run before a segment_alloc
// is taken as process_events' at the start of malloc, the usual case;
// it could also be a retry that released nothing.)
func (r *replayer) beforeRelease(i int) bool {
	for ; i < len(r.evs); i++ {
		switch a := r.evs[i].Action; {
		case a == snapshot.ActionFreeCompleted:
		case isRelease(a), a == snapshot.ActionOOM:
			return true
		default:
			return false
		}
	}
	return false
}

// immediate reports whether the free_completed at i follows its own
// free_requested at once. Before a run of releases that is ambiguous: a
// block freed on the spot (no stream uses), or a deferred free that
// release_cached_blocks completed. Without a garbage collector only the
// release frees segments after a failed get_free_block, and it completes
// pending frees first, so the free is taken as the release's; with one, the
// collector may free them first, and it completes nothing, so an
// immediate free is taken as it reads.
func (r *replayer) immediate(i int) bool {
	return i > 0 && r.evs[i-1].Action == snapshot.ActionFreeRequested && r.evs[i-1].Addr == r.evs[i].Addr
}

// flushHeld applies the held free_completed entries the model's release
// did not complete.
func (r *replayer) flushHeld() {
	for _, i := range r.held {
		if b := r.a.live[r.evs[i].Addr]; b != nil && b.pending {
			r.a.FreeCompleted(b.addr)
		}
	}
	r.held = r.held[:0]
	r.a.Drain()
}

func (r *replayer) run() {
	for i := range r.evs {
		if r.prog != nil && i%progressEvery == 0 {
			r.prog.reach(i)
		}
		ev := &r.evs[i]
		switch ev.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentFree,
			snapshot.ActionSegmentMap, snapshot.ActionSegmentUnmap:
			r.q = append(r.q, i)
			continue
		case snapshot.ActionAlloc, snapshot.ActionOOM:
			r.request(i)
		case snapshot.ActionFreeCompleted:
			if len(r.q) == 0 && !(r.collect && r.immediate(i)) && r.beforeRelease(i) {
				r.held = append(r.held, i)
				continue
			}
			fallthrough
		default:
			if len(r.q) > 0 {
				r.release(r.q, i)
			}
			r.q = r.q[:0]
			r.other(i)
		}
		if debugCheck {
			if err := r.a.CheckValid(); err != nil {
				panic(fmt.Sprintf("invariant violation: after event %d (%s): %v", i, ev.Action, err))
			}
		}
		if r.rep.LostAt >= 0 {
			r.rep.Unchecked = len(r.evs) - i - 1
			return
		}
	}
	if len(r.q) > 0 {
		r.release(r.q, len(r.evs)-1)
	}
}

// isRelease reports whether an entry gives memory back.
func isRelease(a snapshot.Action) bool {
	return a == snapshot.ActionSegmentFree || a == snapshot.ActionSegmentUnmap
}

// request replays the alloc or oom at i with the segment entries before it.
func (r *replayer) request(i int) {
	ev := &r.evs[i]
	q := r.q
	r.q = r.q[:0]
	lead := 0
	for lead < len(q) && isRelease(r.evs[q[lead]].Action) {
		lead++
	}
	// Memory released although the cache could serve the request, or
	// although the cap had room for its segment (so no cudaMalloc
	// failed): an empty_cache() before the request, not the OOM retry
	// inside it.
	pool := r.pools.of(i, ev)
	if lead > 0 && ev.Action == snapshot.ActionAlloc && (r.a.WouldReuse(ev.Size, ev.Stream, pool) || r.room(ev.Size) || r.underPeak(ev.Size)) {
		if !r.release(q[:lead], i) {
			return
		}
		q = q[lead:]
	} else if lead > 0 && ev.Action == snapshot.ActionAlloc {
		if _, capped := r.a.set.allowedMax(); !capped || r.collect {
			r.rep.RetriesUncertain++ // the cap that made it a retry is not known
		}
	}
	r.dev.start(q)
	if b := r.a.malloc(ev.Size, ev.Stream, pool); b != nil {
		r.seen.allocated += b.size
	}
	r.seen.requests++
	r.want = append(append(r.want[:0], q...), i)
	ok := r.compare(r.want, i)
	r.track(i) // before the held frees complete, as a what-if counts
	r.flushHeld()
	if !ok {
		r.resync(i)
	}
}

// room reports whether a segment for a request of size bytes fits under
// the per-process cap, when the cap is known (ReplayOptions): then no
// cudaMalloc failed. Without a known cap it cannot tell (the device's own
// total does not do: a cap the snapshot does not record may have refused
// it), nor with a garbage collector at work (it releases inside malloc
// with room left).
func (r *replayer) room(size int64) bool {
	set := &r.a.set
	lim, capped := set.allowedMax()
	if !capped || r.collect {
		return false
	}
	return r.a.Reserved+set.AllocationSize(set.RoundSize(size)) <= lim
}

// underPeak reports whether a new segment for a request of size bytes
// would have left reserved memory at or below the recording's own peak
// of reserved: the device granted that much at another moment, so a
// cudaMalloc of it cannot have failed under any fixed cap, and the
// releases before the request were an empty_cache() call, not the
// retry's (torch.cuda.graph's capture calls empty_cache()). A device
// whose free memory shrank mid-run (another process took some) would
// break this; the recording cannot tell that apart, and a cap below a
// recorded reservation is the worse reading (issue 29). With a garbage
// collector at work it cannot tell (the collector releases inside malloc
// with room left).
func (r *replayer) underPeak(size int64) bool {
	if r.collect {
		return false
	}
	set := &r.a.set
	r.tl.Wait() // the timeline may still be replaying (ReplayOptions.Started)
	return r.a.Reserved+set.AllocationSize(set.RoundSize(size)) <= r.tl.PeakReserved.Bytes
}

// release replays a run of segment entries outside any request as an
// empty_cache() and reports whether it matched.
func (r *replayer) release(run []int, at int) bool {
	r.rep.EmptyCaches++
	if r.prog != nil {
		r.prog.mu.Lock()
		r.emptyAt = append(r.emptyAt, run[0])
		r.prog.mu.Unlock()
	} else {
		r.emptyAt = append(r.emptyAt, run[0])
	}
	r.a.EmptyCache()
	r.want = append(r.want[:0], run...)
	ok := r.compare(r.want, at)
	r.flushHeld()
	r.track(at)
	if !ok {
		r.resync(at)
		return false
	}
	return true
}

// other replays a free or checks a snapshot entry.
func (r *replayer) other(i int) {
	ev := &r.evs[i]
	ok := true
	switch ev.Action {
	case snapshot.ActionFreeRequested:
		if b := r.a.live[ev.Addr]; b != nil && b.allocated {
			r.seen.allocated -= b.size
		}
		ok = r.a.Free(ev.Addr, true)
	case snapshot.ActionFreeCompleted:
		ok = r.a.FreeCompleted(ev.Addr)
	case snapshot.ActionSnapshot:
		active := r.a.active()
		match := active == ev.Size
		r.rep.Checks[KindSnapshot].add(match)
		if !match {
			r.diverge(Divergence{Index: i, Kind: KindSnapshot,
				Want: Decision{Action: ev.Action, Size: ev.Size}, Got: Decision{Action: ev.Action, Size: active}})
		}
	}
	r.a.Drain()
	if !ok {
		r.diverge(Divergence{Index: i, Kind: KindBlock, Want: r.decision(ev), Got: Decision{}})
		r.resync(i)
	}
}

// active is the bytes of allocated and pending blocks.
func (a *Allocator) active() int64 {
	var n int64
	for _, b := range a.live {
		n += b.size
	}
	return n
}

func (r *replayer) decision(ev *snapshot.Event) Decision {
	d := Decision{Action: ev.Action, Addr: ev.Addr, Size: ev.Size}
	if ev.Action == snapshot.ActionAlloc {
		d.Segment, d.Offset = r.a.locate(ev.Addr)
	}
	return d
}

// locate returns the segment holding addr and the offset in it.
func (a *Allocator) locate(addr uint64) (uint64, int64) {
	if s := a.segAt(addr); s != nil {
		return s.addr, int64(addr - s.addr)
	}
	return 0, 0
}

// compare checks the model's records since the last drain against the
// recorded entries want, and reports whether all matched. at is the
// request's index, for a divergence with no recorded entry.
func (r *replayer) compare(want []int, at int) bool {
	var got []Record
	for _, rec := range r.a.Drain() {
		if _, ok := kindOf(rec.Action); ok {
			got = append(got, rec)
		}
		switch rec.Action {
		case snapshot.ActionSegmentAlloc:
			r.seen.segs++
		case snapshot.ActionSegmentFree:
			r.seen.segs--
		}
	}
	ok := true
	for j, wi := range want {
		w := &r.evs[wi]
		k, _ := kindOf(w.Action)
		match := ok && j < len(got) && got[j].Action == w.Action && got[j].Size == w.Size &&
			(got[j].Addr == w.Addr || w.Action == snapshot.ActionOOM)
		r.rep.Checks[k].add(match)
		if !match && ok {
			ok = false
			d := Divergence{Index: wi, Kind: k, Want: r.decision(w)}
			if j < len(got) {
				d.Got = r.recDecision(got[j])
			}
			r.diverge(d)
		}
	}
	if ok && len(got) > len(want) {
		ok = false
		g := got[len(want)]
		k, _ := kindOf(g.Action)
		r.diverge(Divergence{Index: at, Kind: k, Got: r.recDecision(g)})
	}
	return ok
}

func (r *replayer) recDecision(g Record) Decision {
	d := Decision{Action: g.Action, Addr: g.Addr, Size: g.Size}
	if g.Action == snapshot.ActionAlloc {
		d.Segment, d.Offset = r.a.locate(g.Addr)
	}
	return d
}

func (r *replayer) diverge(d Divergence) {
	r.rep.Divergences++
	if r.rep.First == nil {
		r.rep.First = &d
		if r.prog != nil {
			r.prog.diverged.Store(true)
		}
	}
}

// resync rebuilds the model from the recorded state after event i, so
// that one divergence does not hide the checks after it. Expandable
// segments cannot be rebuilt (their reservations are unknown): checking
// stops there.
func (r *replayer) resync(i int) {
	old := r.a
	// Each resync loads the whole recorded state: after many, checking
	// stops, so that the check costs no more than a replay of the trace
	// (a model that diverges this often tells no more by going on).
	if r.loaded > len(r.evs)/16+resyncSlack {
		r.rep.LostAt, r.rep.LostWhy = i, LostTooOften
		return
	}
	if r.stopFirst {
		r.rep.LostAt, r.rep.LostWhy = i, LostAsked
		return
	}
	r.tl.Wait() // the timeline may still be replaying (ReplayOptions.Started)
	_, live, ranges := r.tl.At(i)
	r.loaded += len(live) + len(ranges)
	for _, rg := range ranges {
		if rg.Expandable {
			r.rep.LostAt, r.rep.LostWhy = i, LostExpandable
			return
		}
	}
	a := New(r.set, r.dev)
	a.Retries, a.OOMs = old.Retries, old.OOMs
	if err := a.load(live, ranges, r.info); err != nil {
		r.rep.LostAt, r.rep.LostWhy = i, LostUnloadable
		return
	}
	// Keep the creation order of segments the old model knew.
	next := old.nextSeg
	for _, seg := range a.segs {
		if o := old.segs[seg.addr]; o != nil {
			seg.counter = o.counter
		} else {
			next++
			seg.counter = next
		}
	}
	a.nextSeg = next
	for _, p := range a.poolList {
		p.free.resort()
	}
	r.a = a
	r.dev.a = a
	r.rep.Resyncs++
}

// poolRoutes says which private pool a recorded request went to. A
// snapshot's trace entries name no pool (torch 2.11's TraceEntry keeps its
// mempool out of _snapshot()), but the end state names each segment's
// pool: a request whose recorded block lies in a private-pool segment,
// while that segment is reserved, was served from that pool. The
// recording is the oracle here, as for cudaMalloc's addresses; a
// private-pool segment freed before the end is not known, and its
// requests go to the default pool.
type poolRoutes struct {
	segs []poolRoute // by address
}

type poolRoute struct {
	addr, end uint64
	pool      snapshot.PoolID
	from      int // the segment's last segment_alloc entry, -1 when it predates the trace
}

func newPoolRoutes(s *snapshot.Snapshot, device int, evs []snapshot.Event) poolRoutes {
	var pr poolRoutes
	for _, si := range s.SegmentsOf(device) {
		seg := &s.Segments[si]
		if !seg.Pool.IsDefault() {
			pr.segs = append(pr.segs, poolRoute{addr: seg.Address, end: seg.Address + uint64(seg.TotalSize), pool: seg.Pool, from: -1})
		}
	}
	if len(pr.segs) == 0 {
		return pr
	}
	sort.Slice(pr.segs, func(i, j int) bool { return pr.segs[i].addr < pr.segs[j].addr })
	for i := range evs {
		if evs[i].Action == snapshot.ActionSegmentAlloc {
			if k := pr.find(evs[i].Addr); k >= 0 && pr.segs[k].addr == evs[i].Addr {
				pr.segs[k].from = i
			}
		}
	}
	return pr
}

// find returns the index of the segment holding addr, -1 for none.
func (pr poolRoutes) find(addr uint64) int {
	k := sort.Search(len(pr.segs), func(k int) bool { return pr.segs[k].end > addr })
	if k < len(pr.segs) && pr.segs[k].addr <= addr {
		return k
	}
	return -1
}

// of is the pool of the request at entry i: a private pool's when its
// recorded address lies in one of its segments reserved by then, else the
// default pool.
func (pr poolRoutes) of(i int, ev *snapshot.Event) snapshot.PoolID {
	if len(pr.segs) == 0 || ev.Action != snapshot.ActionAlloc {
		return snapshot.PoolID{}
	}
	if k := pr.find(ev.Addr); k >= 0 && i > pr.segs[k].from {
		return pr.segs[k].pool
	}
	return snapshot.PoolID{}
}
