package attribution

import (
	"github.com/memscope/memscope/snapshot"
	"slices"
)

// maxSeriesSites bounds SeriesOptions.TopSites: each point carries one
// number per site series.
const maxSeriesSites = 15

// SeriesOptions bound a Series.
type SeriesOptions struct {
	// MaxPoints is the most points kept (at least 16). Every bucket of
	// events keeps up to ten: its first and last state and, for each of the
	// four numbers, the state where it is lowest and highest.
	MaxPoints int
	// TopSites is how many of the peak's top sites get a series of their
	// own (at most 15); the rest add up in one "other sites" series.
	TopSites int
}

// Series is a device's memory over its recorded events, downsampled so that
// every peak and valley survives: the events are cut into buckets of equal
// count and each bucket keeps the states where any of requested, allocated,
// active and reserved is at its minimum or maximum, plus its first and last
// state. Each point is the exact state after its event, split by category
// and by site too.
type Series struct {
	Points []SeriesPoint
	// Sites are the peak's top sites that have a series of their own, in
	// the order of SeriesPoint.Sites; the point's last entry is every other
	// site.
	Sites []SiteBytes
	// Events is the number of recorded events; EventsPerBucket how many
	// each bucket covered (1: nothing was dropped).
	Events, EventsPerBucket int
}

// SeriesPoint is the state after one event.
type SeriesPoint struct {
	Index  int   // event index; -1 before the first event
	TimeUS int64 // µs after the first event
	Numbers
	// Categories are the allocated bytes by category; they sum to Allocated.
	Categories [NumCategories]int64
	// Sites are the allocated bytes by Series.Sites, "other sites" last;
	// they sum to Allocated.
	Sites []int64
}

// Series samples the device's timeline (see Series). The points are chosen
// from the four numbers: from the analysis's own replay when
// Options.SeriesPoints was opt.MaxPoints, else from a replay more; their
// categories and sites then come from one pass over the events, which
// needs only each alloc's block size.
func (d *Device) Series(opt SeriesOptions) *Series {
	t := d.Timeline
	top := min(max(opt.TopSites, 0), maxSeriesSites, len(d.Peak.Sites))
	s := &Series{Sites: append([]SiteBytes(nil), d.Peak.Sites[:top]...), Events: len(t.Events)}
	b, sizes := d.series, d.allocSizes
	if b == nil || d.seriesPoints != opt.MaxPoints {
		b = newBucketer(max(opt.MaxPoints, 16), len(t.Events)+1)
		var t0 int64
		if len(t.Events) > 0 {
			t0 = t.Events[0].TimeUS
		}
		if sizes == nil {
			sizes = make([]int64, len(t.Events))
		}
		snapshot.Replay(d.an.Snapshot, d.Device, snapshot.ReplayOptions{
			ObserveAlloc: func(i int, s int64) { sizes[i] = s },
			Observe: func(i int, n Numbers) {
				r := row{index: i, n: n}
				if i >= 0 {
					r.timeUS = t.Events[i].TimeUS - t0
				}
				b.observe(&r)
			}})
	} else {
		b = b.clone()
	}
	s.Points, s.EventsPerBucket = b.points(top + 1)
	// The categories and sites at each point (in event order).
	sw := newSweep(d, s.Sites)
	j := 0
	fill := func(i int) {
		for ; j < len(s.Points) && s.Points[j].Index == i; j++ {
			p := &s.Points[j]
			p.Categories = sw.cats
			copy(p.Sites, sw.sites[:top+1])
		}
	}
	fill(-1)
	for i := range t.Events {
		if j == len(s.Points) {
			break
		}
		sw.apply(i, &t.Events[i], sizes[i])
		fill(i)
	}
	return s
}

// Overview returns the states the analysis's own replay sampled
// (Options.SeriesPoints): each bucket's first, last, lowest and highest of
// the four numbers, in event order, with no categories or sites, so it
// costs nothing more; nil when the analysis sampled none.
func (d *Device) Overview() []SeriesPoint {
	if d.series == nil {
		return nil
	}
	pts, _ := d.series.clone().points(0)
	slices.SortStableFunc(pts, func(a, b SeriesPoint) int { return a.Index - b.Index })
	return pts
}

// sweep keeps the allocated bytes by category and by site while the events
// are applied, following the replay engine's rules: a block stops counting
// at its first free_requested, or at free_completed when no request came.
type sweep struct {
	d     *Device
	live  map[uint64]sweepBlock
	cats  [NumCategories]int64
	sites [maxSeriesSites + 1]int64
	// siteIndex maps a site to its series; other sites map to other.
	siteIndex map[Site]int
	byStack   map[snapshot.StackID]int
	other     int
}

type sweepBlock struct {
	size    int64
	cat     Category
	site    int
	pending bool
}

func newSweep(d *Device, sites []SiteBytes) *sweep {
	sw := &sweep{d: d, live: map[uint64]sweepBlock{}, siteIndex: map[Site]int{},
		byStack: map[snapshot.StackID]int{}, other: len(sites)}
	for i, s := range sites {
		sw.siteIndex[s.Site] = i
	}
	for i := range d.Timeline.Initial {
		b := &d.Timeline.Initial[i]
		sw.add(b.Addr, sweepBlock{size: b.Size, cat: d.class.Classify(b), site: sw.siteOf(b), pending: b.PendingFree})
	}
	return sw
}

// siteOf returns the series of a block's site, as TopSites names sites.
func (sw *sweep) siteOf(b *snapshot.LiveBlock) int {
	if b.AllocIndex < 0 && b.Stack == 0 {
		if k, ok := sw.siteIndex[sw.d.beforeSite()]; ok {
			return k
		}
		return sw.other
	}
	if k, ok := sw.byStack[b.Stack]; ok {
		return k
	}
	k, ok := sw.siteIndex[sw.d.an.Filter.SiteOf(sw.d.an.Snapshot.Stacks, b.Stack)]
	if !ok {
		k = sw.other
	}
	sw.byStack[b.Stack] = k
	return k
}

