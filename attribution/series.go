package attribution

import (
	"slices"
	"sort"

	"github.com/memscope/memscope/snapshot"
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
	d.splitPoints(s, top, sizes)
	return s
}

// splitPoints fills in each point's categories and sites. A block counts
// at the points from its alloc up to, not including, the event that ended
// it (Timeline.Death and PreDeath, the replay engine's own account of
// allocated bytes): each block adds its size where it starts counting and
// takes it off where it stops, and one sum in event order gives every
// point. Nothing is kept by address.
func (d *Device) splitPoints(s *Series, top int, sizes []int64) {
	t := d.Timeline
	k := len(s.Points)
	if k == 0 {
		return
	}
	if t.Death == nil {
		panic("invariant violation: a device's timeline without lifetimes")
	}
	const nc = int(NumCategories)
	ns := top + 1
	cats := make([]int64, (k+1)*nc)
	sites := make([]int64, (k+1)*ns)
	// from returns the first point at or after event e (k: none).
	from := func(e int) int {
		return sort.Search(k, func(j int) bool { return s.Points[j].Index >= e })
	}
	add := func(j0, j1 int, cat Category, site int, size int64) {
		if j0 >= j1 {
			return
		}
		cats[j0*nc+int(cat)] += size
		cats[j1*nc+int(cat)] -= size
		sites[j0*ns+site] += size
		sites[j1*ns+site] -= size
	}
	sw := newSiteSeries(d, s.Sites)
	for i := range t.Initial {
		b := &t.Initial[i]
		if b.PendingFree {
			continue
		}
		j1 := k
		if death, ok := t.PreDeath[b.Addr]; ok {
			j1 = from(int(death))
		}
		add(0, j1, d.class.Classify(b), sw.siteOf(b), b.Size)
	}
	last := s.Points[k-1].Index
	j0 := 0
	for i := 0; i <= last && i < len(t.Events); i++ {
		ev := &t.Events[i]
		if ev.Action != snapshot.ActionAlloc || sizes[i] == 0 {
			continue // the engine counted nothing for it
		}
		for s.Points[j0].Index < i {
			j0++
		}
		j1 := k
		if death := t.Death[i]; death >= 0 {
			j1 = from(int(death))
		}
		lb := snapshot.LiveBlock{Addr: ev.Addr, Size: sizes[i], Requested: ev.Size, Stream: ev.Stream,
			Stack: ev.Stack, AllocIndex: i, AllocTimeUS: ev.TimeUS}
		add(j0, j1, d.class.Classify(&lb), sw.siteOf(&lb), sizes[i])
	}
	var runCats [NumCategories]int64
	runSites := make([]int64, ns)
	for j := range s.Points {
		p := &s.Points[j]
		for c := range nc {
			runCats[c] += cats[j*nc+c]
		}
		for x := range ns {
			runSites[x] += sites[j*ns+x]
		}
		p.Categories = runCats
		copy(p.Sites, runSites)
	}
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

// siteSeries maps a block to its series: one of the peak's top sites, or
// other.
type siteSeries struct {
	d *Device
	// siteIndex maps a site to its series; other sites map to other.
	siteIndex map[Site]int
	byStack   map[snapshot.StackID]int
	other     int
}

func newSiteSeries(d *Device, sites []SiteBytes) *siteSeries {
	sw := &siteSeries{d: d, siteIndex: map[Site]int{}, byStack: map[snapshot.StackID]int{}, other: len(sites)}
	for i, s := range sites {
		sw.siteIndex[s.Site] = i
	}
	return sw
}

// siteOf returns the series of a block's site, as the moment's sites name
// them (Device.SiteOfBlock); sites are cached by stack for the stacks
// whose blocks share one.
func (sw *siteSeries) siteOf(b *snapshot.LiveBlock) int {
	if site, ok := sw.d.BlockSite(b); ok {
		if k, ok := sw.siteIndex[site]; ok {
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
