// This file names the blocks that have no site of their own: those
// allocated before recording began with no frames in the snapshot's
// segments, and those allocated with no Python frame (the autograd
// engine's thread, C++). A stack alone cannot tell these apart: every
// such block shares the empty stack, so their site is chosen per block
// (Device.SiteOfBlock), from what the analysis already knows of it.

package attribution

import (
	"sort"
	"strings"

	"github.com/memscope/memscope/snapshot"
)

// SiteBackward is the kind of the site of a block the autograd engine
// allocated in a backward with no Python frame, named by the forward
// allocation whose gradient it holds: Frame and Caller are that
// allocation's site (see Device.findOrigins), Node the autograd node's
// C++ frame where stacks="all" recorded one.
const SiteBackward = "backward"

// Named reports whether the site names where its bytes come from: a frame
// (user, library, Python, the forward site a backward block is the
// gradient of), or for blocks with none, what they are (the category that
// holds them, parameters or gradients; a cuBLAS workspace; the autograd
// node that made them). The rest, "(allocated before recording began)",
// "(no Python frame…)" and "(no history recorded)", is unnamed.
func (s Site) Named() bool {
	switch s.Kind {
	case SiteUser, SiteLibrary, SitePython, SiteBackward:
		return true
	}
	return s.Of != Unknown || s.Workspace || s.CuBLAS || s.HasNode
}

// originLabel is the label of a backward site, and of a site of blocks
// with no frame of their own that the analysis named (Of, Workspace,
// Node); ok is false for the others, which Label names. What the blocks
// are comes first, how that is known in parentheses after it, so that a
// label clipped from the left keeps both.
func (s Site) originLabel(st *snapshot.Stacks) (string, bool) {
	if s.CuBLAS {
		// The line of the matmul that made it, as a backward site's, then
		// what it is.
		switch s.Kind {
		case SiteUser, SiteLibrary, SitePython:
			label := FrameLabel(st.Frame(s.Frame)) + " (cuBLAS workspace: its stream's first matmul)"
			if s.HasCaller {
				label += " (called from " + FrameLabel(st.Frame(s.Caller)) + ")"
			}
			return label, true
		default:
			return "cuBLAS workspace (autograd engine: its stream's first matmul)", true
		}
	}
	node := ""
	if s.HasNode {
		node = NodeName(st.Frame(s.Node).Name)
	}
	if s.Kind == SiteBackward {
		via := "backward, autograd"
		if s.Near {
			via = "backward's temporaries, autograd"
		}
		if node != "" {
			via += ": " + node
		}
		label := FrameLabel(st.Frame(s.Frame)) + " (" + via + ")"
		if s.HasCaller {
			label += " (called from " + FrameLabel(st.Frame(s.Caller)) + ")"
		}
		return label, true
	}
	what := ""
	switch {
	case s.Workspace:
		what = "cuBLAS workspace, by its size"
	case s.Of != Unknown:
		what = categoryWords(s.Of)
	case node != "":
		what = node
	default:
		return "", false
	}
	switch {
	case s.Kind == SiteBefore:
		return what + " (allocated before recording began)", true
	case s.Kind == SiteUnrecorded:
		return what + " (no history recorded)", true
	case node != "" && what != node:
		return what + " (autograd: " + node + ")", true
	case s.Of == Gradient || node != "" || s.Workspace:
		return what + " (autograd engine, no Python frame)", true
	}
	return what + " (no Python frame)", true
}

// categoryWords names what blocks of category c are, for a site's label.
func categoryWords(c Category) string {
	switch c {
	case Parameter:
		return "parameters"
	case Gradient:
		return "gradients"
	case Activation:
		return "activations"
	case Input:
		return "inputs"
	case Temporary:
		return "temporaries"
	case GatheredParameter:
		return "gathered parameters"
	}
	return c.String()
}

// namesBlocks reports whether category c says by itself what a block with
// no frame is: model states, a KV cache, gathered parameters, a private
// pool's. Lifetime alone (temporary, activation, unknown, before
// recording) names nothing.
func namesBlocks(c Category) bool {
	switch c {
	case Parameter, OptimizerState, Gradient, KVCache, GatheredParameter:
		return true
	}
	return false
}

