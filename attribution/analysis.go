package attribution

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// Options tune Analyze.
type Options struct {
	Filter *Filter // nil: the default filter
	Device int     // -1 for every device
	// AllocSizes keeps every alloc's block size from the analysis's own
	// replay (Device.AllocSizes), for pprof and the allocation views,
	// instead of a replay more when they are asked for: 8 bytes an event.
	AllocSizes bool
	// SeriesPoints, when above 0, downsamples the four numbers during the
	// analysis's replay for Device.Series with that MaxPoints, which then
	// replays nothing (the report's timeline). It implies AllocSizes.
	SeriesPoints int
	// NoModel leaves out the allocator model's verdicts: the peak's
	// fragmentation verdict stays the free blocks' and the OOMs are not
	// run under other settings (Device.OOMSettings is empty), which is a
	// quarter of the analysis on a real capture. For commands that print
	// none of them (diff, peak, leaks, pprof).
	NoModel bool
}

// Analysis is everything memscope finds in one snapshot.
type Analysis struct {
	Snapshot *snapshot.Snapshot
	Filter   *Filter
	Devices  []*Device

	kindCache *kindCache // frame and stack kinds, shared by the devices
	opt       Options
}

// Device is the analysis of one device.
type Device struct {
	Device   int
	Timeline *snapshot.Timeline
	Phases   *Phases
	Peak     *Moment // at the allocated peak
	End      *Moment // after the last event
	OOMs     []*OOM
	// OOMSettings, on a device with an OOM, are what the allocator model
	// says other settings would have done with the same requests under
	// the same capacity.
	OOMSettings []OOMSetting
	Leak        *Leak
	// Frag is fragmentation at the peak, at the end and at each OOM.
	Frag []*Fragmentation
	// Lost estimates what a wrapped ring buffer dropped; nil when it did
	// not wrap or the steps cannot tell. Renderers say it with the
	// replay's snapshot.WarnWrapped warning.
	Lost *Lost
	// Warnings are the replay's.
	Warnings []snapshot.Warning
	// Inference says where an inference run's memory is; nil unless a KV
	// cache was recognised.
	Inference *Inference

	an    *Analysis
	class *classifier
	// sim is the allocator model's run of adviseSettings, made once for
	// the peak's fragmentation verdict, advise and frag --simulate.
	sim simulation
	// reservedBefore holds, for each oom event, the most reserved in any
	// state up to it.
	reservedBefore map[int]int64
	// ranges are the device's annotation ranges (Snapshot.Ranges).
	ranges []snapshot.Range
	// allocSizes and series are kept from the replay when Options ask
	// (AllocSizes, SeriesPoints).
	allocSizes   []int64
	series       *bucketer
	seriesPoints int
	churn        churn
	// origins names the allocations with no Python frame (findOrigins).
	origins *origins
	pools   []poolRange     // end-state segments by address, for poolOf
	small   map[uint64]bool // end-state segment address → small pool, for holes
}

// Analyze replays every device of s once and derives the analyses from it.
func Analyze(s *snapshot.Snapshot, opt Options) *Analysis {
	f := opt.Filter
	if f == nil {
		f, _ = NewFilter("", "")
	}
	a := &Analysis{Snapshot: s, Filter: f, opt: opt}
	for _, d := range s.Devices() {
		if opt.Device >= 0 && d != opt.Device {
			continue
		}
		a.Devices = append(a.Devices, a.analyzeDevice(d))
	}
	return a
}

