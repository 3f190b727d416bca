package report

import (
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"

	"github.com/google/pprof/profile"

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
		switch {
		case lb.AllocIndex >= 0:
			phase, step = d.PhaseOf(lb.AllocIndex)
		case len(d.Timeline.Events) == 0:
			phase = "no history recorded"
			if lb.Stack == 0 {
				stack = siteOnly(attribution.SiteUnrecorded)
			}
		default:
			phase = "before recording"
			if lb.Stack == 0 {
				stack = siteOnly(attribution.SiteBefore)
			}
		}
		b.add(stack, sampleKey{category: m.Category[i], phase: phase, step: b.steps.group(step),
			stream: lb.Stream, bytes: lb.Size}, [4]int64{lb.Size, 1, 0, 0})
	}
	for a := range allocs {
		b.add(stackOf(a.Stack), sampleKey{category: a.Category, phase: a.Phase, step: b.steps.group(a.Step),
			stream: a.Stream, bytes: a.Size}, [4]int64{0, 0, a.Size, 1})
	}
	p := b.profile()
	t := d.Timeline
	if n := len(t.Events); n > 0 {
		p.TimeNanos = t.Events[0].TimeUS * 1000
		p.DurationNanos = (t.Events[n-1].TimeUS - t.Events[0].TimeUS) * 1000
	}
	p.Comments = []string{
		fmt.Sprintf("memscope: %s, device %d", an.Snapshot.Source, d.Device),
		fmt.Sprintf("inuse_*: blocks live at %s (event %d); alloc_*: every allocation recorded", m.Label, m.Index),
	}
	if err := p.CheckValid(); err != nil {
		return fmt.Errorf("invariant violation: pprof profile: %w", err)
	}
	return p.Write(w)
}

// sampleStack is where a sample is charged: a recorded stack, or, for a
// block with none, the kind of site that stands for it (SiteBefore,
// SiteUnrecorded).
type sampleStack struct {
	id   snapshot.StackID
	site string // "" for a recorded stack
}

func stackOf(id snapshot.StackID) sampleStack { return sampleStack{id: id} }
func siteOnly(kind string) sampleStack        { return sampleStack{site: kind} }

