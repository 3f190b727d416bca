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

func bruteTables(t *Trace, dev Device, split bool) (ops, mods map[[2]string]*Stats) {
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
		if split {
			return t.Label(id)
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
			for _, split := range []bool{false, true} {
				ops, mods := bruteTables(tr, dev, split)
				compareRows(t, fmt.Sprintf("%s %s OpTable(split=%v)", name, dev, split), tr.OpTable(dev, split), ops)
				if !split {
					compareRows(t, fmt.Sprintf("%s %s ModuleTable", name, dev), tr.ModuleTable(dev), mods)
				}
			}
		}
	}
}