func (a *Analysis) analyzeDevice(d int) *Device {
	s := a.Snapshot
	var events []snapshot.Event
	if d < len(s.Traces) {
		events = s.Traces[d]
	}
	if a.kindCache == nil {
		a.kindCache = newKindCache(s.Stacks)
	}
	// The stack kinds, the annotation ranges and the phases are found on a
	// second goroutine while Replay rebuilds what was live before the first
	// event; the first call of observe waits for them.
	var (
		k      *kinds
		ranges []snapshot.Range
		phases *Phases
		acc    *phaseAccumulator
	)
	ready := make(chan struct{})
	go func() {
		defer close(ready)
		k = newKindsShared(a.kindCache, events)
		ranges = s.Ranges(d)
		phases = findPhases(s, d, events, ranges, k)
		acc = newPhaseAccumulator(phases, len(events))
	}()
	before := map[int]int64{}
	var most int64
	var sizes []int64
	var series *bucketer
	var observeAlloc func(int, int64)
	if a.opt.AllocSizes || a.opt.SeriesPoints > 0 {
		sizes = make([]int64, len(events))
		observeAlloc = func(i int, size int64) { sizes[i] = size }
	}
	if a.opt.SeriesPoints > 0 {
		series = newBucketer(max(a.opt.SeriesPoints, 16), len(events)+1)
	}
	var t0 int64
	if len(events) > 0 {
		t0 = events[0].TimeUS
	}
	observe := func(i int, n snapshot.Numbers) {
		if i < 0 {
			<-ready
		}
		if series != nil {
			r := row{index: i, n: n}
			if i >= 0 {
				r.timeUS = events[i].TimeUS - t0
			}
			series.observe(&r)
		}
		acc.observe(i, n)
		most = max(most, n.Reserved)
		if i+1 < len(events) && events[i+1].Action == snapshot.ActionOOM {
			before[i+1] = most
		}
	}
	t := snapshot.Replay(s, d, snapshot.ReplayOptions{Observe: observe, ObserveAlloc: observeAlloc, Lifetimes: true})
	<-ready // Replay calls observe at least once; this is for clarity
	acc.finish(t)
	// The state at the peak is replayed on a second goroutine while the
	// classifier is built; Timeline.At then continues from it.
	warm := make(chan struct{})
	go func() {
		defer close(warm)
		t.StateAt(t.PeakAllocated.Index)
	}()
	dev := &Device{Device: d, Timeline: t, Phases: phases, an: a, churn: churn(t.Churn), reservedBefore: before, ranges: ranges,
		allocSizes: sizes, series: series, seriesPoints: a.opt.SeriesPoints}
	dev.class = newClassifier(s, events, ranges, phases, acc.owner, &lifetimes{death: t.Death, preDeath: t.PreDeath}, k)
	dev.class.noHistory = len(events) == 0 || t.OneEntry
	dev.class.splitPreexisting(t.Initial, events)
	dev.class.findKVCache()
	dev.origins = dev.findOrigins()
	<-warm

	dev.Peak = dev.At(t.PeakAllocated.Index, "peak")
	dev.End = dev.At(len(events)-1, "end")
	dev.Frag = append(dev.Frag, dev.fragmentation(dev.Peak), dev.fragmentation(dev.End))
	for k, i := range t.OOMs {
		o := dev.oom(i, k)
		dev.OOMs = append(dev.OOMs, o)
		dev.Frag = append(dev.Frag, o.Frag)
	}
	if len(dev.OOMs) > 0 && !a.opt.NoModel {
		dev.OOMSettings = dev.simulateOOMs()
		dev.simulatedVerdicts()
	}
	if !a.opt.NoModel {
		dev.simulatedPeakVerdict()
	}
	dev.Leak = dev.findLeak()
	dev.Inference = dev.inference()
	dev.Lost = dev.lostHistory()
	dev.Warnings = append([]snapshot.Warning(nil), t.Warnings...)
	return dev
}

// Moment is the attribution of what was live at one moment.
type Moment struct {
	Label  string // peak, end, oom 1, step 3 forward, event 1234
	Index  int    // after this event; -1 before the first
	TimeUS int64
	Numbers
	Live   []snapshot.LiveBlock     // every active block, by address
	Ranges []snapshot.ReservedRange // reserved memory, by address

	// Sites holds every site with allocated (not pending-free) blocks,
	// largest first; Categories the same by category; Streams by stream
	// and pool.
	Sites      []SiteBytes
	Categories [NumCategories]Bytes
	Streams    []StreamBytes
	// Tree is the call tree of the allocated blocks, outermost frame at the
	// root's children.
	Tree *Node
	// Category of each Live block, by index.
	Category []Category
}

