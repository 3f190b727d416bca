package trace

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// bruteFill is the definition OpTable and ModuleTable compute without
// walking chains: every memory event of dev visits its chain of rows, the
// first gets the self figures, every distinct one the totals.
func bruteFill(t *Trace, dev Device, row func(name, kind string) *Stats, chain func(*MemEvent, func(name, kind string))) {
	peak := t.Peak(dev)
	live := map[int]bool{}
	for _, i := range t.liveAtPeak(dev, peak.Event) {
		live[i] = true
	}
	for i := range t.Memory {
		m := &t.Memory[i]
		if m.Device() != dev || m.OOM {
			continue
		}
		alloc := max(m.Bytes, 0)
		first := true
		seen := map[*Stats]bool{}
		chain(m, func(name, kind string) {
			r := row(name, kind)
			if first {
				first = false
				r.SelfAlloc += alloc
				r.SelfNet += m.Bytes
				if alloc > 0 {
					r.Allocs++
				}
				if live[i] {
					r.SelfPeakLive += m.Bytes
				}
			}
			if seen[r] {
				return
			}
			seen[r] = true
			r.TotalAlloc += alloc
			r.TotalNet += m.Bytes
			if alloc > 0 {
				r.TotalAllocs++
			}
			if live[i] {
				r.TotalPeakLive += m.Bytes
			}
		})
	}
}

func bruteTables(t *Trace, dev Device, rows OpRows) (ops, mods map[[2]string]*Stats) {
	ops, mods = map[[2]string]*Stats{}, map[[2]string]*Stats{}
	get := func(m map[[2]string]*Stats) func(name, kind string) *Stats {
		return func(name, kind string) *Stats {
			k := [2]string{name, kind}
			if m[k] == nil {
				m[k] = &Stats{Name: name, Kind: kind}
			}
			return m[k]
		}
	}
	name := func(id OpID) string {
		switch rows {
		case BackwardByInstance:
			return t.Label(id)
		case BackwardByOp:
			// The instance's label less its module: the op's own rows
			// are the sums of its instances'.
			l := t.Label(id)
			if i := strings.LastIndex(l, " in "); i >= 0 && strings.HasSuffix(l, ")") && strings.Contains(l, " (backward of ") {
				return l[:i] + ")"
			}
			return l
		}
		return t.OpName(id)
	}
	for i := range t.Ops {
		get(ops)(name(OpID(i)), t.Ops[i].Kind.String()).Calls++
	}
	bruteFill(t, dev, get(ops), func(m *MemEvent, visit func(name, kind string)) {
		switch {
		case m.Op != NoOp:
			for id := m.Op; id != NoOp; id = t.Ops[id].Parent {
				visit(name(id), t.Ops[id].Kind.String())
			}
		case m.Py != NoPy:
			for p := m.Py; p != NoPy; p = t.PyFuncs[p].Parent {
				visit(t.Str(t.PyFuncs[p].Name), "python_function")
			}
		default:
			visit("(none)", "(none)")
		}
	})
	for i := range t.PyFuncs {
		if t.PyFuncs[i].Module {
			r := get(mods)(t.Str(t.PyFuncs[i].Name), "nn.Module")
			r.Calls++
			if r.Path == "" {
				r.Path = t.ModulePath(PyID(i))
			}
		}
	}
	bruteFill(t, dev, get(mods), func(m *MemEvent, visit func(name, kind string)) {
		for p := m.Module; p != NoPy; p = t.enclosingModule(t.PyFuncs[p].Parent) {
			visit(t.Str(t.PyFuncs[p].Name), "nn.Module")
		}
	})
	return ops, mods
}

func compareRows(t *testing.T, what string, got *Table, want map[[2]string]*Stats) {
	t.Helper()
	if len(got.Rows) != len(want) {
		t.Errorf("%s: %d rows, want %d", what, len(got.Rows), len(want))
	}
	for _, r := range got.Rows {
		w := want[[2]string{r.Name, r.Kind}]
		if w == nil {
			t.Errorf("%s: extra row %q (%s)", what, r.Name, r.Kind)
			continue
		}
		if r != *w {
			t.Errorf("%s: row %q (%s) = %+v, want %+v", what, r.Name, r.Kind, r, *w)
		}
	}
}