func (sw *sweep) add(addr uint64, b sweepBlock) {
	sw.live[addr] = b
	if !b.pending {
		sw.count(b, 1)
	}
}

func (sw *sweep) count(b sweepBlock, sign int64) {
	sw.cats[b.cat] += sign * b.size
	sw.sites[b.site] += sign * b.size
}

// apply takes event i; size is its block size when it is an alloc.
func (sw *sweep) apply(i int, ev *snapshot.Event, size int64) {
	switch ev.Action {
	case snapshot.ActionAlloc:
		if old, ok := sw.live[ev.Addr]; ok && !old.pending {
			sw.count(old, -1) // the engine drops a block allocated over
		}
		lb := snapshot.LiveBlock{Addr: ev.Addr, Size: size, Requested: ev.Size, Stream: ev.Stream,
			Stack: ev.Stack, AllocIndex: i, AllocTimeUS: ev.TimeUS}
		sw.add(ev.Addr, sweepBlock{size: size, cat: sw.d.class.Classify(&lb), site: sw.siteOf(&lb)})
	case snapshot.ActionFreeRequested:
		if b, ok := sw.live[ev.Addr]; ok && !b.pending {
			sw.count(b, -1)
			b.pending = true
			sw.live[ev.Addr] = b
		}
	case snapshot.ActionFreeCompleted:
		if b, ok := sw.live[ev.Addr]; ok {
			if !b.pending {
				sw.count(b, -1)
			}
			delete(sw.live, ev.Addr)
		}
	}
}

// row is one state of the replay: the four numbers after event index.
type row struct {
	index  int
	timeUS int64
	n      Numbers
}

// quantity k of the four numbers: requested, allocated, active, reserved.
func (r *row) quantity(k int) int64 {
	switch k {
	case 0:
		return r.n.Requested
	case 1:
		return r.n.Allocated
	case 2:
		return r.n.Active
	}
	return r.n.Reserved
}

// bucket holds the candidate rows of a run of events: first, last, and the
// lowest and highest of each quantity (the earliest on ties).
type bucket struct {
	set         bool
	first, last row
	lo, hi      [4]row
}

func (b *bucket) observe(r *row) {
	if !b.set {
		b.set, b.first, b.last = true, *r, *r
		for k := range 4 {
			b.lo[k], b.hi[k] = *r, *r
		}
		return
	}
	b.last = *r
	for k := range 4 {
		v := r.quantity(k)
		if v < b.lo[k].quantity(k) {
			b.lo[k] = *r
		}
		if v > b.hi[k].quantity(k) {
			b.hi[k] = *r
		}
	}
}

// merge folds the next bucket c into b: the extremes of the union are among
// the extremes of the parts.
func (b *bucket) merge(c *bucket) {
	if !c.set {
		return
	}
	if !b.set {
		*b = *c
		return
	}
	b.last = c.last
	for k := range 4 {
		if c.lo[k].quantity(k) < b.lo[k].quantity(k) {
			b.lo[k] = c.lo[k]
		}
		if c.hi[k].quantity(k) > b.hi[k].quantity(k) {
			b.hi[k] = c.hi[k]
		}
	}
}

// rows returns the bucket's distinct candidate rows in event order.
func (b *bucket) rows() []*row {
	if !b.set {
		return nil
	}
	cands := []*row{&b.first, &b.last}
	for k := range 4 {
		cands = append(cands, &b.lo[k], &b.hi[k])
	}
	var out []*row
	for _, r := range cands {
		dup := false
		for _, o := range out {
			if o.index == r.index {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, r)
		}
	}
	for i := 1; i < len(out); i++ { // insertion sort: at most ten rows
		for j := i; j > 0 && out[j].index < out[j-1].index; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// bucketer cuts n states into buckets of equal count, starting with as many
// buckets as points allowed, and halves the buckets until the kept rows fit.
type bucketer struct {
	max     int
	per     int // states per bucket
	buckets []bucket
	seen    int
}

func newBucketer(maxPoints, n int) *bucketer {
	nb := min(maxPoints, max(n, 1))
	per := (n + nb - 1) / nb
	return &bucketer{max: maxPoints, per: max(per, 1), buckets: make([]bucket, nb)}
}

// clone returns a copy that points may change without changing b.
func (b *bucketer) clone() *bucketer {
	c := *b
	c.buckets = append([]bucket(nil), b.buckets...)
	return &c
}

func (b *bucketer) observe(r *row) {
	b.buckets[min(b.seen/b.per, len(b.buckets)-1)].observe(r)
	b.seen++
}

// points returns the kept rows as points with nSites site numbers, and the
// states per bucket of the final cut.
func (b *bucketer) points(nSites int) ([]SeriesPoint, int) {
	for {
		total := 0
		for i := range b.buckets {
			total += len(b.buckets[i].rows())
		}
		if total <= b.max || len(b.buckets) == 1 {
			break
		}
		half := make([]bucket, (len(b.buckets)+1)/2)
		for i := range b.buckets {
			half[i/2].merge(&b.buckets[i])
		}
		b.buckets, b.per = half, b.per*2
	}
	out := []SeriesPoint{}
	for i := range b.buckets {
		for _, r := range b.buckets[i].rows() {
			out = append(out, SeriesPoint{Index: r.index, TimeUS: r.timeUS, Numbers: r.n, Sites: make([]int64, nSites)})
		}
	}
	return out, b.per
}
