package trace

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// nestedShape sizes the trace nestedTrace builds.
type nestedShape struct {
	Backward int // ops nested on the autograd thread (its first levels hold the backward nodes)
	Plain    int // ops nested on a thread with no backward node
	Py       int // python functions nested inside nn.Module: Net_0
	Nodes    int // backward nodes, evenly spaced down the autograd chain
}

// nestedWant is what attribution must say about one memory event,
// identified by its address.
type nestedWant struct {
	opTID   string // thread of the innermost op; "" for none
	opStart int64  // its start, ns after synthBase
	pyStart int64  // the python fallback's start, -1 for none
	fwdSeq  int32  // sequence number of ForwardOf(op), -1 for none
	module  bool   // Module is nn.Module: Net_0 (else none)
}

// nestedTrace builds a trace whose ops and python functions nest as deep
// as the shape says, with a memory event at the top of every op (before
// its child starts) and one at its bottom (after its child ended), and one
// at the bottom of every python function. Times in ns after synthBase:
//
//	thread 1: nn.Module: Net_0 [0, FE], py_k [1+k, FE-1-k] (k < Py),
//	          inside the innermost: aten::linear seq j [Py+10+100j, +50] (j < Nodes),
//	          each with a memory event; a memory event at FE-1-k (in py_k only)
//	thread "autograd", from S0: level L [S0+2L, S0+E-2L]; node j at levels
//	          j·sp ("autograd::engine::evaluate_function: LinearBackward0")
//	          and j·sp+1 ("LinearBackward0" seq j), aten::mm elsewhere
//	thread 2, from S1: level L aten::add, no sequence numbers
//
// so an op at level L of the autograd thread is the backward of the
// aten::linear with seq j (the deepest node above it), and nothing on
// thread 2 is a backward op.
func nestedTrace(sh nestedShape) (string, map[int64]nestedWant) {
	var b strings.Builder
	want := map[int64]nestedWant{}
	b.WriteString(`{"schemaVersion": 1, "baseTimeNanoseconds": `)
	b.WriteString(strconv.FormatInt(synthBase, 10))
	b.WriteString(`, "traceEvents": [`)
	first := true
	sep := func() {
		if !first {
			b.WriteString(",\n")
		}
		first = false
	}
	us := func(ns int64) string { return fmt.Sprintf("%d.%03d", ns/1000, ns%1000) }
	x := func(cat, name, tid string, start, end int64, args string) {
		sep()
		fmt.Fprintf(&b, `{"ph": "X", "cat": %q, "name": %q, "pid": 1, "tid": %s, "ts": %s, "dur": %s, "args": {%s}}`,
			cat, name, tid, us(start), us(end-start), args)
	}
	var addr, total int64
	mem := func(tid string, ns int64, w nestedWant) {
		addr += 512
		total += 512
		sep()
		fmt.Fprintf(&b, `{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": %s, "ts": %s, "s": "t", "args": {"Total Reserved": 0, "Total Allocated": %d, "Bytes": 512, "Device Id": 0, "Device Type": 1, "Addr": %d}}`,
			tid, us(ns), total, addr)
		want[addr] = w
	}

	fe := 4*int64(sh.Py) + 100*int64(sh.Nodes) + 100
	x("python_function", "nn.Module: Net_0", "1", 0, fe, `"Python id": 1, "Python parent id": null`)
	for k := range int64(sh.Py) {
		x("python_function", "f", "1", 1+k, fe-1-k, fmt.Sprintf(`"Python id": %d, "Python parent id": %d`, k+2, k+1))
	}
	for j := range int64(sh.Nodes) {
		s := int64(sh.Py) + 10 + 100*j
		x("cpu_op", "aten::linear", "1", s, s+50, fmt.Sprintf(`"Sequence number": %d, "Fwd thread id": 0`, j))
		mem("1", s+1, nestedWant{opTID: "1", opStart: s, pyStart: -1, fwdSeq: -1, module: true})
	}
	for k := int64(sh.Py) - 1; k >= 0; k-- {
		mem("1", fe-1-k, nestedWant{pyStart: 1 + k, fwdSeq: -1, module: true})
	}

	chain := func(tid string, from int64, n int, name func(L int) (string, string), fwd func(L int) int32) {
		e := 4*int64(n) + 10
		for L := range n {
			nm, args := name(L)
			x("cpu_op", nm, tid, from+2*int64(L), from+e-2*int64(L), args)
		}
		w := func(L int) nestedWant {
			f := fwd(L)
			return nestedWant{opTID: tid, opStart: from + 2*int64(L), pyStart: -1, fwdSeq: f, module: f >= 0}
		}
		for L := range n {
			mem(tid, from+2*int64(L)+1, w(L))
		}
		for L := n - 1; L >= 0; L-- {
			mem(tid, from+e-2*int64(L), w(L))
		}
	}
	sp := max(sh.Backward/max(sh.Nodes, 1), 2)
	s0 := fe + 1000
	chain(`"autograd"`, s0, sh.Backward, func(L int) (string, string) {
		switch j := L / sp; {
		case j < sh.Nodes && L%sp == 0:
			return evaluatePrefix + "LinearBackward0", ""
		case j < sh.Nodes && L%sp == 1:
			return "LinearBackward0", fmt.Sprintf(`"Sequence number": %d, "Fwd thread id": 1`, j)
		}
		return "aten::mm", ""
	}, func(L int) int32 {
		j := min(L/sp, sh.Nodes-1)
		if L < j*sp+1 {
			j--
		}
		return int32(j)
	})
	s1 := s0 + 4*int64(sh.Backward) + 1000
	chain("2", s1, sh.Plain, func(int) (string, string) { return "aten::add", "" }, func(int) int32 { return -1 })
	b.WriteString("]}")
	return b.String(), want
}

