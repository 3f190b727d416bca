package report

import (
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/textsafe"
	"github.com/memscope/memscope/snapshot"
)

// writePProf writes a pprof profile (gzipped protobuf) of one device: the blocks
// live at moment m as inuse_space/inuse_objects, and every allocation of
// the recorded window (allocs, d.EachAllocation) as
// alloc_space/alloc_objects. Each Python frame is a function with its file
// and line, leaf first; frames the analysis's filter does not count as the
// user's (torch, site-packages, the interpreter, C++ by default) are left
// out, so the leaf is the site attribution names. Every sample has a
// location, so that 'pprof -top' accounts for every byte: a stack with no
// such frame has its innermost Python frame, and a block with no Python
// frame at all one synthetic function named as summary and peak name its
// site (see syntheticSite): "(allocated before recording began)", "(no
// Python frame: autograd engine, backward)" and so on. Labels:
// category, phase, and op when known; numeric stream and bytes; the step
// or run of steps (see maxStepLabels).
//
// pprof keeps one sample per distinct stack and label set, so the profile
// grows with stacks × categories × phases × block sizes × step labels, not
// with the allocations: millions of allocations fold into the samples of
// their stacks.
func writePProf(w io.Writer, an *attribution.Analysis, d *attribution.Device, m *attribution.Moment, allocs iter.Seq[attribution.Allocation]) error {
	b := newPProfBuilder(an, newStepGroups(d.Phases))
	for i := range m.Live {
		lb := &m.Live[i]
		if lb.PendingFree {
			continue
		}
		phase, step, stack := "", -1, stackOf(lb.Stack)
		named, isNamed := b.namedSite(d, lb)
		switch {
		case lb.AllocIndex >= 0:
			phase, step = d.PhaseOf(lb.AllocIndex)
		case len(d.Timeline.Events) == 0 || d.Timeline.OneEntry:
			phase = "no history recorded"
			if lb.Stack == 0 {
				stack = siteOnly(siteUnrecorded)
			}
		default:
			phase = "before recording"
			if lb.Stack == 0 {
				stack = siteOnly(siteBefore)
			}
		}
		if isNamed {
			stack = named
		}
		b.add(sampleKey{stack: stack, category: m.Category[i], phase: b.phase(phase), step: int32(b.steps.group(step)),
			stream: lb.Stream, bytes: lb.Size}, [4]int64{lb.Size, 1, 0, 0})
	}
	for a := range allocs {
		stack := stackOf(a.Stack)
		if named, ok := b.namedSite(d, &snapshot.LiveBlock{Stack: a.Stack, AllocIndex: a.Index}); ok {
			stack = named
		}
		b.add(sampleKey{stack: stack, category: a.Category, phase: b.phase(a.Phase), step: int32(b.steps.group(a.Step)),
			stream: a.Stream, bytes: a.Size}, [4]int64{0, 0, a.Size, 1})
	}
	t := d.Timeline
	if n := len(t.Events); n > 0 {
		b.timeNanos = t.Events[0].TimeUS * 1000
		b.durationNanos = (t.Events[n-1].TimeUS - t.Events[0].TimeUS) * 1000
	}
	allocWords := "every allocation recorded"
	if len(t.Events) == 0 || t.OneEntry {
		allocWords = "empty, no allocation was recorded"
	}
	b.comments = []string{
		fmt.Sprintf("memscope: %s, device %d", an.Snapshot.Source, d.Device),
		fmt.Sprintf("inuse_*: blocks live at %s (%s); alloc_*: %s", m.Label, eventWhere(t, m.Index), allocWords),
	}
	return b.write(w)
}

// sampleStack is where a sample is charged: a recorded stack, or, for a
// block with none, the kind of site that stands for it (SiteBefore,
// SiteUnrecorded), or with siteNamed the site the analysis named it by
// (attribution.Device.BlockSite): a synthetic leaf of that label, under
// stack id when it is not 0 (the forward allocation a backward block is
// the gradient of).
type sampleStack struct {
	id   snapshot.StackID
	site siteKind
	name int32 // with siteNamed: the label's index in pprofBuilder.names
}

