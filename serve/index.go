package serve

import (
	"fmt"
	"slices"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/snapshot"
)

// index is what the timeline queries of one device read, built once after
// the analysis: every allocation as an interval of events, allocated bytes
// after every event, and the live allocations at checkpoints, so that a
// zoom touches only the events and allocations of its window.
type index struct {
	d      *attribution.Device
	stacks *snapshot.Stacks
	axis

	// recs are the allocations: the blocks live before the first event
	// first (start -1), then one per alloc event, in event order.
	recs  []rec
	nInit int
	// starts and ends repeat the recs' lifetimes as two arrays: what the
	// timeline's pass over a window's recs reads, a quarter of the bytes.
	starts, ends []int32
	// start0 is allocated bytes before the first event; allocated[i]
	// after event i.
	start0    int64
	allocated []int64
	// born[i] is the rec that event i allocated, -1 for none. delta[i] is
	// what event i changed allocated by (+ a block's size when it
	// allocated one, − when it ended one), site[i] that block's site (-1
	// for an event that changed nothing): the timeline's sweeps read them
	// in order.
	born  []int32
	delta []int64
	site  []int32
	// every checkEvery events, live[k] holds the recs live after event
	// k*checkEvery-1 (before event k*checkEvery), by rec index.
	checkEvery int
	live       [][]int32

	// Per block of blockEvents events: the least and most allocated after
	// its events and the first event with the most (blockMin, blockMax,
	// blockArg); and what its events changed each site's bytes by, as the
	// entries blockDelta[blockEntry[k]:blockEntry[k+1]] (site, bytes), for
	// the sites whose bytes changed.
	blockMin, blockMax []int64
	blockArg           []int32
	blockEntry         []int32
	blockDelta         []siteDelta

	// sites are the distinct sites of the allocations, labels beside.
	sites      []attribution.Site
	siteLabels []string

	// initAt maps the address of each block live before the first event
	// to its rec.
	initAt map[uint64]int32

	// reserved is reserved bytes over the events, where they change.
	reserved reservedSteps

	// mark[r] == gen for the recs a timeline query draws as bands.
	gen  uint32
	mark []uint32
}

// rec is one allocation's lifetime: live after event start until event end
// (exclusive: the event that ended it; len(events) when it lives on).
// blockEvents is the size of the blocks whose summaries let a wide window
// skip the events inside them.
const blockEvents = 512

// siteDelta is one site's change of bytes over a block of events.
type siteDelta struct {
	site  int32
	bytes int64
}

type rec struct {
	start, end int32
	size       int64
	site       int32
	live       int32 // for a block live before the first event: its index in Timeline.Initial
}

// id is the allocation's identifier in the API: its alloc event, or
// -(k+1) for the k-th block live before the first event.
func (x *index) id(r int) int64 {
	if r < x.nInit {
		return -int64(x.recs[r].live) - 1
	}
	return int64(x.recs[r].start)
}

// recOf returns the rec of an API identifier, or -1.
func (x *index) recOf(id int64) int {
	if id < 0 {
		k := -id - 1
		if k < int64(x.nInit) {
			return int(k)
		}
		return -1
	}
	if id >= int64(len(x.born)) {
		return -1
	}
	return int(x.born[id])
}

// axis is a device's timeline axis: µs after the first event when the
// trace is timed, else event order.
type axis struct {
	events []snapshot.Event
	// timed: the axis is µs after the first event (t0); otherwise event
	// order. A trace whose times go backwards is drawn in event order.
	timed bool
	t0    int64
}

// newAxis reads the axis of a timeline (one pass over its times).
func newAxis(t *snapshot.Timeline) axis {
	ax := axis{events: t.Events, timed: t.Timed && len(t.Events) > 0}
	if len(t.Events) > 0 {
		ax.t0 = t.Events[0].TimeUS
	}
	for i := 1; i < len(t.Events) && ax.timed; i++ {
		if t.Events[i].TimeUS < t.Events[i-1].TimeUS {
			ax.timed = false
		}
	}
	return ax
}

