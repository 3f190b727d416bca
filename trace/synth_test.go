package trace

import (
	"fmt"
	"strings"
)

// A small hand-made trace whose attribution is known by construction.
//
// Thread 1/1 (Python, forward), times in µs after the base:
//
//	user_annotation fwd           [100, 300]
//	python nn.Module: Net_0       [100, 300]  id 1
//	python nn.Module: Linear_0    [110, 150]  id 2, parent 1
//	cpu_op aten::linear           [120, 140]  seq 7, fwdbwd flow 1 starts here
//	cpu_op aten::mm               [125, 135]
//	cpu_op aten::empty            [135, 136]
//	python <built-in free>        [390, 410]  id 3
//	mem A1 t=130 +1024 @4096      → aten::mm
//	mem A2 t=135 +512  @8192      → aten::empty (tie with aten::mm's end: latest start)
//	mem A3 t=200 +2048 @12288     → fwd
//	mem A4 t=400 -512  @8192      → no op: python <built-in free>
//	mem C  t=130 +64 (CPU memory) → aten::mm, not device memory
//
// Thread 1/"autograd" (no Python):
//
//	cpu_op autograd::engine::evaluate_function: MmBackward0 [320, 380]
//	cpu_op MmBackward0            [321, 379]  seq 7, flow 1 ends here
//	cpu_op aten::mm               [330, 340]
//	mem B1 t=335 +4096 @16384     → aten::mm, backward of aten::linear in Linear_0
//
// cuda:0 running total: 1024, 1536, 3584, 7680 (peak, at B1), 7168.
const synthBase = 1_700_000_000_000_000_000

type synthEvent struct {
	ph, cat, name string
	pid, tid      string // raw JSON text
	ts, dur       string // µs after the base, as written
	args          string // raw JSON object members
	extra         string // raw JSON members (id, bp, s)
}

func synthEvents() []synthEvent {
	mem := func(ts string, bytes, total int64, addr int64, devType int, tid string) synthEvent {
		return synthEvent{ph: "i", cat: "cpu_instant_event", name: "[memory]", pid: "1", tid: tid, ts: ts, extra: `"s": "t"`,
			args: fmt.Sprintf(`"Total Reserved": 2097152, "Total Allocated": %d, "Bytes": %d, "Device Id": %d, "Device Type": %d, "Addr": %d`,
				total, bytes, map[int]int{0: -1, 1: 0}[devType], devType, addr)}
	}
	x := func(cat, name, tid, ts, dur, args string) synthEvent {
		return synthEvent{ph: "X", cat: cat, name: name, pid: "1", tid: tid, ts: ts, dur: dur, args: args}
	}
	const bw = `"autograd"`
	return []synthEvent{
		{ph: "M", name: "process_name", pid: "1", tid: "0", ts: "0", args: `"name": "python3"`},
		// The backward thread first, as Kineto writes it.
		x("cpu_op", "autograd::engine::evaluate_function: MmBackward0", bw, "320.000", "60.000", `"Sequence number": 7, "Fwd thread id": 1`),
		x("cpu_op", "MmBackward0", bw, "321.000", "58.000", `"Sequence number": 7, "Fwd thread id": 1`),
		{ph: "f", cat: "fwdbwd", name: "fwdbwd", pid: "1", tid: bw, ts: "321.000", extra: `"id": 1, "bp": "e"`},
		x("cpu_op", "aten::mm", bw, "330.000", "10.000", `"Input Dims": [[2, 2], [2, 2]]`),
		mem("335.000", 4096, 7680, 16384, 1, bw),
		x("user_annotation", "fwd", "1", "100.000", "200.000", ""),
		x("python_function", "nn.Module: Net_0", "1", "100.000", "200.000", `"Python parent id": null, "Python id": 1, "Python module id": 0`),
		x("python_function", "nn.Module: Linear_0", "1", "110.000", "40.000", `"Python parent id": 1, "Python id": 2, "Python module id": 0`),
		x("cpu_op", "aten::linear", "1", "120.000", "20.000", `"Sequence number": 7, "Fwd thread id": 0`),
		{ph: "s", cat: "fwdbwd", name: "fwdbwd", pid: "1", tid: "1", ts: "120.000", extra: `"id": 1`},
		x("cpu_op", "aten::mm", "1", "125.000", "10.000", ""),
		x("cpu_op", "aten::empty", "1", "135.000", "1.000", ""),
		mem("130.000", 1024, 1024, 4096, 1, "1"),
		mem("130.000", 64, 64, 99, 0, "1"),
		mem("135.000", 512, 1536, 8192, 1, "1"),
		mem("200.000", 2048, 3584, 12288, 1, "1"),
		x("python_function", "<built-in function free>", "1", "390.000", "20.000", `"Python parent id": null, "Python id": 3`),
		mem("400.000", -512, 7168, 8192, 1, "1"),
		{ph: "X", cat: "kernel", name: "gemm", pid: "0", tid: "7", ts: "126.000", dur: "5.000", args: `"device": 0, "stream": 7, "grid": [1, 1, 1]`},
		{ph: "i", name: "Iteration Start: PyTorch Profiler", pid: `"Traces"`, tid: `"Trace PyTorch Profiler"`, ts: "90.000", extra: `"s": "g"`},
	}
}

// render writes an event as Kineto would; absolute adds the base to ts.
func (e synthEvent) render(absolute bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"ph": %q`, e.ph)
	if e.cat != "" {
		fmt.Fprintf(&b, `, "cat": %q`, e.cat)
	}
	fmt.Fprintf(&b, `, "name": %q, "pid": %s, "tid": %s`, e.name, e.pid, e.tid)
	ts := e.ts
	if absolute {
		ts = absMicros(ts)
	}
	fmt.Fprintf(&b, `, "ts": %s`, ts)
	if e.dur != "" {
		fmt.Fprintf(&b, `, "dur": %s`, e.dur)
	}
	if e.extra != "" {
		b.WriteString(", " + e.extra)
	}
	if e.args != "" || e.ph == "X" {
		fmt.Fprintf(&b, `, "args": {%s}`, e.args)
	}
	b.WriteString("}")
	return b.String()
}

// absMicros turns "120.000" µs after the base into absolute epoch µs text.
func absMicros(rel string) string {
	whole, frac, _ := strings.Cut(rel, ".")
	var w int64
	fmt.Sscan(whole, &w)
	if frac == "" {
		return fmt.Sprint(synthBase/1000 + w)
	}
	return fmt.Sprintf("%d.%s", synthBase/1000+w, frac)
}

// synthTrace renders the synthetic trace in one of the shapes torch writes.
func synthTrace(form string) string {
	evs := synthEvents()
	var parts []string
	for _, e := range evs {
		parts = append(parts, e.render(form == "array"))
	}
	events := "[\n" + strings.Join(parts, ",\n") + "\n]"
	head := `"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320, "numSms": 132}], "profile_memory": 1, "displayTimeUnit": "ms"`
	base := fmt.Sprintf(`"baseTimeNanoseconds": %d`, int64(synthBase))
	switch form {
	case "array":
		return events
	case "base-last":
		return "{" + head + `, "traceEvents": ` + events + ", " + base + `, "traceName": "t.json"}`
	default:
		return "{" + head + ", " + base + `, "traceEvents": ` + events + `, "traceName": "t.json"}`
	}
}