// siteKind is a site kind of attribution's that a sample's stack can
// stand for; siteStack is a recorded stack.
type siteKind uint8

const (
	siteStack siteKind = iota
	siteBefore
	siteUnrecorded
	siteNamed
)

func (k siteKind) String() string {
	switch k {
	case siteBefore:
		return attribution.SiteBefore
	case siteUnrecorded:
		return attribution.SiteUnrecorded
	}
	return ""
}

func stackOf(id snapshot.StackID) sampleStack { return sampleStack{id: id} }

func siteOnly(kind siteKind) sampleStack { return sampleStack{site: kind} }

// namedSite returns where a block whose site its stack does not decide is
// charged when the analysis named it (attribution.Site.Named): the
// synthetic function of its label ("parameters (allocated before
// recording began)"); for a backward block, the label less its caller
// ("…:389 __call__ (backward, autograd)") under the forward allocation's
// frames, where they hold one that counts. ok is false for the other
// blocks.
func (b *pprofBuilder) namedSite(d *attribution.Device, lb *snapshot.LiveBlock) (sampleStack, bool) {
	site, ok := d.BlockSite(lb)
	if !ok || !site.Named() {
		return sampleStack{}, false
	}
	fwd, _ := d.BackwardOf(lb)
	// The label is made once per site (a frame's label runs the path
	// rules, regular expressions): a large recording names millions of
	// blocks by a few hundred sites.
	k := namedKey{site, fwd != 0}
	e, ok := b.named[k]
	if !ok {
		st := b.an.Snapshot.Stacks
		// A forward stack with no frame that counts: the label says all it has.
		e.keepFwd = fwd != 0 && b.an.Sites().Counts(site.Frame)
		label := site.Label(st)
		if e.keepFwd {
			label = attribution.SiteKey(st, site) // the caller is among the frames above
		}
		i, seen := b.nameIDs[label]
		if !seen {
			i = int32(len(b.names))
			b.nameIDs[label] = i
			b.names = append(b.names, label)
		}
		e.name = i
		b.named[k] = e
	}
	if !e.keepFwd {
		fwd = 0
	}
	return sampleStack{id: fwd, site: siteNamed, name: e.name}, true
}

// namedKey is a named site and whether its block was matched to a
// forward allocation; namedSite caches its label's name by it.
type namedKey struct {
	site   attribution.Site
	hasFwd bool
}

// namedEntry is namedSite's cache of one namedKey.
type namedEntry struct {
	name    int32
	keepFwd bool // the forward stack has a frame that counts: it goes above the label
}

// sampleKey is what makes a sample: numbers only, so the millions of
// allocations of a large recording hash no string.
type sampleKey struct {
	stack    sampleStack
	category attribution.Category
	phase    int32 // pprofBuilder.phases
	step     int32 // a step group (stepGroups.group); -1 outside steps
	stream   int64
	bytes    int64
}

// maxStepLabels is how many step labels a profile carries at most. With
// as many steps or fewer, each sample carries the step it was allocated in
// ("step=0"; -tagfocus 'step=^3$' picks one). A run of thousands of steps
// would multiply the samples of every stack by its steps (a label per step
// makes a sample per step), to a profile larger than the snapshot; there,
// the first step, where optimizer state is allocated, keeps its own label
// and the others are grouped into maxStepLabels-1 runs of consecutive
// steps, labelled with the range ("step=1-447"). One step's live blocks
// are what --at step:N:PHASE profiles. The label is a string: pprof drops
// a numeric label whose value is 0, which would lose step 0.
const maxStepLabels = 32

// stepGroups maps step numbers to at most maxStepLabels groups.
type stepGroups struct {
	perStep bool        // every step its own numeric label
	index   map[int]int // step number → group, when grouped
	labels  []string    // per group: "first-last", or "step" for one
}

