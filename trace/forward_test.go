package trace

import (
	"fmt"
	"strings"
	"testing"
)

// A torch.compile step, times in µs after synthBase. Sequence number 5 is
// recorded by the aten::zero_ of zero_grad (ops that make no autograd node
// record the number the next node will get), then by CompiledFunction,
// whose node CompiledFunctionBackward runs on the autograd thread:
//
//	thread 1/1                                         thread 1/"autograd"
//	Optimizer.zero_grad#AdamW.zero_grad [50, 70]       evaluate_function: CompiledFunctionBackward [300, 400]
//	  aten::zero_          [55, 60]   seq 5              CompiledFunctionBackward [301, 399] seq 5
//	Torch-Compiled Region: 0/0 [100, 200]                  aten::mm [310, 330]  +8192 @320
//	  CompiledFunction     [101, 199] seq 5                aten::mm [330, 350]  +2048 @340
//	    aten::mm           [120, 130] +4096 @125       evaluate_function: MmBackward0 [450, 470]
//	    aten::empty_strided [140, 142] +1024 @141        MmBackward0 [451, 469] seq 9
//	aten::linear           [230, 250] seq 9          evaluate_function: FooBackward0 [480, 490]
//	  aten::matmul         [232, 247] seq 9            FooBackward0 [481, 489] seq 8
//	aten::add_             [260, 262] seq 8
//	aten::copy_            [270, 272] seq 8
//
// CompiledFunctionBackward's forward is CompiledFunction (by name), not
// aten::zero_ (the first op with its number); MmBackward0's is aten::linear
// (no op matches its name, and aten::matmul is nested in aten::linear: one
// forward call); FooBackward0 has none (its two candidates are unrelated).
// With wrongFlow, a fwdbwd flow links aten::zero_ to
// CompiledFunctionBackward, as torch's link by number alone can.
func compileTrace(wrongFlow bool) string {
	mem := func(ts string, bytes, total int64, addr int64, tid string) synthEvent {
		return synthEvent{ph: "i", cat: "cpu_instant_event", name: "[memory]", pid: "1", tid: tid, ts: ts, extra: `"s": "t"`,
			args: fmt.Sprintf(`"Total Reserved": 20971520, "Total Allocated": %d, "Bytes": %d, "Device Id": 0, "Device Type": 1, "Addr": %d`,
				total, bytes, addr)}
	}
	x := func(cat, name, tid, ts, dur, args string) synthEvent {
		return synthEvent{ph: "X", cat: cat, name: name, pid: "1", tid: tid, ts: ts, dur: dur, args: args}
	}
	seq := func(n, fwd int) string { return fmt.Sprintf(`"Sequence number": %d, "Fwd thread id": %d`, n, fwd) }
	const bw = `"autograd"`
	evs := []synthEvent{
		x("user_annotation", "Optimizer.zero_grad#AdamW.zero_grad", "1", "50.000", "20.000", ""),
		x("cpu_op", "aten::zero_", "1", "55.000", "5.000", seq(5, 0)),
		x("user_annotation", "Torch-Compiled Region: 0/0", "1", "100.000", "100.000", ""),
		x("cpu_op", "CompiledFunction", "1", "101.000", "98.000", seq(5, 0)),
		x("cpu_op", "aten::mm", "1", "120.000", "10.000", ""),
		mem("125.000", 4096, 4096, 0x1000, "1"),
		x("cpu_op", "aten::empty_strided", "1", "140.000", "2.000", ""),
		mem("141.000", 1024, 5120, 0x3000, "1"),
		x("cpu_op", "aten::linear", "1", "230.000", "20.000", seq(9, 0)),
		x("cpu_op", "aten::matmul", "1", "232.000", "15.000", seq(9, 0)),
		x("cpu_op", "aten::add_", "1", "260.000", "2.000", seq(8, 0)),
		x("cpu_op", "aten::copy_", "1", "270.000", "2.000", seq(8, 0)),
		x("cpu_op", "autograd::engine::evaluate_function: CompiledFunctionBackward", bw, "300.000", "100.000", ""),
		x("cpu_op", "CompiledFunctionBackward", bw, "301.000", "98.000", seq(5, 1)),
		x("cpu_op", "aten::mm", bw, "310.000", "20.000", ""),
		mem("320.000", 8192, 13312, 0x5000, bw),
		x("cpu_op", "aten::mm", bw, "330.000", "20.000", ""),
		mem("340.000", 2048, 15360, 0x8000, bw),
		x("cpu_op", "autograd::engine::evaluate_function: MmBackward0", bw, "450.000", "20.000", ""),
		x("cpu_op", "MmBackward0", bw, "451.000", "18.000", seq(9, 1)),
		x("cpu_op", "autograd::engine::evaluate_function: FooBackward0", bw, "480.000", "10.000", ""),
		x("cpu_op", "FooBackward0", bw, "481.000", "8.000", seq(8, 1)),
	}
	if wrongFlow {
		evs = append(evs,
			synthEvent{ph: "s", cat: "fwdbwd", name: "fwdbwd", pid: "1", tid: "1", ts: "55.000", extra: `"id": 9`},
			synthEvent{ph: "f", cat: "fwdbwd", name: "fwdbwd", pid: "1", tid: bw, ts: "301.000", extra: `"id": 9, "bp": "e"`})
	}
	var parts []string
	for _, e := range evs {
		parts = append(parts, e.render(false))
	}
	return fmt.Sprintf(`{"schemaVersion": 1, "baseTimeNanoseconds": %d, "traceEvents": [%s]}`, int64(synthBase), strings.Join(parts, ",\n"))
}