// NodeName returns the autograd node a C++ frame's function runs
// ("NllLossBackward0" for
// "torch::autograd::generated::NllLossBackward0::apply(…)",
// "AccumulateGrad" for torch::autograd::AccumulateGrad::apply), or "" when
// the frame is not a node's apply.
func NodeName(fn string) string {
	const generated, autograd = "torch::autograd::generated::", "torch::autograd::"
	rest, ok := strings.CutPrefix(fn, generated)
	if !ok {
		if rest, ok = strings.CutPrefix(fn, autograd); !ok {
			return ""
		}
	}
	name, after, ok := strings.Cut(rest, "::apply")
	if !ok || name == "" || strings.ContainsAny(name, ":<>( ") || !strings.HasPrefix(after, "(") && after != "" {
		return ""
	}
	return name
}

// origins holds, for the alloc events that have no Python frame and that
// the analysis named (findOrigins), their site: at ascending, site[k]
// indexing sites, fwd[k] the stack of the forward allocation a backward
// site was matched to (0 for others).
type origins struct {
	tab   *SiteTable // the filter's table of the snapshot's stacks
	at    []int32
	site  []int32
	fwd   []snapshot.StackID
	sites []Site
}

// of returns the origin of alloc event i, if findOrigins named it.
func (o *origins) of(i int) (Site, snapshot.StackID, bool) {
	k := sort.Search(len(o.at), func(k int) bool { return int(o.at[k]) >= i })
	if k == len(o.at) || int(o.at[k]) != i {
		return Site{}, 0, false
	}
	return o.sites[o.site[k]], o.fwd[k], true
}

// findOrigins names the allocations that have no Python frame, once, in
// event order:
//
//   - a block whose category says what it is (a gradient the engine keeps
//     in .grad, optimizer state a fused optimizer's C++ makes) is named by
//     it;
//   - a block the backward allocates is named by the forward: the
//     gradient of a tensor has that tensor's size, and autograd visits
//     the graph in reverse, so the block is matched to the latest
//     allocation of the same requested size in its step that has a site
//     and was not matched yet (last in, first out; the logits' fp32
//     gradients match the loss's fp32 logits, a layer's the layer's
//     activations). A second gradient of one tensor (a tensor used twice)
//     when none of its size is left takes the last match of its size;
//   - a backward's block of a size no forward allocation had (a kernel's
//     workspace, a temporary of the node) is named by the last match
//     before it in its phase, Near: the backward then running;
//   - else, with stacks="all", by the autograd node its C++ frames run.
//
// The rest keeps the site its stack gives ("(no Python frame…)").
func (d *Device) findOrigins() *origins {
	events := d.Timeline.Events
	st := d.an.Snapshot.Stacks
	tab := d.an.Filter.For(st)
	o := &origins{tab: tab}
	c := d.class
	type fwdAlloc struct {
		site  int32 // index into tab.sites
		stack snapshot.StackID
	}
	lifo := map[int64][]fwdAlloc{}
	last := map[int64]fwdAlloc{}
	index := map[Site]int32{}
	nodes := map[snapshot.StackID]int32{} // stack → its node frame + 1; -1 none
	nodeOf := func(id snapshot.StackID) (snapshot.FrameID, bool) {
		n, ok := nodes[id]
		if !ok {
			n = -1
			for _, f := range st.Stack(id) {
				if NodeName(st.Frame(f).Name) != "" {
					n = int32(f) + 1
					break
				}
			}
			nodes[id] = n
		}
		return snapshot.FrameID(n - 1), n > 0
	}
	step, phase := -2, -2
	var near fwdAlloc
	hasNear := false
	for i := range events {
		ev := &events[i]
		if ev.Action != snapshot.ActionAlloc {
			continue
		}
		name, pi := c.phaseName(i)
		if pi != phase {
			phase, hasNear = pi, false
			if s := stepOf(c.phases, pi); s != step || s < 0 {
				step = s
				clear(lifo)
				clear(last)
			}
		}
		site := tab.Site(ev.Stack)
		if site.CuBLAS {
			continue // its stack names it
		}
		if site.Kind != SiteNone {
			lifo[ev.Size] = append(lifo[ev.Size], fwdAlloc{tab.siteIndex(ev.Stack), ev.Stack})
			continue
		}
		var s Site
		var fwd snapshot.StackID
		node, hasNode := nodeOf(ev.Stack)
		b := snapshot.LiveBlock{Addr: ev.Addr, Requested: ev.Size, Stack: ev.Stack, Stream: ev.Stream, AllocIndex: i}
		cat := c.Classify(&b)
		switch {
		case namesBlocks(cat):
			s = Site{Kind: SiteNone, Of: cat}
		case cublasWorkspace(ev.Size) && c.life.death[i] < 0:
			s = Site{Kind: SiteNone, Workspace: true} // the autograd thread's, kept for the process's life
		case name == "backward" || c.kinds.stack(ev.Stack)&kindBackward != 0:
			m, ok := last[ev.Size]
			if q := lifo[ev.Size]; len(q) > 0 {
				m, ok = q[len(q)-1], true
				lifo[ev.Size] = q[:len(q)-1]
				last[ev.Size] = m
			}
			switch {
			case ok:
				near, hasNear = m, true
			case hasNear:
				m = near
			default:
				continue
			}
			f := tab.sites[m.site]
			s = Site{Kind: SiteBackward, Frame: f.Frame, Caller: f.Caller, HasCaller: f.HasCaller, Near: !ok}
			fwd = m.stack
		}
		if s.Kind == "" && !hasNode {
			continue
		}
		if s.Kind == "" {
			s.Kind = SiteNone
		}
		s.Node, s.HasNode = node, hasNode
		k, ok := index[s]
		if !ok {
			k = int32(len(o.sites))
			index[s] = k
			o.sites = append(o.sites, s)
		}
		o.at = append(o.at, int32(i))
		o.site = append(o.site, k)
		o.fwd = append(o.fwd, fwd)
	}
	return o
}