func newStepGroups(ph *attribution.Phases) *stepGroups {
	g := &stepGroups{perStep: true}
	if ph == nil {
		return g
	}
	var nums []int
	for _, st := range ph.Steps {
		nums = append(nums, st.Step)
	}
	slices.Sort(nums)
	nums = slices.Compact(nums)
	n := len(nums)
	if n <= maxStepLabels {
		return g
	}
	g.perStep = false
	g.index = make(map[int]int, n)
	g.labels = make([]string, maxStepLabels)
	first := make([]int, maxStepLabels)
	prev := -1
	for i, num := range nums {
		grp := 0
		if i > 0 {
			grp = 1 + (i-1)*(maxStepLabels-1)/(n-1)
		}
		if grp != prev {
			first[grp], prev = num, grp
		}
		g.index[num] = grp
		g.labels[grp] = strconv.Itoa(num)
		if first[grp] != num {
			g.labels[grp] = fmt.Sprintf("%d-%d", first[grp], num)
		}
	}
	return g
}

// group returns the group of step (the step itself when every step has
// its own label); -1 for none.
func (g *stepGroups) group(step int) int {
	if step < 0 || g.perStep {
		return step
	}
	if grp, ok := g.index[step]; ok {
		return grp
	}
	return -1
}

// pprofBuilder gathers a profile's samples, locations and functions as
// profile.proto numbers them (IDs from 1, strings by their index in one
// table), for write to encode without pprof's own per-sample work: a label
// set is encoded once for all the samples that share it.
type pprofBuilder struct {
	an    *attribution.Analysis
	steps *stepGroups

	strIndex map[string]int64
	strs     []string // the string table; "" first

	samples   map[sampleKey]int32 // → index in ss
	ss        []ppSample
	funcs     map[[2]string]uint64 // (name, file) → function ID
	fns       []ppFunction         // by ID - 1
	locs      map[snapshot.FrameID]uint64
	lines     []ppLine // location ID - 1 → its one line
	stackLocs map[snapshot.StackID][]uint64
	synthLocs map[string]uint64 // by function name
	names     []string          // sampleStack.name → a named site's label
	nameIDs   map[string]int32
	named     map[namedKey]namedEntry
	labelSets map[labelKey]int32
	numSets   map[[2]int64]int32
	labelEnc  [][]byte // per label set: its Sample.label fields, encoded
	phases    []string // sampleKey.phase → name
	phaseIDs  map[string]int32
	lastPhase string // phase's last answer, which most calls repeat
	lastID    int32

	sampleTypes              [4][2]int64 // (type, unit) string indexes
	defaultType              int64
	comments                 []string
	timeNanos, durationNanos int64
}

type ppSample struct {
	locs         []uint64 // location IDs, leaf first (shared by a stack's samples)
	v            [4]int64
	labels, nums int32 // label sets, indexes in labelEnc
}

type ppFunction struct{ name, file int64 }

type ppLine struct {
	fn   uint64
	line int64
}

func newPProfBuilder(an *attribution.Analysis, steps *stepGroups) *pprofBuilder {
	b := &pprofBuilder{
		an:        an,
		steps:     steps,
		strIndex:  map[string]int64{},
		samples:   map[sampleKey]int32{},
		funcs:     map[[2]string]uint64{},
		locs:      map[snapshot.FrameID]uint64{},
		stackLocs: map[snapshot.StackID][]uint64{},
		synthLocs: map[string]uint64{},
		nameIDs:   map[string]int32{},
		named:     map[namedKey]namedEntry{},
		labelSets: map[labelKey]int32{},
		numSets:   map[[2]int64]int32{},
		phaseIDs:  map[string]int32{"": 0},
		phases:    []string{""},
	}
	b.str("")
	for i, st := range [4][2]string{{"inuse_space", "bytes"}, {"inuse_objects", "count"}, {"alloc_space", "bytes"}, {"alloc_objects", "count"}} {
		b.sampleTypes[i] = [2]int64{b.str(st[0]), b.str(st[1])}
	}
	b.defaultType = b.str("inuse_space")
	return b
}