// Numbers is the allocator state at a moment (an alias kept short).
type Numbers = snapshot.Numbers

// Bytes is a byte and block count.
type Bytes struct {
	Bytes int64
	Count int
}

// StreamBytes is what one stream and pool hold.
type StreamBytes struct {
	Stream int64
	// Pool is the segment_pool_id of the block's segment: (0,0) the
	// default pool, others CUDA-graph or MemPool pools. Blocks in segments
	// freed before the end of the trace count in the default pool.
	Pool snapshot.PoolID
	Bytes
}

// poolOf returns the pool of the end-state segment holding addr.
func (d *Device) poolOf(addr uint64) snapshot.PoolID {
	if d.pools == nil {
		s := d.an.Snapshot
		for _, i := range s.SegmentsOf(d.Device) {
			seg := &s.Segments[i]
			d.pools = append(d.pools, poolRange{seg.Address, seg.End(), seg.Pool})
		}
		sort.Slice(d.pools, func(i, j int) bool { return d.pools[i].addr < d.pools[j].addr })
	}
	i := sort.Search(len(d.pools), func(i int) bool { return d.pools[i].end > addr })
	if i < len(d.pools) && d.pools[i].addr <= addr {
		return d.pools[i].pool
	}
	return snapshot.PoolID{}
}

type poolRange struct {
	addr, end uint64
	pool      snapshot.PoolID
}

// At attributes what was live after event index.
func (d *Device) At(index int, label string) *Moment {
	t := d.Timeline
	m := &Moment{Label: label, Index: index}
	if index >= 0 && index < len(t.Events) {
		m.TimeUS = t.Events[index].TimeUS
	}
	m.Numbers, m.Live, m.Ranges = t.At(index)
	m.Category = make([]Category, len(m.Live))
	type streamPool struct {
		stream int64
		pool   snapshot.PoolID
	}
	streams := map[streamPool]*StreamBytes{}
	allocated := 0
	for i := range m.Live {
		b := &m.Live[i]
		if b.PendingFree {
			continue
		}
		key := streamPool{b.Stream, d.poolOf(b.Addr)}
		c := d.class.Classify(b)
		if !key.pool.IsDefault() && (poolTakes(c) || c == Parameter && d.class.kinds.stack(b.Stack)&kindLoad == 0) {
			c = GraphPool // a private pool's: held for its graph's replays
		}
		m.Category[i] = c
		m.Categories[c].Bytes += b.Size
		m.Categories[c].Count++
		sb := streams[key]
		if sb == nil {
			sb = &StreamBytes{Stream: key.stream, Pool: key.pool}
			streams[key] = sb
		}
		sb.Bytes.Bytes += b.Size
		sb.Count++
		allocated++
	}
	for _, sb := range streams {
		m.Streams = append(m.Streams, *sb)
	}
	sort.Slice(m.Streams, func(i, j int) bool { return m.Streams[i].Bytes.Bytes > m.Streams[j].Bytes.Bytes })
	// Both skip the blocks pending free, as above: the live blocks are
	// read in place, not copied (64 bytes a block, at every moment).
	m.Sites = topSites(d.an.Snapshot.Stacks, m.Live, d.an.Filter, m.Allocated, allocated, d.BlockSite)
	m.Tree = d.callTree(m.Live)
	return m
}

// poolTakes reports whether a block of category c in a private pool counts
// as the pool's: what its lifetime alone would call an activation, a
// temporary, the input, unknown or before recording is the graph's
// working memory, held for its replays, and so is a "parameter" that only
// its lifetime named (kept from outside any step: a graph's static
// inputs and outputs); weights made by code that builds them, optimizer state,
// gradients and a KV cache (a serving engine's MemPools hold them) keep
// their category.
func poolTakes(c Category) bool {
	switch c {
	case Parameter, OptimizerState, Gradient, KVCache, GatheredParameter:
		return false
	}
	return true
}