// TestNestedDeep decodes a trace with 10⁵ nested ops and 5·10⁴ nested
// python functions and checks every memory event's op, python fallback,
// forward op and module, the labels and the op and module tables. Climbing the op tree per event
// (innermostOp, ForwardOf, enclosingModule) made this quadratic: 25 s for
// ForwardOf alone; the input size, not a timer, is what catches that.
func TestNestedDeep(t *testing.T) {
	sh := nestedShape{Backward: 50_000, Plain: 50_000, Py: 50_000, Nodes: 10}
	if testing.Short() {
		sh = nestedShape{Backward: 5_000, Plain: 5_000, Py: 5_000, Nodes: 10}
	}
	checkNested(t, sh)
}

// TestNestedSmall runs the same checks on shapes small enough to read,
// including the edges: no node, one node, a node on every other level.
func TestNestedSmall(t *testing.T) {
	for _, sh := range []nestedShape{
		{Backward: 4, Plain: 3, Py: 2, Nodes: 1},
		{Backward: 10, Plain: 1, Py: 0, Nodes: 5},
		{Backward: 7, Plain: 0, Py: 1, Nodes: 0},
		{Backward: 100, Plain: 50, Py: 30, Nodes: 7},
	} {
		t.Run(fmt.Sprintf("%+v", sh), func(t *testing.T) { checkNested(t, sh) })
	}
}