// str returns s's index in the string table, adding it on first use.
func (b *pprofBuilder) str(s string) int64 {
	if i, ok := b.strIndex[s]; ok {
		return i
	}
	i := int64(len(b.strs))
	b.strIndex[s] = i
	b.strs = append(b.strs, s)
	return i
}

// phase returns the number of a phase name.
func (b *pprofBuilder) phase(name string) int32 {
	if name == b.lastPhase {
		return b.lastID
	}
	id, ok := b.phaseIDs[name]
	if !ok {
		id = int32(len(b.phases))
		b.phaseIDs[name] = id
		b.phases = append(b.phases, name)
	}
	b.lastPhase, b.lastID = name, id
	return id
}

// add merges values into the sample for k.
func (b *pprofBuilder) add(k sampleKey, v [4]int64) {
	i, ok := b.samples[k]
	if !ok {
		i = int32(len(b.ss))
		b.ss = append(b.ss, ppSample{locs: b.where(k.stack, b.phases[k.phase]), labels: b.labels(k), nums: b.numLabels(k)})
		b.samples[k] = i
	}
	s := &b.ss[i]
	for j := range v {
		s.v[j] += v[j]
	}
}

// labels returns the label set of k's string labels, one per distinct set
// shared by its samples: a profile of thousands of stacks holds few.
// Keys are in pprof's order (sorted), as its own encoder writes them.
func (b *pprofBuilder) labels(k sampleKey) int32 {
	lk := labelKey{k.category, k.phase, k.step}
	phase := b.phases[k.phase]
	if l, ok := b.labelSets[lk]; ok {
		return l
	}
	var e protoBuf
	e.label(b.str("category"), b.str(k.category.String()), 0, 0)
	if phase != "" {
		e.label(b.str("phase"), b.str(textsafe.Escape(phase)), 0, 0)
	}
	switch {
	case k.step < 0:
	case b.steps.perStep:
		e.label(b.str("step"), b.str(strconv.Itoa(int(k.step))), 0, 0)
	default:
		e.label(b.str("step"), b.str(b.steps.labels[k.step]), 0, 0)
	}
	l := int32(len(b.labelEnc))
	b.labelEnc = append(b.labelEnc, e.b)
	b.labelSets[lk] = l
	return l
}

// numLabels is labels for the numeric labels, bytes and stream. Each has
// a unit, which keeps stream 0, the default stream: pprof drops a numeric
// label of value 0 that has none.
func (b *pprofBuilder) numLabels(k sampleKey) int32 {
	nk := [2]int64{k.stream, k.bytes}
	if l, ok := b.numSets[nk]; ok {
		return l
	}
	var e protoBuf
	e.label(b.str("bytes"), 0, k.bytes, b.str("bytes"))
	e.label(b.str("stream"), 0, k.stream, b.str("count"))
	l := int32(len(b.labelEnc))
	b.labelEnc = append(b.labelEnc, e.b)
	b.numSets[nk] = l
	return l
}

type labelKey struct {
	category attribution.Category
	phase    int32
	step     int32
}

// where returns a sample's locations, leaf first: its stack's locations,
// else the one synthetic location that names its site.
func (b *pprofBuilder) where(stack sampleStack, phase string) []uint64 {
	if stack.site == siteNamed {
		name := textsafe.Escape(b.names[stack.name])
		if stack.id == 0 {
			return []uint64{b.synthetic(name)}
		}
		// A backward block's leaf is its forward site's line, named as
		// the site is ("… (backward, autograd)"), under that
		// allocation's frames.
		fwd := b.locations(stack.id)
		leaf := b.an.Snapshot.Stacks.Frame(b.an.Filter.SiteOf(b.an.Snapshot.Stacks, stack.id).Frame)
		loc, ok := b.synthLocs[name]
		if !ok {
			loc = b.newLocation(name, textsafe.Escape(leaf.Filename), leaf.Line)
			b.synthLocs[name] = loc
		}
		return append([]uint64{loc}, fwd...)
	}
	if stack.site != siteStack {
		return []uint64{b.synthetic(syntheticSite(stack.site.String(), phase, b.an.Snapshot.Stacks))}
	}
	if l := b.locations(stack.id); len(l) > 0 {
		return l
	}
	return []uint64{b.synthetic(syntheticSite(attribution.SiteNone, phase, b.an.Snapshot.Stacks))}
}