func newIndex(d *attribution.Device, stacks *snapshot.Stacks, ax axis) *index {
	return buildIndex(d, stacks, ax, 0)
}

// buildIndex builds the index of device d; on the other core meanwhile,
// a replay records reserved bytes where they change and keeps the keep
// allocator states that moments start from (snapshot.Timeline.KeepStates).
func buildIndex(d *attribution.Device, stacks *snapshot.Stacks, ax axis, keep int) *index {
	t := d.Timeline
	n := len(t.Events)
	x := &index{d: d, stacks: stacks, axis: ax, born: make([]int32, n), delta: make([]int64, n), site: make([]int32, n), allocated: make([]int64, n), initAt: map[uint64]int32{}}
	replayed := make(chan struct{})
	go func() {
		t.KeepStates(keep, x.reserved.observe)
		close(replayed)
	}()
	defer func() { <-replayed }()
	// One pass over the events (they are most of the memory this touches)
	// counts the allocs, while the other core fills the per-event tables
	// with "none".
	died := make([]int32, n) // the rec event i ended, -1 for none
	filled := make(chan struct{})
	go func() {
		for i := range x.born {
			x.born[i], died[i], x.site[i] = -1, -1, -1
		}
		close(filled)
	}()
	allocs := 0
	for i := range t.Events {
		ev := &t.Events[i]
		if ev.Action == snapshot.ActionAlloc {
			allocs++
		}
	}
	<-filled
	st := d.Timeline
	siteIndex := map[attribution.Site]int32{}
	byStack := make([]int32, stacks.Len()) // stack → its site + 1; 0: not seen yet
	siteOf := func(b *snapshot.LiveBlock) int32 {
		s, perBlock := d.BlockSite(b) // a site its stack does not decide is never cached by stack
		cached := !perBlock && int(b.Stack) < len(byStack)
		if cached && byStack[b.Stack] > 0 {
			return byStack[b.Stack] - 1
		}
		if !perBlock {
			s = d.SiteOfBlock(b)
		}
		k, ok := siteIndex[s]
		if !ok {
			k = int32(len(x.sites))
			siteIndex[s] = k
			x.sites = append(x.sites, s)
		}
		if cached {
			byStack[b.Stack] = k + 1
		}
		return k
	}
	end := func(death int) int32 {
		if death < 0 {
			return int32(n)
		}
		return int32(death)
	}
	x.recs = make([]rec, 0, len(st.Initial)+allocs)
	for k := range st.Initial {
		b := &st.Initial[k]
		if b.PendingFree {
			continue // active, not allocated: it never counts in allocated
		}
		x.initAt[b.Addr] = int32(len(x.recs))
		x.recs = append(x.recs, rec{start: -1, end: end(d.DeathOf(b)), size: b.Size, site: siteOf(b), live: int32(k)})
		x.start0 += b.Size
	}
	x.nInit = len(x.recs)
	sizes := d.AllocSizes()
	for i := range t.Events {
		ev := &t.Events[i]
		if ev.Action != snapshot.ActionAlloc {
			continue
		}
		b := snapshot.LiveBlock{Addr: ev.Addr, Size: sizes[i], Requested: ev.Size, Stack: ev.Stack, AllocIndex: i}
		death := -1
		if t.Death != nil {
			death = int(t.Death[i])
		}
		x.born[i] = int32(len(x.recs))
		x.recs = append(x.recs, rec{start: int32(i), end: end(death), size: sizes[i], site: siteOf(&b), live: -1})
	}
	for r := range x.recs {
		if e := x.recs[r].end; int(e) < n {
			died[e] = int32(r)
		}
	}
	// Allocated after every event, and the checkpoints of live recs.
	x.checkEvery = max(4096, n/256)
	// The live recs as a set: a slice, and each rec's place in it.
	var live []int32
	pos := make([]int32, len(x.recs))
	for r := 0; r < x.nInit; r++ {
		pos[r] = int32(len(live))
		live = append(live, int32(r))
	}
	cur := x.start0
	for i := 0; i < n; i++ {
		if i%x.checkEvery == 0 {
			ids := slices.Clone(live)
			slices.Sort(ids)
			x.live = append(x.live, ids)
		}
		// An event ends at most one block or allocates one.
		if r := died[i]; r >= 0 {
			cur -= x.recs[r].size
			x.delta[i], x.site[i] = -x.recs[r].size, x.recs[r].site
			last := live[len(live)-1]
			live[pos[r]], pos[last] = last, pos[r]
			live = live[:len(live)-1]
		}
		if r := x.born[i]; r >= 0 {
			cur += x.recs[r].size
			x.delta[i], x.site[i] = x.recs[r].size, x.recs[r].site
			pos[r] = int32(len(live))
			live = append(live, r)
		}
		x.allocated[i] = cur
	}
	x.summarizeBlocks()
	x.starts, x.ends = make([]int32, len(x.recs)), make([]int32, len(x.recs))
	for r := range x.recs {
		x.starts[r], x.ends[r] = x.recs[r].start, x.recs[r].end
	}
	x.siteLabels = make([]string, len(x.sites))
	for i, s := range x.sites {
		x.siteLabels[i] = s.Label(stacks)
	}
	return x
}

