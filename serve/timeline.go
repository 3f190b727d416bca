package serve

import (
	"container/heap"
	"math/bits"
	"sort"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/snapshot"
)

// Bounds of one timeline answer, whatever the input: the columns, the
// allocations drawn one by one, the sites the rest is merged into, the
// phases shaded.
const (
	maxColumns   = 4000
	maxBands     = 400
	restSites    = 12
	maxShades    = 300
	defaultPx    = 1000
	defaultBands = 300
)

// Timeline is one window of a device's allocated memory, downsampled to
// columns (see index.timeline).
type Timeline struct {
	// Axis is "time_us" (µs after the first event) or "event" (event
	// order, when the trace has no times); From and To the window and Span
	// the whole recording, in those units.
	Axis     string  `json:"axis"`
	From     int64   `json:"from"`
	To       int64   `json:"to"`
	Span     int64   `json:"span"`
	Events   int     `json:"events"`   // events in the window
	Recorded int     `json:"recorded"` // events in the recording
	Columns  int     `json:"columns"`  // columns drawn
	X        []int64 `json:"x"`        // each column's left edge, then the last one's right edge
	// Sample is the event each column is drawn at: the one with the most
	// allocated bytes among the column's events (the last event before it
	// when it has none; -1 for the state before the first event). At is
	// allocated bytes after it, Min and Max the least and most after any
	// event of the column.
	Sample []int   `json:"sample"`
	At     []int64 `json:"at"`
	Min    []int64 `json:"min"`
	Max    []int64 `json:"max"`
	// Bands are the largest allocations live at a sample, each drawn by
	// itself, stacked in allocation order from zero; Rest the other
	// allocated bytes at each sample, by site, stacked above them. At each
	// column the bands live there and Rest add up to At.
	Bands []Band `json:"bands"`
	Rest  []Rest `json:"rest"`
	// BandsAt is the bytes of the bands live at each column: where Rest
	// starts.
	BandsAt []int64 `json:"bands_at"`
	// Sites are the labels Band.Site and Rest.Site index.
	Sites  []string `json:"sites"`
	Phases []Shade  `json:"phases"`
	// Reserved is reserved bytes (the segments the caching allocator
	// holds) after each column's sample event, ReservedMax the most after
	// any event of the column; ReservedUp and ReservedDown count the
	// column's events that reserved more (segment_alloc, segment_map) and
	// that released some (segment_free, segment_unmap). An overview answer
	// has them from the sampled states, and no counts (zeros).
	Reserved     []int64 `json:"reserved"`
	ReservedMax  []int64 `json:"reserved_max"`
	ReservedUp   []int   `json:"reserved_up"`
	ReservedDown []int   `json:"reserved_down"`
	// Candidates counts the allocations live at some sample: Bands are the
	// largest of them.
	Candidates int `json:"candidates"`
	// Partial is true for an overview answered before the index was
	// built: allocated memory from the states the analysis sampled (each
	// bucket's lowest and highest), no bands; ask again with wait=1.
	Partial bool `json:"partial,omitempty"`
}

// Band is one allocation drawn by itself.
type Band struct {
	ID        int64  `json:"id"`    // see /api/alloc
	Start     int    `json:"start"` // alloc event (-1: live before the first event)
	End       int    `json:"end"`   // the event that ended it; the recording's event count when it lives on
	Size      int64  `json:"size"`
	Requested int64  `json:"requested"`
	Category  string `json:"category"`
	Phase     string `json:"phase"`
	Step      int    `json:"step"`
	Site      int    `json:"site"`
	// C0 and C1 are the first and last columns whose sample it is live at;
	// Off holds pairs (column, offset): from that column on, its lower edge
	// is at offset bytes.
	C0  int     `json:"c0"`
	C1  int     `json:"c1"`
	Off []int64 `json:"off"`
}

// Rest is one site's allocated bytes at each column, outside the bands.
type Rest struct {
	Site  int     `json:"site"` // -1: every other site
	Bytes []int64 `json:"bytes"`
}

// Shade is one phase (or run of phases) shaded on the timeline.
type Shade struct {
	Name  string `json:"name"`
	Phase string `json:"phase"` // the phase's name; "" for a run
	Step  int    `json:"step"`
	X0    int64  `json:"x0"`
	X1    int64  `json:"x1"`
}