// stepOf returns the step of phase index pi, -1 outside phases and steps.
func stepOf(p *Phases, pi int) int {
	if pi < 0 {
		return -1
	}
	return p.List[pi].Step
}

// SiteOfBlock returns the site a live block is charged to, as the top
// sites, the call trees, the series and the profiles name it: its stack's
// site; for a block allocated with no Python frame that findOrigins named,
// that name (a backward's block by the forward site it is the gradient
// of, or by its category or autograd node); for a block live before
// recording with no stack, "(allocated before recording began)" named by
// its category where that tells what it is (parameters, optimizer state,
// gradients).
func (d *Device) SiteOfBlock(b *snapshot.LiveBlock) Site {
	if b.AllocIndex < 0 && b.Stack == 0 {
		s := d.beforeSite()
		switch c := d.class.Classify(b); {
		case s.Kind == SiteBefore && namesBlocks(c):
			s.Of = c
		case cublasWorkspace(b.Requested) && d.DeathOf(b) < 0:
			s.Workspace = true
		}
		return s
	}
	s := d.origins.tab.Site(b.Stack)
	if s.Kind == SiteNone && b.AllocIndex >= 0 {
		if o, _, ok := d.origins.of(b.AllocIndex); ok {
			return o
		}
	}
	return s
}

// BackwardOf returns, for a block whose site is SiteBackward, the stack of
// the forward allocation it was matched to.
func (d *Device) BackwardOf(b *snapshot.LiveBlock) (snapshot.StackID, bool) {
	if b.AllocIndex < 0 {
		return 0, false
	}
	s, fwd, ok := d.origins.of(b.AllocIndex)
	return fwd, ok && s.Kind == SiteBackward
}

// perBlock reports whether blocks of stack id can differ in site (so a
// site cached by stack would be wrong for them): the empty stack of
// blocks from before recording, and stacks with no Python frame.
func (t *SiteTable) perBlock(id snapshot.StackID) bool {
	return id == 0 || t.Site(id).Kind == SiteNone
}

// PerBlock reports whether the blocks of stack id in st can have
// different sites (Device.SiteOfBlock): a cache of sites by stack must not
// hold them.
func (f *Filter) PerBlock(st *snapshot.Stacks, id snapshot.StackID) bool {
	return f.For(st).perBlock(id)
}
