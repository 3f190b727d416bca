package trace

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// evaluatePrefix names the autograd engine's wrapper around a backward node.
const evaluatePrefix = "autograd::engine::evaluate_function: "

// linkForward sets Op.Forward on backward ops. fwdbwd flows are used when
// the trace has them: the "s" end sits on the forward op, the "f" end on the
// backward node, each at the op's exact start. Traces without flows fall
// back to sequence numbers (see linkBySequence).
func (t *Trace) linkForward(flows []rawFlow, warn func(string)) {
	if len(flows) == 0 {
		t.linkBySequence()
		return
	}
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
	lost := 0
	for _, id := range ids {
		e := byID[id]
		if e.fwd == NoOp || e.bwd == NoOp {
			lost++
			continue
		}
		t.Flows = append(t.Flows, Flow{ID: id, Fwd: e.fwd, Bwd: e.bwd})
		t.Ops[e.bwd].Forward = e.fwd
	}
	if lost > 0 {
		warn(fmt.Sprintf("%d of %d fwdbwd flows do not connect two ops; those backward ops have no forward link", lost, len(ids)))
	}
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

// linkBySequence links each backward node (an op directly inside
// "autograd::engine::evaluate_function: NAME" and named NAME) to the
// earliest op with the same sequence number on another thread that started
// before it: the outermost forward op that recorded that number.
func (t *Trace) linkBySequence() {
	fwd := map[int32][]OpID{}
	for i := range t.Ops {
		if o := &t.Ops[i]; o.Seq >= 0 && !t.isBackwardNode(OpID(i)) {
			fwd[o.Seq] = append(fwd[o.Seq], OpID(i))
		}
	}
	for _, list := range fwd {
		slices.SortFunc(list, func(a, b OpID) int { return cmp.Compare(t.Ops[a].Start, t.Ops[b].Start) })
	}
	for i := range t.Ops {
		o := &t.Ops[i]
		if o.Seq < 0 || !t.isBackwardNode(OpID(i)) {
			continue
		}
		for _, f := range fwd[o.Seq] {
			if t.Ops[f].Thread != o.Thread && t.Ops[f].Start < o.Start {
				o.Forward = f
				break
			}
		}
	}
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
func (t *Trace) Label(id OpID) string {
	if id == NoOp {
		return "(no op)"
	}
	name := t.OpName(id)
	f := t.ForwardOf(id)
	if f == NoOp {
		return name
	}
	fo := &t.Ops[f]
	s := name + " (backward of " + t.OpName(f)
	if m := t.enclosingModule(t.innermostPy(fo.Thread, fo.Start)); m != NoPy {
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