// span is the recording's extent on the axis.
func (x *axis) span() int64 {
	n := len(x.events)
	switch {
	case n == 0:
		return 0
	case x.timed:
		return x.events[n-1].TimeUS - x.t0
	}
	return int64(n - 1)
}

// xOf is event i's place on the axis.
func (x *axis) xOf(i int) int64 {
	if x.timed {
		return x.events[i].TimeUS - x.t0
	}
	return int64(i)
}

// firstAt returns the first event at or after axis position v.
func (x *axis) firstAt(v int64) int {
	if !x.timed {
		return int(min(max(v, 0), int64(len(x.events))))
	}
	return sort.Search(len(x.events), func(i int) bool { return x.events[i].TimeUS-x.t0 >= v })
}

// allocatedAt is allocated bytes after event i (-1: before the first).
func (x *index) allocatedAt(i int) int64 {
	if i < 0 {
		return x.start0
	}
	return x.allocated[i]
}

// liveAt returns the recs live after event e (-1: before the first
// event), by rec index.
func (x *index) liveAt(e int) []int32 {
	var out []int32
	if len(x.live) == 0 { // no events: the blocks live before them
		for r := 0; r < x.nInit; r++ {
			out = append(out, int32(r))
		}
		return out
	}
	k := min((e+1)/x.checkEvery, len(x.live)-1)
	for _, r := range x.live[k] {
		if x.recs[r].end > int32(e) {
			out = append(out, r)
		}
	}
	for i := k * x.checkEvery; i <= e; i++ {
		if r := x.born[i]; r >= 0 && x.recs[r].end > int32(e) {
			out = append(out, r)
		}
	}
	return out
}

// window is the empty answer for [from, to] in px columns: the axis, the
// columns' X, Events and Columns; bound are the columns' event bounds
// (axis.columns), nil when the recording has no event.
func (ax *axis) window(from, to int64, px int) (tl *Timeline, bound []int) {
	tl = &Timeline{Axis: "event", From: from, To: to, Span: ax.span(), Recorded: len(ax.events),
		X: []int64{}, Sample: []int{}, At: []int64{}, Min: []int64{}, Max: []int64{},
		Bands: []Band{}, Rest: []Rest{}, BandsAt: []int64{}, Sites: []string{}, Phases: []Shade{},
		Reserved: []int64{}, ReservedMax: []int64{}, ReservedUp: []int{}, ReservedDown: []int{}}
	if ax.timed {
		tl.Axis = "time_us"
	}
	if len(ax.events) == 0 {
		return tl, nil
	}
	tl.X, bound = ax.columns(from, to, px)
	tl.Events = bound[len(bound)-1] - bound[0]
	tl.Columns = len(bound) - 1
	return tl, bound
}

// timeline answers one window [from, to] of the axis with px columns and
// at most bands allocations drawn by themselves.
//
// Each column is drawn at its sample event: the allocations live then,
// the largest bands of them one by one (memory_viz's active-memory view:
// stacked in allocation order, so a band's lower edge drops when one
// below it ends) and the rest merged per site. The cost is the window's
// events and allocations plus columns × bands, whatever the recording
// holds outside the window.
func (x *index) timeline(from, to int64, px, bands int) *Timeline {
	tl, bound := x.axis.window(from, to, px)
	if bound == nil {
		return tl
	}
	cols := tl.Columns
	for c := 0; c < cols; c++ {
		a, b := bound[c], bound[c+1]
		if a >= b {
			s := a - 1
			v := x.allocatedAt(s)
			tl.Sample, tl.At, tl.Min, tl.Max = append(tl.Sample, s), append(tl.At, v), append(tl.Min, v), append(tl.Max, v)
			continue
		}
		lo, hi, at := x.minMax(a, b)
		tl.Sample, tl.At, tl.Min, tl.Max = append(tl.Sample, at), append(tl.At, hi), append(tl.Min, lo), append(tl.Max, hi)
	}
	x.draw(tl, bands)
	x.reserved.columns(tl, bound)
	tl.Phases = x.shades(from, to)
	return tl
}

