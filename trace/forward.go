package trace

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// evaluatePrefix names the autograd engine's wrapper around a backward node.
const evaluatePrefix = "autograd::engine::evaluate_function: "

// linkForward sets Op.Forward on backward ops: on each backward node (an
// op directly inside "autograd::engine::evaluate_function: NAME" and named
// NAME) and on each op a fwdbwd flow ends on. A sequence number does not
// name one forward op: ops that make no autograd node record the number
// the next node will get, so torch.compile's CompiledFunctionBackward
// shares its number with CompiledFunction and with the aten::zero_ of
// zero_grad before it, and a composite op shares it with the op inside.
// So the forward op is chosen by name among the ops with the backward's
// number (see pickForward); the flow torch wrote, which picks by number
// alone, is kept when its forward op matches by name or none does.
func (t *Trace) linkForward(flows []rawFlow, warn func(string)) {
	byFlow := t.resolveFlows(flows, warn)
	bySeq := map[int32][]OpID{}
	for i := range t.Ops {
		if o := &t.Ops[i]; o.Seq >= 0 && !t.isBackwardNode(OpID(i)) {
			bySeq[o.Seq] = append(bySeq[o.Seq], OpID(i))
		}
	}
	for _, list := range bySeq {
		slices.SortStableFunc(list, func(a, b OpID) int { return cmp.Compare(t.Ops[a].Start, t.Ops[b].Start) })
	}
	for i := range t.Ops {
		id := OpID(i)
		flow, hasFlow := byFlow[id]
		node := t.Ops[i].Seq >= 0 && t.isBackwardNode(id)
		if !hasFlow && !node {
			continue
		}
		if !hasFlow {
			flow = NoOp
		}
		var cands []OpID
		if t.Ops[i].Seq >= 0 {
			cands = bySeq[t.Ops[i].Seq]
		}
		t.Ops[i].Forward = t.pickForward(id, flow, cands)
	}
}