// idOfLive returns the API identifier of a block live at some moment.
func (x *index) idOfLive(b *snapshot.LiveBlock) (int64, bool) {
	if b.AllocIndex >= 0 {
		if b.AllocIndex < len(x.born) && x.born[b.AllocIndex] >= 0 {
			return int64(b.AllocIndex), true
		}
		return 0, false
	}
	if r, ok := x.initAt[b.Addr]; ok {
		return x.id(int(r)), true
	}
	return 0, false
}

// checkValid checks the index's invariants: recs in order of birth, each
// ending after it starts; born and the per-event deltas agree with the
// recs; allocated is the running sum of the deltas; each checkpoint lists,
// in order, exactly the recs live at it.
func (x *index) checkValid() error {
	n := len(x.events)
	for r := range x.recs {
		rc := &x.recs[r]
		switch {
		case r < x.nInit && rc.start != -1:
			return fmt.Errorf("rec %d of the %d live before the first event starts at event %d", r, x.nInit, rc.start)
		case r >= x.nInit && (rc.start < 0 || x.born[rc.start] != int32(r)):
			return fmt.Errorf("rec %d starts at event %d, which allocated rec %d", r, rc.start, x.born[max(rc.start, 0)])
		case r > x.nInit && rc.start <= x.recs[r-1].start:
			return fmt.Errorf("rec %d starts at event %d, not after rec %d's %d", r, rc.start, r-1, x.recs[r-1].start)
		case rc.end <= rc.start || int(rc.end) > n:
			return fmt.Errorf("rec %d lives from event %d to %d of %d", r, rc.start, rc.end, n)
		}
	}
	cur := x.start0
	for i := 0; i < n; i++ {
		cur += x.delta[i]
		if cur != x.allocated[i] || cur < 0 {
			return fmt.Errorf("allocated after event %d = %d, the deltas sum to %d", i, x.allocated[i], cur)
		}
	}
	for k := range x.blockMax {
		a, b := k*blockEvents, min((k+1)*blockEvents, n)
		sums := map[int32]int64{}
		hi, at := x.allocated[a], a
		for i := a; i < b; i++ {
			if x.allocated[i] > hi {
				hi, at = x.allocated[i], i
			}
			if x.site[i] >= 0 {
				sums[x.site[i]] += x.delta[i]
			}
		}
		if hi != x.blockMax[k] || at != int(x.blockArg[k]) || slices.Min(x.allocated[a:b]) != x.blockMin[k] {
			return fmt.Errorf("block %d: most %d after event %d, least %d; its events say %d after %d, %d", k, x.blockMax[k], x.blockArg[k], x.blockMin[k], hi, at, slices.Min(x.allocated[a:b]))
		}
		for _, e := range x.blockDelta[x.blockEntry[k]:x.blockEntry[k+1]] {
			if sums[e.site] != e.bytes {
				return fmt.Errorf("block %d: site %d changed by %d, its events say %d", k, e.site, e.bytes, sums[e.site])
			}
			delete(sums, e.site)
		}
		for site, v := range sums {
			if v != 0 {
				return fmt.Errorf("block %d: site %d changed by %d, not in its summary", k, site, v)
			}
		}
	}
	for k, ids := range x.live {
		at := k*x.checkEvery - 1
		want := 0
		for r := range x.recs {
			if rc := &x.recs[r]; int(rc.start) <= at && at < int(rc.end) {
				want++
			}
		}
		if len(ids) != want || !slices.IsSorted(ids) {
			return fmt.Errorf("checkpoint %d (after event %d) lists %d recs, want the %d live then, in order", k, at, len(ids), want)
		}
		for _, r := range ids {
			if rc := &x.recs[r]; int(rc.start) > at || at >= int(rc.end) {
				return fmt.Errorf("checkpoint %d (after event %d) lists rec %d, live from %d to %d", k, at, r, rc.start, rc.end)
			}
		}
	}
	return nil
}