// draw chooses the bands and merges the rest (see timeline).
func (x *index) draw(tl *Timeline, k int) {
	S := tl.Sample
	sMin, sMax := S[0], S[len(S)-1]
	first := x.liveAt(sMin)
	// The recs born after the first sample and up to the last.
	r0 := sort.Search(len(x.recs)-x.nInit, func(i int) bool { return int(x.recs[x.nInit+i].start) > sMin }) + x.nInit
	r1 := sort.Search(len(x.recs)-x.nInit, func(i int) bool { return int(x.recs[x.nInit+i].start) > sMax }) + x.nInit
	h := &recHeap{x: x}
	// Among allocations of one size (a long run repeats its steps' sizes
	// exactly) the bands are spread over the window: each is keyed by the
	// first column it is live at, bit-reversed, so that ties go to columns
	// 0, ½, ¼, ¾, ⅛… of the window in turn rather than to its first steps.
	nbits := uint(0)
	for 1<<nbits < len(S) {
		nbits++
	}
	spread := func(c int) uint32 { return bitsReversed(uint32(c), nbits) }
	push := func(r int32, c int) {
		tl.Candidates++
		it := bandItem{r, spread(c)}
		if h.Len() < k {
			heap.Push(h, it)
		} else if k > 0 && h.less(h.items[0], it) {
			h.items[0] = it
			heap.Fix(h, 0)
		}
	}
	for _, r := range first {
		push(r, 0)
	}
	c := 0
	starts, ends := x.starts[:r1], x.ends[:r1]
	for r := r0; r < r1; r++ {
		for c < len(S) && S[c] < int(starts[r]) {
			c++
		}
		if c < len(S) && S[c] < int(ends[r]) {
			push(int32(r), c)
		}
	}
	chosen := make([]int32, len(h.items))
	for i, it := range h.items {
		chosen[i] = it.r
	}
	sort.Slice(chosen, func(i, j int) bool { return chosen[i] < chosen[j] })
	x.gen++
	if x.mark == nil {
		x.mark = make([]uint32, len(x.recs))
	}
	for _, r := range chosen {
		x.mark[r] = x.gen
	}
	siteRef := map[int32]int{} // index site → Timeline.Sites
	ref := func(s int32) int {
		if k, ok := siteRef[s]; ok {
			return k
		}
		siteRef[s] = len(tl.Sites)
		tl.Sites = append(tl.Sites, x.siteLabels[s])
		return siteRef[s]
	}

	// The bands, stacked at each column in allocation order.
	last := make([]int64, len(chosen))
	bandsAt := make([]int64, len(S))
	for i, r := range chosen {
		rc := &x.recs[r]
		tl.Bands = append(tl.Bands, x.band(int(r), ref(rc.site)))
		last[i] = -1
	}
	for c, s := range S {
		var off int64
		for i, r := range chosen {
			rc := &x.recs[r]
			if int(rc.start) > s || int(rc.end) <= s {
				continue
			}
			b := &tl.Bands[i]
			if last[i] < 0 {
				b.C0 = c
			}
			b.C1 = c
			if off != last[i] {
				b.Off = append(b.Off, int64(c), off)
				last[i] = off
			}
			off += rc.size
		}
		bandsAt[c] = off
	}
	tl.BandsAt = bandsAt

	// The rest, by site: the sites holding most of it at the window's
	// highest column, the others together.
	peak := 0
	for c := range S {
		if tl.At[c] > tl.At[peak] {
			peak = c
		}
	}
	bytes := make([]int64, len(x.sites))
	// The sites at the highest column, from the live recs then.
	for _, r := range x.liveAt(S[peak]) {
		if x.mark[r] != x.gen {
			bytes[x.recs[r].site] += x.recs[r].size
		}
	}
	var top []int32
	for s, v := range bytes {
		if v > 0 {
			top = append(top, int32(s))
		}
	}
	sort.Slice(top, func(i, j int) bool {
		if bytes[top[i]] != bytes[top[j]] {
			return bytes[top[i]] > bytes[top[j]]
		}
		return top[i] < top[j]
	})
	top = top[:min(len(top), restSites)]
	row := make([]int32, len(x.sites)) // site → its row + 1; 0 for other
	rows := make([]Rest, len(top)+1)
	for i, s := range top {
		rows[i] = Rest{Site: ref(s), Bytes: make([]int64, len(S))}
		row[s] = int32(i + 1)
	}
	rows[len(top)] = Rest{Site: -1, Bytes: make([]int64, len(S))}
	// Every allocation of the top sites, bands too, swept over the
	// window's events in order; then each band's bytes come off its site's
	// row, and other is what is left of allocated.
	have := make([]int64, len(top))
	for _, r := range first {
		if k := row[x.recs[r].site]; k > 0 {
			have[k-1] += x.recs[r].size
		}
	}
	cur := sMin
	for c, s := range S {
		if s > cur {
			x.addSites(cur+1, s+1, row, have)
		}
		cur = max(cur, s)
		for k := range top {
			rows[k].Bytes[c] = have[k]
		}
	}
	for i, r := range chosen {
		k := row[x.recs[r].site]
		if k == 0 {
			continue
		}
		b := &tl.Bands[i]
		for c := b.C0; c <= b.C1 && len(b.Off) > 0; c++ {
			rows[k-1].Bytes[c] -= x.recs[r].size
		}
	}
	for c := range S {
		other := tl.At[c] - bandsAt[c]
		for k := range top {
			other -= rows[k].Bytes[c]
		}
		rows[len(top)].Bytes[c] = other
	}
	tl.Rest = rows
}