// ParseMoment resolves a moment spec: peak, end, oom (the first), oom:N,
// event:N, step:N:PHASE (the peak inside that phase; with micro-batches the
// highest of them), step:N:PHASE:M (the M-th micro-batch's, from 0), or a time offset from
// the first event ("1.5s", "250ms", "1200us").
func (d *Device) ParseMoment(spec string) (*Moment, error) {
	t := d.Timeline
	switch {
	case spec == "" || spec == "peak":
		return d.Peak, nil
	case spec == "end":
		return d.End, nil
	case spec == "oom" || strings.HasPrefix(spec, "oom:"):
		k := 1
		if spec != "oom" {
			n, err := strconv.Atoi(spec[4:])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("moment %q: want oom:N with N ≥ 1", spec)
			}
			k = n
		}
		if k > len(d.OOMs) {
			return nil, fmt.Errorf("moment %q: device %d has %d out-of-memory events", spec, d.Device, len(d.OOMs))
		}
		return d.At(d.OOMs[k-1].Index, fmt.Sprintf("oom %d", k)), nil
	case strings.HasPrefix(spec, "event:"):
		n, err := strconv.Atoi(spec[6:])
		if err != nil || n < -1 || n >= len(t.Events) {
			return nil, fmt.Errorf("moment %q: want event:N with -1 ≤ N < %d", spec, len(t.Events))
		}
		return d.At(n, spec), nil
	case strings.HasPrefix(spec, "step:"):
		parts := strings.Split(spec, ":")
		if len(parts) != 3 && len(parts) != 4 {
			return nil, fmt.Errorf("moment %q: want step:N:PHASE or step:N:PHASE:M (M-th micro-batch from 0), e.g. step:3:forward", spec)
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil {
			return nil, fmt.Errorf("moment %q: step %q is not a number", spec, parts[1])
		}
		micro := -1
		if len(parts) == 4 {
			if micro, err = strconv.Atoi(parts[3]); err != nil || micro < 0 {
				return nil, fmt.Errorf("moment %q: micro-batch %q is not a number ≥ 0", spec, parts[3])
			}
		}
		// A step with gradient accumulation has a forward and a backward
		// per micro-batch: step:N:PHASE is the highest of them, as the
		// phase table shows it; step:N:PHASE:M the M-th.
		best, seen := -1, 0
		for i := range d.Phases.List {
			ph := &d.Phases.List[i]
			if ph.Step != n || ph.Name != parts[2] {
				continue
			}
			switch {
			case micro < 0 && (best < 0 || ph.Peak.Allocated > d.Phases.List[best].Peak.Allocated):
				best = i
			case micro >= 0 && seen == micro:
				best = i
			}
			seen++
		}
		if best >= 0 {
			ph := &d.Phases.List[best]
			label := fmt.Sprintf("step %d %s peak", n, ph.Name)
			if micro >= 0 {
				label = fmt.Sprintf("step %d %s %d peak", n, ph.Name, micro)
			}
			return d.At(ph.PeakIndex, label), nil
		}
		if micro >= 0 && seen > 0 {
			return nil, fmt.Errorf("moment %q: step %d has %d %s phases (micro-batches 0 to %d)", spec, n, seen, parts[2], seen-1)
		}
		return nil, fmt.Errorf("moment %q: no such phase (phases come from %s)", spec, d.Phases.Source)
	}
	us, err := units.ParseDuration(spec)
	if err != nil {
		return nil, fmt.Errorf("moment %q: want peak, end, oom, oom:N, event:N, step:N:PHASE[:M] or a time such as 1.5s", spec)
	}
	if len(t.Events) == 0 {
		return d.At(-1, spec), nil
	}
	at := t.Events[0].TimeUS + us
	i := sort.Search(len(t.Events), func(i int) bool { return t.Events[i].TimeUS > at }) - 1
	return d.At(i, "+"+spec), nil
}