type sampleKey struct {
	stack    sampleStack
	category attribution.Category
	phase    string
	step     int // a step group (stepGroups.group); -1 outside steps
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

type pprofBuilder struct {
	an        *attribution.Analysis
	steps     *stepGroups
	p         *profile.Profile
	samples   map[sampleKey]*profile.Sample
	funcs     map[[2]string]*profile.Function
	locs      map[snapshot.FrameID]*profile.Location
	stackLocs map[snapshot.StackID][]*profile.Location
	synthLocs map[string]*profile.Location // by function name
	labelSets map[labelKey]map[string][]string
	numSets   map[[2]int64]map[string][]int64
	numUnit   map[string][]string
}

func newPProfBuilder(an *attribution.Analysis, steps *stepGroups) *pprofBuilder {
	return &pprofBuilder{
		an:    an,
		steps: steps,
		p: &profile.Profile{
			SampleType: []*profile.ValueType{
				{Type: "inuse_space", Unit: "bytes"},
				{Type: "inuse_objects", Unit: "count"},
				{Type: "alloc_space", Unit: "bytes"},
				{Type: "alloc_objects", Unit: "count"},
			},
			DefaultSampleType: "inuse_space",
		},
		samples:   map[sampleKey]*profile.Sample{},
		funcs:     map[[2]string]*profile.Function{},
		locs:      map[snapshot.FrameID]*profile.Location{},
		stackLocs: map[snapshot.StackID][]*profile.Location{},
		synthLocs: map[string]*profile.Location{},
		labelSets: map[labelKey]map[string][]string{},
		numSets:   map[[2]int64]map[string][]int64{},
		// A unit keeps stream 0, the default stream: pprof drops a numeric
		// label of value 0 that has none.
		numUnit: map[string][]string{"bytes": {"bytes"}, "stream": {"count"}},
	}
}

// add merges values into the sample for (stack, key).
func (b *pprofBuilder) add(stack sampleStack, k sampleKey, v [4]int64) {
	k.stack = stack
	s := b.samples[k]
	if s == nil {
		s = &profile.Sample{
			Location: b.where(stack, k.phase),
			Value:    make([]int64, 4),
			Label:    b.labels(k),
			NumLabel: b.numLabels(k),
			NumUnit:  b.numUnit,
		}
		b.samples[k] = s
		b.p.Sample = append(b.p.Sample, s)
	}
	for i := range v {
		s.Value[i] += v[i]
	}
}

// labels returns the string labels of k, one map per distinct set shared
// by its samples (nothing writes them after): a profile of thousands of
// stacks holds few label sets.
func (b *pprofBuilder) labels(k sampleKey) map[string][]string {
	lk := labelKey{k.category, k.phase, k.step}
	if l, ok := b.labelSets[lk]; ok {
		return l
	}
	l := map[string][]string{"category": {k.category.String()}}
	if k.phase != "" {
		l["phase"] = []string{textsafe.Escape(k.phase)}
	}
	switch {
	case k.step < 0:
	case b.steps.perStep:
		l["step"] = []string{strconv.Itoa(k.step)}
	default:
		l["step"] = []string{b.steps.labels[k.step]}
	}
	b.labelSets[lk] = l
	return l
}

// numLabels is labels for the numeric labels, stream and bytes.
func (b *pprofBuilder) numLabels(k sampleKey) map[string][]int64 {
	nk := [2]int64{k.stream, k.bytes}
	if l, ok := b.numSets[nk]; ok {
		return l
	}
	l := map[string][]int64{"stream": {k.stream}, "bytes": {k.bytes}}
	b.numSets[nk] = l
	return l
}

type labelKey struct {
	category attribution.Category
	phase    string
	step     int
}

// where returns a sample's locations, leaf first: its stack's locations,
// else the one synthetic location that names its site.
func (b *pprofBuilder) where(stack sampleStack, phase string) []*profile.Location {
	if stack.site != "" {
		return []*profile.Location{b.synthetic(syntheticSite(stack.site, phase, b.an.Snapshot.Stacks))}
	}
	if l := b.locations(stack.id); len(l) > 0 {
		return l
	}
	return []*profile.Location{b.synthetic(syntheticSite(attribution.SiteNone, phase, b.an.Snapshot.Stacks))}
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
func (b *pprofBuilder) locations(stack snapshot.StackID) []*profile.Location {
	if l, ok := b.stackLocs[stack]; ok {
		return l
	}
	st := b.an.Snapshot.Stacks
	tab := b.an.Filter.For(st)
	var out []*profile.Location
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
func (b *pprofBuilder) frameLocation(fid snapshot.FrameID) *profile.Location {
	if loc := b.locs[fid]; loc != nil {
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
func (b *pprofBuilder) synthetic(name string) *profile.Location {
	if loc := b.synthLocs[name]; loc != nil {
		return loc
	}
	loc := b.newLocation(name, "", 0)
	b.synthLocs[name] = loc
	return loc
}

// newLocation adds a location of one line in function name of file,
// sharing the function with the other lines of the same name and file.
func (b *pprofBuilder) newLocation(name, file string, line int64) *profile.Location {
	key := [2]string{name, file}
	fn := b.funcs[key]
	if fn == nil {
		// No SystemName: pprof "demangles" a function whose Name equals
		// it, and its C++ heuristics strip "<...>", so Python's <module>,
		// <lambda> and <listcomp> printed as <unknown>.
		fn = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, Filename: file}
		b.funcs[key] = fn
		b.p.Function = append(b.p.Function, fn)
	}
	loc := &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: fn, Line: line}}}
	b.p.Location = append(b.p.Location, loc)
	return loc
}

func (b *pprofBuilder) profile() *profile.Profile { return b.p }