// band describes rec r for the timeline and the tooltip.
func (x *index) band(r, site int) Band {
	rc := &x.recs[r]
	b := x.block(r)
	phase, step := "", -1
	if rc.start >= 0 {
		phase, step = x.d.PhaseOf(int(rc.start))
	}
	return Band{ID: x.id(r), Start: int(rc.start), End: int(rc.end), Size: rc.size, Requested: b.Requested,
		Category: x.d.CategoryOf(&b).String(), Phase: phase, Step: step, Site: site, Off: []int64{}}
}

// block is rec r as the live block attribution classifies.
func (x *index) block(r int) snapshot.LiveBlock {
	rc := &x.recs[r]
	if r < x.nInit {
		return x.d.Timeline.Initial[rc.live]
	}
	ev := &x.events[rc.start]
	return snapshot.LiveBlock{Addr: ev.Addr, Size: rc.size, Requested: ev.Size, Stream: ev.Stream, Stack: ev.Stack,
		AllocIndex: int(rc.start), AllocTimeUS: ev.TimeUS}
}

// columns cuts [from, to] into at most px columns: their left edges on
// the axis, then the last one's right edge, and their event ranges
// (column c holds events [bound[c], bound[c+1])). In event order there
// are no more columns than events.
func (x *axis) columns(from, to int64, px int) (edges []int64, bound []int) {
	e0, e1 := x.firstAt(from), x.firstAt(to+1) // events in [from, to]
	if x.timed {
		bound = make([]int, px+1)
		w := float64(to-from+1) / float64(px)
		for c := 0; c <= px; c++ {
			edges = append(edges, from+int64(float64(c)*w))
			bound[c] = x.firstAt(edges[c])
		}
		bound[px] = e1
		return edges, bound
	}
	cols := min(px, max(e1-e0, 1))
	bound = make([]int, cols+1)
	for c := 0; c <= cols; c++ {
		bound[c] = e0 + int(int64(c)*int64(e1-e0)/int64(cols))
		edges = append(edges, int64(bound[c]))
	}
	return edges, bound
}

// OverviewPoints is how many states an analysis for the server should
// sample (attribution.Options.SeriesPoints): the timeline's first paint
// draws them before the server has indexed the allocations.
const OverviewPoints = 8192