func checkNested(t *testing.T, sh nestedShape) {
	t.Helper()
	text, want := nestedTrace(sh)
	tr, err := Decode(strings.NewReader(text), "nested.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.CheckValid(); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	if got, n := len(tr.Ops), sh.Nodes+sh.Backward+sh.Plain; got != n {
		t.Fatalf("len(Ops) = %d, want %d", got, n)
	}
	if len(tr.Memory) != len(want) {
		t.Fatalf("len(Memory) = %d, want %d", len(tr.Memory), len(want))
	}
	tid := func(th ThreadID) string { return unquote(tr.Threads[th].TID) }
	bad := 0
	for i := range tr.Memory {
		m := &tr.Memory[i]
		w := want[m.Addr]
		var errs []string
		switch {
		case w.opTID == "" && m.Op != NoOp:
			errs = append(errs, fmt.Sprintf("Op = %s, want none", tr.OpName(m.Op)))
		case w.opTID != "" && (m.Op == NoOp || tid(tr.Ops[m.Op].Thread) != strings.Trim(w.opTID, `"`) || tr.Ops[m.Op].Start-synthBase != w.opStart):
			errs = append(errs, fmt.Sprintf("Op = %d, want the op on %s at %d ns", m.Op, w.opTID, w.opStart))
		}
		if got := int64(-1); m.Py != NoPy || w.pyStart >= 0 {
			if m.Py != NoPy {
				got = tr.PyFuncs[m.Py].Start - synthBase
			}
			if got != w.pyStart {
				errs = append(errs, fmt.Sprintf("Py starts at %d ns, want %d", got, w.pyStart))
			}
		}
		gotSeq := int32(-1)
		if m.Op != NoOp {
			if f := tr.ForwardOf(m.Op); f != NoOp {
				gotSeq = tr.Ops[f].Seq
				if tr.OpName(f) != "aten::linear" {
					errs = append(errs, fmt.Sprintf("ForwardOf = %s, want aten::linear", tr.OpName(f)))
				}
			}
		}
		if gotSeq != w.fwdSeq {
			errs = append(errs, fmt.Sprintf("ForwardOf(Op) has seq %d, want %d", gotSeq, w.fwdSeq))
		}
		if gotMod := m.Module != NoPy && tr.Str(tr.PyFuncs[m.Module].Name) == "nn.Module: Net_0"; gotMod != w.module || (!gotMod && m.Module != NoPy) {
			errs = append(errs, fmt.Sprintf("Module = %d, want Net_0: %v", m.Module, w.module))
		}
		if len(errs) > 0 {
			if bad++; bad <= 10 {
				t.Errorf("memory event at %#x (%d ns): %s", m.Addr, m.Time-synthBase, strings.Join(errs, "; "))
			}
		}
	}
	if bad > 10 {
		t.Errorf("… and %d more events wrong", bad-10)
	}
	// The tables sum over the trees: each row's total is every event on a
	// chain through it.
	rows := map[string]Stats{}
	for _, r := range tr.OpTable(cuda0, false).Rows {
		rows[r.Name] = r
	}
	const b = 512
	check := func(name string, self, total int64) {
		t.Helper()
		if r := rows[name]; r.SelfAlloc != self || r.TotalAlloc != total {
			t.Errorf("OpTable row %s: self %d, total %d; want %d, %d", name, r.SelfAlloc, r.TotalAlloc, self, total)
		}
	}
	check("aten::add", 2*int64(sh.Plain)*b, 2*int64(sh.Plain)*b)
	if sh.Nodes > 0 && sh.Backward >= 2 {
		check(evaluatePrefix+"LinearBackward0", 2*int64(sh.Nodes)*b, 2*int64(sh.Backward)*b)
		check("LinearBackward0", 2*int64(sh.Nodes)*b, 2*int64(sh.Backward-1)*b)
	}
	var inNet int64
	for _, w := range want {
		if w.module {
			inNet += b
		}
	}
	if mt := tr.ModuleTable(cuda0); len(mt.Rows) != 1 || mt.Rows[0].TotalAlloc != inNet || mt.Rows[0].SelfAlloc != inNet {
		t.Errorf("ModuleTable = %+v, want one row, Net_0, with %d bytes self and total", mt.Rows, inNet)
	}
	// Labels of the deepest op of each thread.
	for i := range tr.Ops {
		id := OpID(i)
		if i+1 < len(tr.Ops) && tr.Ops[i+1].Thread == tr.Ops[i].Thread {
			continue
		}
		wantLabel := tr.OpName(id)
		if tid(tr.Ops[i].Thread) == "autograd" && sh.Nodes > 0 && tr.ForwardOf(id) != NoOp {
			wantLabel += " (backward of aten::linear in nn.Module: Net_0)"
		}
		if got := tr.Label(id); got != wantLabel {
			t.Errorf("Label(deepest op on %s) = %q, want %q", tid(tr.Ops[i].Thread), got, wantLabel)
		}
	}
}

// BenchmarkDecodeNested decodes nestedTrace at three depths (ops on each
// of two threads, and python functions, all nested that deep): the time
// per op should stay flat as the depth grows.
//
//	go test ./trace -run '^$' -bench DecodeNested -benchtime 3x
func BenchmarkDecodeNested(b *testing.B) {
	for _, depth := range []int{10_000, 30_000, 100_000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			text, _ := nestedTrace(nestedShape{Backward: depth, Plain: depth, Py: depth, Nodes: 10})
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			var ops int
			for b.Loop() {
				tr, err := Decode(strings.NewReader(text), "nested.json")
				if err != nil {
					b.Fatal(err)
				}
				ops = len(tr.Ops)
			}
			b.ReportMetric(float64(ops)*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// BenchmarkTablesNested builds the op table (backward ops split) and the
// module table of nestedTrace at three depths.
//
//	go test ./trace -run '^$' -bench TablesNested -benchtime 3x
func BenchmarkTablesNested(b *testing.B) {
	for _, depth := range []int{10_000, 30_000, 100_000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			text, _ := nestedTrace(nestedShape{Backward: depth, Plain: depth, Py: depth, Nodes: 10})
			tr, err := Decode(strings.NewReader(text), "nested.json")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				tr.OpTable(cuda0, true)
				tr.ModuleTable(cuda0)
			}
			b.ReportMetric(float64(len(tr.Memory))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