// syntheticSite names the site of a block with no Python frame as summary
// and peak do (attribution.Site.Label), except that one allocated in the
// backward phase is the autograd engine's: its thread runs no Python.
func syntheticSite(kind, phase string, st *snapshot.Stacks) string {
	if kind == attribution.SiteNone && phase == "backward" {
		return "(no Python frame: autograd engine, backward)"
	}
	return attribution.Site{Kind: kind}.Label(st)
}

// locations returns the frames of stack that count (user and library code,
// the filter's view) as locations, leaf first; a stack with none has its
// innermost Python frame (the site attribution names), and one with no
// Python frame none.
func (b *pprofBuilder) locations(stack snapshot.StackID) []uint64 {
	if l, ok := b.stackLocs[stack]; ok {
		return l
	}
	st := b.an.Snapshot.Stacks
	tab := b.an.Filter.For(st)
	var out []uint64
	for _, fid := range st.Stack(stack) {
		if tab.Counts(fid) {
			out = append(out, b.frameLocation(fid))
		}
	}
	if site := tab.Site(stack); len(out) == 0 && site.Kind == attribution.SitePython {
		out = append(out, b.frameLocation(site.Frame))
	}
	b.stackLocs[stack] = out
	return out
}

// frameLocation returns the location of one frame, made on first use.
func (b *pprofBuilder) frameLocation(fid snapshot.FrameID) uint64 {
	if loc, ok := b.locs[fid]; ok {
		return loc
	}
	fr := b.an.Snapshot.Stacks.Frame(fid)
	// pprof -top prints the name raw, so it is escaped.
	loc := b.newLocation(textsafe.Escape(fr.Name), textsafe.Escape(fr.Filename), fr.Line)
	b.locs[fid] = loc
	return loc
}

// synthetic returns the location of the synthetic function name, made on
// first use.
func (b *pprofBuilder) synthetic(name string) uint64 {
	if loc, ok := b.synthLocs[name]; ok {
		return loc
	}
	loc := b.newLocation(name, "", 0)
	b.synthLocs[name] = loc
	return loc
}

// newLocation adds a location of one line in function name of file,
// sharing the function with the other lines of the same name and file,
// and returns its ID.
func (b *pprofBuilder) newLocation(name, file string, line int64) uint64 {
	key := [2]string{name, file}
	fn, ok := b.funcs[key]
	if !ok {
		// No system name: pprof "demangles" a function whose name equals
		// it, and its C++ heuristics strip "<...>", so Python's <module>,
		// <lambda> and <listcomp> printed as <unknown>.
		b.fns = append(b.fns, ppFunction{name: b.str(name), file: b.str(file)})
		fn = uint64(len(b.fns))
		b.funcs[key] = fn
	}
	b.lines = append(b.lines, ppLine{fn: fn, line: line})
	return uint64(len(b.lines))
}

// Profile is 'memscope pprof': the blocks live at a moment and every
// allocation of one device, as a pprof profile.
type Profile struct {
	Analysis *attribution.Analysis
	Device   *attribution.Device
	Moment   *attribution.Moment
	Allocs   iter.Seq[attribution.Allocation]
}

func (*Profile) Kind() string { return "pprof" }

func (r *Profile) writePProf(w io.Writer) error {
	return writePProf(w, r.Analysis, r.Device, r.Moment, r.Allocs)
}