// overview is the timeline of [from, to] in px columns drawn from the
// states the analysis sampled (attribution's Overview): a column's Min and
// Max are the least and most allocated among its sampled states, At the
// most; a column with none carries the last sampled state before it. No
// bands, no rest. It needs no
// index, so the page paints while the index is built.
func overview(d *attribution.Device, ax *axis, pts []attribution.SeriesPoint, from, to int64, px int) *Timeline {
	// The columns of index.timeline, so that the overview and the full
	// answer draw the same ones.
	tl, bound := ax.window(from, to, px)
	tl.Partial = true
	if bound == nil {
		return tl
	}
	cols := tl.Columns
	seen := make([]bool, cols)
	tl.Sample, tl.At, tl.Min, tl.Max = make([]int, cols), make([]int64, cols), make([]int64, cols), make([]int64, cols)
	tl.Reserved, tl.ReservedMax = make([]int64, cols), make([]int64, cols)
	tl.ReservedUp, tl.ReservedDown = make([]int, cols), make([]int, cols)
	var before, reservedBefore int64 // allocated and reserved at the last sampled state left of the column
	sample := -1
	last, lastReserved := make([]int64, cols), make([]int64, cols) // each column's last sampled state
	for _, p := range pts {
		if p.Index < 0 || ax.xOf(p.Index) < from { // the state before the first event, or before the window
			before, reservedBefore, sample = p.Allocated, p.Reserved, p.Index
			continue
		}
		x := ax.xOf(p.Index)
		if x > to {
			break
		}
		c := min(max(sort.Search(len(tl.X), func(k int) bool { return tl.X[k] > x })-1, 0), cols-1)
		if !seen[c] || p.Allocated > tl.Max[c] {
			tl.Max[c], tl.At[c], tl.Sample[c], tl.Reserved[c] = p.Allocated, p.Allocated, p.Index, p.Reserved
		}
		if !seen[c] || p.Allocated < tl.Min[c] {
			tl.Min[c] = p.Allocated
		}
		if !seen[c] || p.Reserved > tl.ReservedMax[c] {
			tl.ReservedMax[c] = p.Reserved
		}
		seen[c], last[c], lastReserved[c] = true, p.Allocated, p.Reserved
	}
	for c := range cols {
		if !seen[c] {
			tl.Min[c], tl.Max[c], tl.At[c], tl.Sample[c] = before, before, before, sample
			tl.Reserved[c], tl.ReservedMax[c] = reservedBefore, reservedBefore
			continue
		}
		before, reservedBefore, sample = last[c], lastReserved[c], tl.Sample[c]
	}
	tl.BandsAt = make([]int64, cols)
	tl.Phases = (&index{d: d, axis: *ax}).shades(from, to)
	return tl
}

// shades lists the phases overlapping [from, to] as attribution's one rule
// shades them (Phases.Shades: each phase, or per step, or runs of steps
// past maxShades), on the axis.
func (x *index) shades(from, to int64) []Shade {
	p := x.d.Phases
	on := func(ph *attribution.Phase) (x0, x1 int64) {
		if x.timed {
			return ph.StartUS - x.t0, ph.EndUS - x.t0
		}
		return int64(ph.First), int64(ph.Last)
	}
	var in []int
	for i := range p.List {
		ph := &p.List[i]
		if x0, x1 := on(ph); ph.Last >= ph.First && x1 >= from && x0 <= to {
			in = append(in, i)
		}
	}
	out := []Shade{}
	for _, s := range p.Shades(in, maxShades) {
		x0, _ := on(&p.List[s.First])
		_, x1 := on(&p.List[s.Last])
		out = append(out, Shade{Name: s.Name, Phase: s.Phase, Step: s.Step, X0: x0, X1: x1})
	}
	return out
}

// recHeap is a min-heap of candidate bands, the smallest on top (then the
// one of the latest spread key, then the latest rec): what a larger
// candidate replaces.
type recHeap struct {
	x     *index
	items []bandItem
}

// bandItem is a candidate band: rec r, and the spread key of the first
// column it is live at (see draw).
type bandItem struct {
	r      int32
	spread uint32
}

func (h *recHeap) less(a, b bandItem) bool {
	sa, sb := h.x.recs[a.r].size, h.x.recs[b.r].size
	if sa != sb {
		return sa < sb
	}
	if a.spread != b.spread {
		return a.spread > b.spread
	}
	return a.r > b.r
}
func (h *recHeap) Len() int           { return len(h.items) }
func (h *recHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *recHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *recHeap) Push(v any)         { h.items = append(h.items, v.(bandItem)) }
func (h *recHeap) Pop() any {
	v := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return v
}

// bitsReversed is the low n bits of v in reverse order.
func bitsReversed(v uint32, n uint) uint32 {
	if n == 0 {
		return 0
	}
	return bits.Reverse32(v) >> (32 - n)
}
