package report

import (
	"fmt"
	"io"

	"github.com/google/pprof/profile"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/textsafe"
	"github.com/memscope/memscope/snapshot"
)

// PProf writes a pprof profile (gzipped protobuf) of one device: the blocks
// live at moment m as inuse_space/inuse_objects, and every allocation of
// the recorded window as alloc_space/alloc_objects. Each Python frame is a
// function with its file and line, leaf first; frames the analysis's filter
// does not count as the user's (torch, site-packages, the interpreter, C++
// by default) are left out, so the leaf is the site attribution names.
// Blocks with no frame left (allocated before recording, or by the autograd
// engine's thread) have no location: they count in the totals and carry
// their labels. Labels: category, phase, and op when known; numeric step,
// stream and bytes.
func PProf(w io.Writer, an *attribution.Analysis, d *attribution.Device, m *attribution.Moment, allocs []attribution.Allocation) error {
	b := newPProfBuilder(an)
	for i := range m.Live {
		lb := &m.Live[i]
		if lb.PendingFree {
			continue
		}
		phase, step := "", -1
		switch {
		case lb.AllocIndex >= 0:
			phase, step = d.PhaseOf(lb.AllocIndex)
		case len(d.Timeline.Events) == 0:
			phase = "no history recorded"
		default:
			phase = "before recording"
		}
		b.add(lb.Stack, sampleKey{category: m.Category[i].String(), phase: phase, step: step,
			stream: lb.Stream, bytes: lb.Size}, [4]int64{lb.Size, 1, 0, 0})
	}
	for _, a := range allocs {
		b.add(a.Stack, sampleKey{category: a.Category.String(), phase: a.Phase, step: a.Step,
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

type sampleKey struct {
	stack    snapshot.StackID
	category string
	phase    string
	step     int
	stream   int64
	bytes    int64
}

type pprofBuilder struct {
	an        *attribution.Analysis
	p         *profile.Profile
	samples   map[sampleKey]*profile.Sample
	funcs     map[[2]string]*profile.Function
	locs      map[snapshot.FrameID]*profile.Location
	stackLocs map[snapshot.StackID][]*profile.Location
}

func newPProfBuilder(an *attribution.Analysis) *pprofBuilder {
	return &pprofBuilder{
		an: an,
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
	}
}

// add merges values into the sample for (stack, key).
func (b *pprofBuilder) add(stack snapshot.StackID, k sampleKey, v [4]int64) {
	k.stack = stack
	s := b.samples[k]
	if s == nil {
		s = &profile.Sample{
			Location: b.locations(stack),
			Value:    make([]int64, 4),
			Label:    map[string][]string{"category": {k.category}},
			NumLabel: map[string][]int64{"stream": {k.stream}, "bytes": {k.bytes}},
			NumUnit:  map[string][]string{"bytes": {"bytes"}},
		}
		if k.phase != "" {
			s.Label["phase"] = []string{textsafe.Escape(k.phase)}
		}
		if k.step >= 0 {
			s.NumLabel["step"] = []int64{int64(k.step)}
		}
		b.samples[k] = s
		b.p.Sample = append(b.p.Sample, s)
	}
	for i := range v {
		s.Value[i] += v[i]
	}
}

// locations returns the frames of stack that count (user and library code,
// the filter's view) as locations, leaf first.
func (b *pprofBuilder) locations(stack snapshot.StackID) []*profile.Location {
	if l, ok := b.stackLocs[stack]; ok {
		return l
	}
	st := b.an.Snapshot.Stacks
	tab := b.an.Filter.For(st)
	var out []*profile.Location
	for _, fid := range st.Stack(stack) {
		if !tab.Counts(fid) {
			continue
		}
		fr := st.Frame(fid)
		loc := b.locs[fid]
		if loc == nil {
			key := [2]string{fr.Name, fr.Filename}
			fn := b.funcs[key]
			if fn == nil {
				name := textsafe.Escape(fr.Name) // pprof -top prints it raw
				fn = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name, Filename: textsafe.Escape(fr.Filename)}
				b.funcs[key] = fn
				b.p.Function = append(b.p.Function, fn)
			}
			loc = &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: fn, Line: fr.Line}}}
			b.locs[fid] = loc
			b.p.Location = append(b.p.Location, loc)
		}
		out = append(out, loc)
	}
	b.stackLocs[stack] = out
	return out
}

func (b *pprofBuilder) profile() *profile.Profile { return b.p }