// summarizeBlocks fills the per-block summaries (see index).
func (x *index) summarizeBlocks() {
	n := len(x.events)
	blocks := (n + blockEvents - 1) / blockEvents
	x.blockMin, x.blockMax, x.blockArg = make([]int64, blocks), make([]int64, blocks), make([]int32, blocks)
	x.blockEntry = make([]int32, 1, blocks+1)
	sum := make([]int64, len(x.sites))
	var touched []int32
	for k := 0; k < blocks; k++ {
		a, b := k*blockEvents, min((k+1)*blockEvents, n)
		lo, hi, at := x.allocated[a], x.allocated[a], a
		for i := a; i < b; i++ {
			v := x.allocated[i]
			lo = min(lo, v)
			if v > hi {
				hi, at = v, i
			}
			if s := x.site[i]; s >= 0 {
				if sum[s] == 0 {
					touched = append(touched, s)
				}
				sum[s] += x.delta[i] // a sum back at 0 is touched again: Compact below
			}
		}
		x.blockMin[k], x.blockMax[k], x.blockArg[k] = lo, hi, int32(at)
		slices.Sort(touched)
		touched = slices.Compact(touched)
		for _, s := range touched {
			if sum[s] != 0 {
				x.blockDelta = append(x.blockDelta, siteDelta{s, sum[s]})
			}
			sum[s] = 0
		}
		touched = touched[:0]
		x.blockEntry = append(x.blockEntry, int32(len(x.blockDelta)))
	}
}

// minMax returns the least and most allocated after the events [a, b)
// (a < b) and the first event with the most.
func (x *index) minMax(a, b int) (lo, hi int64, at int) {
	lo, hi, at = x.allocated[a], x.allocated[a], a
	scan := func(i int) {
		v := x.allocated[i]
		lo = min(lo, v)
		if v > hi {
			hi, at = v, i
		}
	}
	i := a
	for ; i < b && i%blockEvents != 0; i++ {
		scan(i)
	}
	for ; i+blockEvents <= b; i += blockEvents {
		k := i / blockEvents
		lo = min(lo, x.blockMin[k])
		if x.blockMax[k] > hi {
			hi, at = x.blockMax[k], int(x.blockArg[k])
		}
	}
	for ; i < b; i++ {
		scan(i)
	}
	return lo, hi, at
}

// addSites adds what the events [a, b) changed each site's bytes by to
// bytes[row[site]-1], for the sites with a row (row 0: none).
func (x *index) addSites(a, b int, row []int32, bytes []int64) {
	event := func(i int) {
		if s := x.site[i]; s >= 0 {
			if k := row[s]; k > 0 {
				bytes[k-1] += x.delta[i]
			}
		}
	}
	i := a
	for ; i < b && i%blockEvents != 0; i++ {
		event(i)
	}
	for ; i+blockEvents <= b; i += blockEvents {
		k := i / blockEvents
		for _, e := range x.blockDelta[x.blockEntry[k]:x.blockEntry[k+1]] {
			if r := row[e.site]; r > 0 {
				bytes[r-1] += e.bytes
			}
		}
	}
	for ; i < b; i++ {
		event(i)
	}
}