// TestTablesByChain: OpTable and ModuleTable, which sum events over the op
// and python trees, equal the per-event walk of each chain that defines
// them, on the fixtures' traces and the synthetic ones.
func TestTablesByChain(t *testing.T) {
	nested, _ := nestedTrace(nestedShape{Backward: 60, Plain: 20, Py: 15, Nodes: 4})
	inputs := map[string]func() (*Trace, error){
		"llama-profiled": func() (*Trace, error) { return Open(filepath.Join(fixtureDir, "trace.json.gz")) },
		"capture-train":  func() (*Trace, error) { return Open(filepath.Join("..", "fixtures", "capture-train", "trace.json.gz")) },
		"synth":          func() (*Trace, error) { return Decode(strings.NewReader(synthTrace("object")), "synth.json") },
		"compiled":       func() (*Trace, error) { return Decode(strings.NewReader(compileTrace(true)), "compiled.json") },
		"nested":         func() (*Trace, error) { return Decode(strings.NewReader(nested), "nested.json") },
	}
	for name, open := range inputs {
		tr, err := open()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, dev := range tr.Devices() {
			for _, rows := range []OpRows{MergeBackward, BackwardByOp, BackwardByInstance} {
				ops, mods := bruteTables(tr, dev, rows)
				compareRows(t, fmt.Sprintf("%s %s OpTableRows(%d)", name, dev, rows), tr.OpTableRows(dev, rows), ops)
				if rows == MergeBackward {
					compareRows(t, fmt.Sprintf("%s %s ModuleTable", name, dev), tr.ModuleTable(dev), mods)
				}
			}
		}
	}
}

// TestModuleTypes: the rows of a module type are the sums of its
// instances' rows, every module row is in exactly one type, and the type's
// name is the instance's without its number.
func TestModuleTypes(t *testing.T) {
	tr, err := Open(filepath.Join(fixtureDir, "trace.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	dev := tr.PeakDevice()
	tb := tr.ModuleTable(dev)
	want := map[string]TypeStats{}
	for _, r := range tb.Rows {
		typ := ModuleType(r.Name)
		w := want[typ]
		w.Name, w.Instances = typ, w.Instances+1
		w.SelfAlloc += r.SelfAlloc
		w.SelfPeakLive += r.SelfPeakLive
		w.Allocs += r.Allocs
		w.Calls += r.Calls
		want[typ] = w
	}
	got := tb.ModuleTypes()
	if len(got) != len(want) {
		t.Fatalf("%d types, want %d", len(got), len(want))
	}
	if len(got) >= len(tb.Rows) {
		t.Fatalf("%d types for %d module rows: the llama trace has several instances of a type", len(got), len(tb.Rows))
	}
	for i, g := range got {
		w := want[g.Name]
		if g.Instances != w.Instances || g.SelfAlloc != w.SelfAlloc || g.SelfPeakLive != w.SelfPeakLive || g.Allocs != w.Allocs || g.Calls != w.Calls {
			t.Errorf("%s: %+v, want the sums %+v", g.Name, g, w)
		}
		if i > 0 && max(got[i-1].SelfAlloc, got[i-1].SelfFreed()) < max(g.SelfAlloc, g.SelfFreed()) {
			t.Errorf("types not sorted by self bytes allocated or freed at %s", g.Name)
		}
	}
	for in, want := range map[string]string{"nn.Module: Linear_14": "nn.Module: Linear", "nn.Module: Net": "nn.Module: Net",
		"nn.Module: Block_a": "nn.Module: Block_a", "x_": "x_", "nn.Module: Conv2d_0": "nn.Module: Conv2d"} {
		if got := ModuleType(in); got != want {
			t.Errorf("ModuleType(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpTableByOp: the default ops table names a backward row by operator
// and forward op, not by module instance: on the Llama trace the
// instances' rows (one per Linear and RMSNorm) fold into fewer rows, none
// naming a module, with the same self bytes in all.
func TestOpTableByOp(t *testing.T) {
	tr, err := Open(filepath.Join(fixtureDir, "trace.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	byOp, byInst := tr.OpTableRows(cuda0, BackwardByOp), tr.OpTableRows(cuda0, BackwardByInstance)
	var selfOp, selfInst int64
	for _, r := range byOp.Rows {
		selfOp += r.SelfAlloc
		if strings.Contains(r.Name, " in nn.Module: ") {
			t.Errorf("OpTableRows(BackwardByOp) row %q names a module instance", r.Name)
		}
	}
	inst := 0
	for _, r := range byInst.Rows {
		selfInst += r.SelfAlloc
		if strings.Contains(r.Name, " in nn.Module: ") {
			inst++
		}
	}
	if inst == 0 || len(byOp.Rows) >= len(byInst.Rows) || selfOp != selfInst {
		t.Errorf("by op: %d rows, %d B self; by instance: %d rows (%d naming a module), %d B; want fewer rows by op, the same bytes",
			len(byOp.Rows), selfOp, len(byInst.Rows), inst, selfInst)
	}
}