// Node is one frame of a call tree.
type Node struct {
	Frame snapshot.FrameID
	// Label, when not empty, names a node of blocks that have no Python
	// frame of their own, by their site (Device.SiteOfBlock): a child of
	// the root ("parameters (allocated before recording began)", "(no
	// Python frame: C++ or autograd engine)"), or for a backward block,
	// of the forward allocation's innermost frame. Frame is unused then.
	Label    string
	Root     bool
	Bytes    int64
	Count    int
	Children []*Node
	// Folded, on the root, counts the native frames (C++, CPython's
	// ??:0) of the distinct stacks that the tree leaves out.
	Folded int
}

// callTree builds the call tree of the blocks still allocated (pending
// frees are skipped), outermost frame first; blocks with no Python frame
// hang from a node named by their site (Node.Label): at the root, or for a
// block the backward made, under the frames of the forward allocation it
// is the gradient of. So the root's children add up to every allocated
// byte. Blocks sharing a stack and site take one walk down the tree.
// Native frames (C++ and CPython's own, recorded with stacks="all") are
// folded: a Python frame's children are the Python frames it called,
// through whatever native code.
func (d *Device) callTree(blocks []snapshot.LiveBlock) *Node {
	st := d.an.Snapshot.Stacks
	root := &Node{Root: true}
	type sum struct {
		bytes int64
		count int
	}
	type group struct {
		stack snapshot.StackID
		label string // a site's label, for a block BlockSite names
	}
	var groups []group
	sums := map[group]*sum{}
	labels := map[Site]string{}
	for i := range blocks {
		b := &blocks[i]
		if b.PendingFree {
			continue
		}
		g := group{stack: b.Stack}
		if site, ok := d.BlockSite(b); ok {
			if g.label, ok = labels[site]; !ok {
				g.label = site.Label(st)
				labels[site] = g.label
			}
			g.stack, _ = d.BackwardOf(b) // 0 for all but a backward's block
		}
		s := sums[g]
		if s == nil {
			s = &sum{}
			sums[g] = s
			groups = append(groups, g)
		}
		s.bytes += b.Size
		s.count++
	}
	index := map[*Node]map[snapshot.FrameID]*Node{}
	leaves := map[*Node]map[string]*Node{}
	for _, g := range groups {
		s := sums[g]
		n := root
		n.Bytes += s.bytes
		n.Count += s.count
		frames := st.Stack(g.stack)
		for k := len(frames) - 1; k >= 0; k-- {
			if !isPython(st.Frame(frames[k])) {
				root.Folded++
				continue
			}
			kids := index[n]
			if kids == nil {
				kids = map[snapshot.FrameID]*Node{}
				index[n] = kids
			}
			c := kids[frames[k]]
			if c == nil {
				c = &Node{Frame: frames[k]}
				kids[frames[k]] = c
				n.Children = append(n.Children, c)
			}
			c.Bytes += s.bytes
			c.Count += s.count
			n = c
		}
		if g.label == "" && n == root {
			g.label = Site{Kind: SiteNone}.Label(st) // a stack with no Python frame that BlockSite left
		}
		if g.label != "" {
			kids := leaves[n]
			if kids == nil {
				kids = map[string]*Node{}
				leaves[n] = kids
			}
			c := kids[g.label]
			if c == nil {
				c = &Node{Label: g.label}
				kids[g.label] = c
				n.Children = append(n.Children, c)
			}
			c.Bytes += s.bytes
			c.Count += s.count
		}
	}
	sortTree(root)
	return root
}

func sortTree(n *Node) {
	sort.Slice(n.Children, func(i, j int) bool { return n.Children[i].Bytes > n.Children[j].Bytes })
	for _, c := range n.Children {
		sortTree(c)
	}
}