// TestForwardCompiled: backward ops are matched to their forward op by
// name among the ops sharing their sequence number, with and without a
// fwdbwd flow that links by number alone.
func TestForwardCompiled(t *testing.T) {
	for _, wrongFlow := range []bool{false, true} {
		t.Run(fmt.Sprintf("flow=%v", wrongFlow), func(t *testing.T) {
			tr, err := Decode(strings.NewReader(compileTrace(wrongFlow)), "compiled.json")
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.CheckValid(); err != nil {
				t.Fatalf("CheckValid: %v", err)
			}
			op := func(name string) OpID {
				for i := range tr.Ops {
					if tr.OpName(OpID(i)) == name {
						return OpID(i)
					}
				}
				t.Fatalf("no op %s", name)
				return NoOp
			}
			name := func(id OpID) string {
				if id == NoOp {
					return "(none)"
				}
				return tr.OpName(id)
			}
			for node, want := range map[string]string{
				"CompiledFunctionBackward": "CompiledFunction",
				"MmBackward0":              "aten::linear",
				"FooBackward0":             "(none)",
			} {
				if got := name(tr.ForwardOf(op(node))); got != want {
					t.Errorf("ForwardOf(%s) = %s, want %s", node, got, want)
				}
			}
			for _, tc := range []struct {
				relUS, bytes int64
				label        string
			}{
				{320, 8192, "aten::mm (backward of CompiledFunction)"},
				{340, 2048, "aten::mm (backward of CompiledFunction)"},
				{125, 4096, "aten::mm"},
			} {
				if got := tr.Label(memAt(t, tr, tc.relUS, tc.bytes).Op); got != tc.label {
					t.Errorf("Label(op of %d B at %d µs) = %q, want %q", tc.bytes, tc.relUS, got, tc.label)
				}
			}
			tb := tr.OpTable(cuda0, true)
			rows := map[string]int64{}
			for _, r := range tb.Rows {
				rows[r.Name] = r.SelfAlloc
			}
			if rows["aten::mm (backward of CompiledFunction)"] != 10240 || rows["aten::mm"] != 4096 || rows["aten::empty_strided"] != 1024 {
				t.Errorf("OpTable self bytes = %v, want aten::mm (backward of CompiledFunction) 10240, aten::mm 4096, aten::empty_strided 1024", rows)
			}
			if _, bad := rows["aten::mm (backward of aten::zero_)"]; bad {
				t.Errorf("OpTable has a row for the backward of aten::zero_: %v", rows)
			}
		})
	}
}

func TestForwardName(t *testing.T) {
	for _, tc := range []struct {
		node, fwd string
		want      bool
	}{
		{"CompiledFunctionBackward", "CompiledFunction", true},
		{"AddmmBackward0", "aten::addmm", true},
		{"NativeLayerNormBackward0", "aten::native_layer_norm", true},
		{"ToCopyBackward0", "aten::_to_copy", true},
		{"NllLossBackward0", "aten::nll_loss_forward", true},
		{"MeanBackward1", "aten::mean", true},
		{"AddBackward0", "aten::add_", true},
		{"ScaledDotProductCudnnAttentionBackward0", "aten::_scaled_dot_product_cudnn_attention", true},
		{"CompiledFunctionBackward", "aten::zero_", false},
		{"MmBackward0", "aten::linear", false},
		{"AddmmBackward0", "aten::mm", false},
		{"torch::autograd::AccumulateGrad", "aten::add_", false},
		{"Backward0", "aten::x", false},
	} {
		if got := ForwardName(tc.node, tc.fwd); got != tc.want {
			t.Errorf("ForwardName(%q, %q) = %v, want %v", tc.node, tc.fwd, got, tc.want)
		}
	}
}