// resolveFlows pairs the ends of the fwdbwd flows with the ops starting at
// them (the "s" end on the forward op, the "f" end on the backward node,
// each at the op's exact start), records them in t.Flows and returns the
// forward op of each backward op.
func (t *Trace) resolveFlows(flows []rawFlow, warn func(string)) map[OpID]OpID {
	type ends struct{ fwd, bwd OpID }
	byID := make(map[int64]ends, len(flows)/2)
	for _, f := range flows {
		e, ok := byID[f.id]
		if !ok {
			e = ends{NoOp, NoOp}
		}
		op := t.opStartingAt(f.thread, f.ts)
		if f.start {
			e.fwd = op
		} else {
			e.bwd = op
		}
		byID[f.id] = e
	}
	ids := make([]int64, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make(map[OpID]OpID, len(ids))
	lost := 0
	for _, id := range ids {
		e := byID[id]
		if e.fwd == NoOp || e.bwd == NoOp || e.fwd == e.bwd {
			lost++
			continue
		}
		t.Flows = append(t.Flows, Flow{ID: id, Fwd: e.fwd, Bwd: e.bwd})
		out[e.bwd] = e.fwd
	}
	if lost > 0 {
		warn(fmt.Sprintf("%d of %d fwdbwd flows do not connect two ops; those backward ops have no forward link", lost, len(ids)))
	}
	return out
}

// pickForward chooses the forward op of backward op b, given the op its
// fwdbwd flow starts on (NoOp without one) and the forward ops that
// recorded its sequence number, sorted by start. In order: the flow's op
// if its name matches b's (ForwardName); the latest op with the number,
// on another thread and started before b, whose name matches; the flow's
// op; without a flow, the earliest op with the number when every other
// one is nested in it (a composite op and the ops inside it: one forward
// call); else none, rather than a guess.
func (t *Trace) pickForward(b, flow OpID, cands []OpID) OpID {
	name := t.OpName(b)
	if flow != NoOp && ForwardName(name, t.OpName(flow)) {
		return flow
	}
	o := &t.Ops[b]
	before := cands[:0:0]
	for _, c := range cands {
		if co := &t.Ops[c]; co.Thread != o.Thread && co.Start < o.Start {
			before = append(before, c)
		}
	}
	for j := len(before) - 1; j >= 0; j-- {
		if ForwardName(name, t.OpName(before[j])) {
			return before[j]
		}
	}
	if flow != NoOp || len(before) == 0 {
		return flow
	}
	root := &t.Ops[before[0]]
	for _, c := range before[1:] {
		if co := &t.Ops[c]; co.Thread != root.Thread || co.Start < root.Start || co.End() > root.End() {
			return NoOp
		}
	}
	return before[0]
}

// ForwardName reports whether fwd is the name of the forward op whose
// autograd node is node: node "XBackwardN" (or "XBackward") and fwd
// "ns::x", compared without case, namespace or underscores, fwd possibly
// ending in "forward" (aten::nll_loss_forward for NllLossBackward0).
// CompiledFunctionBackward matches CompiledFunction, AddmmBackward0
// aten::addmm, NativeLayerNormBackward0 aten::native_layer_norm.
func ForwardName(node, fwd string) bool {
	base := strings.TrimRight(node, "0123456789")
	base, ok := strings.CutSuffix(base, "Backward")
	if !ok {
		return false
	}
	if i := strings.LastIndex(base, "::"); i >= 0 {
		base = base[i+2:]
	}
	if i := strings.LastIndex(fwd, "::"); i >= 0 {
		fwd = fwd[i+2:]
	}
	nb, nf := normName(base), normName(fwd)
	return nb != "" && (nf == nb || nf == nb+"forward")
}

// normName lowercases s and drops its underscores.
func normName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_':
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// opStartingAt returns the op on thread th that starts exactly at ns,
// preferring the innermost one with a sequence number.
func (t *Trace) opStartingAt(th ThreadID, ns int64) OpID {
	if int(th) >= len(t.opSpans) {
		return NoOp
	}
	s := t.opSpans[th]
	ops := t.Ops[s.lo:s.hi]
	i, _ := slices.BinarySearchFunc(ops, ns, func(o Op, target int64) int { return cmp.Compare(o.Start, target) })
	best := NoOp
	for ; i < len(ops) && ops[i].Start == ns; i++ {
		if best == NoOp || ops[i].Seq >= 0 || t.Ops[best].Seq < 0 {
			best = OpID(int(s.lo) + i)
		}
	}
	return best
}

func (t *Trace) isBackwardNode(id OpID) bool {
	p := t.Ops[id].Parent
	if p == NoOp {
		return false
	}
	parent := t.OpName(p)
	return strings.HasPrefix(parent, evaluatePrefix) && parent[len(evaluatePrefix):] == t.OpName(id)
}

// Label names an op for people: its name, and for an op that runs in
// backward, the forward op and module it is the backward of, e.g.
// "aten::mm (backward of aten::linear in nn.Module: Linear_3)".
func (t *Trace) Label(id OpID) string { return t.label(id, true) }

// OpLabel is Label without the module instance: "aten::mm (backward of
// aten::linear)", one name for the backward of every Linear's forward.
func (t *Trace) OpLabel(id OpID) string { return t.label(id, false) }

func (t *Trace) label(id OpID, module bool) string {
	if id == NoOp {
		return "(no op)"
	}
	name := t.OpName(id)
	f := t.ForwardOf(id)
	if f == NoOp {
		return name
	}
	s := name + " (backward of " + t.OpName(f)
	if m := t.moduleAround(f); module && m != NoPy {
		s += " in " + t.Str(t.PyFuncs[m].Name)
	}
	return s + ")"
}

// ModulePath is the chain of nn.Module names from the outermost module down
// to p, joined by "/": "LlamaForCausalLM_0/LlamaModel_0/…/Linear_3".
func (t *Trace) ModulePath(p PyID) string {
	var names []string
	for p = t.enclosingModule(p); p != NoPy; p = t.enclosingModule(t.PyFuncs[p].Parent) {
		names = append(names, t.ModuleName(p))
	}
	slices.Reverse(names)
	return strings.Join(names, "/")
}

// moduleAround returns the nn.Module around op's start: the module its
// allocations, and those of the backward ops linked to it, are charged to.
func (t *Trace) moduleAround(op OpID) PyID {
	if len(t.opModule) == len(t.Ops) {
		return t.opModule[op]
	}
	o := &t.Ops[op]
	return t.enclosingModule(t.innermostPy(o.Thread, o.Start))
}
