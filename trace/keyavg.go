package trace

import (
	"cmp"
	"math"
	"math/big"
	"slices"
	"strings"
)

// KeyAverage is one row of KeyAverages: what prof.key_averages() reports
// for the CPU-side events of one name (device-side rows such as kernels and
// gpu_user_annotation always have zero memory and are left out).
type KeyAverage struct {
	Name           string
	UserAnnotation bool // torch keys user_annotation rows apart from ops
	Count          int
	// DeviceMemory and SelfDeviceMemory are device_memory_usage and
	// self_device_memory_usage; CPUMemory and SelfCPUMemory the CPU ones.
	DeviceMemory, SelfDeviceMemory int64
	CPUMemory, SelfCPUMemory       int64
}

// keyAvgFiltered are the utility ops torch drops before building rows
// (profiler_util._filter_name).
var keyAvgFiltered = map[string]bool{
	"[memory]": true, "[OutOfMemory]": true,
	"profiler::_record_function_enter": true, "profiler::_record_function_enter_new": true,
	"profiler::_record_function_exit": true,
	"aten::is_leaf":                   true, "aten::output_nr": true, "aten::_version": true,
}

type kaNode struct {
	name     string
	ua       bool
	thread   ThreadID
	start    int64
	end      int64
	dev, cpu int64
	parent   int32
	children []int32
	dead     bool
}

// KeyAverages reproduces the memory columns of torch's key_averages() from
// the trace (torch/autograd/profiler.py _parse_kineto_results and
// profiler_util.py, torch 2.11):
//   - an event's memory is the sum of the memory events whose time lies in
//     its interval, on any thread, with torch's float rounding of the
//     bounds (ns → µs float → ns);
//   - children are found per thread by interval nesting, among cpu_op,
//     user_annotation, CUDA runtime/driver and overhead events;
//   - a node with the same name as its parent, when it is that parent's
//     only child, is folded into it;
//   - self = own total − the children's totals; rows sum per name.
//
// Memory events in no event's interval form a "[memory]" row, as in torch.
// Rows come sorted by |SelfDeviceMemory|, largest first, then by name.
func (t *Trace) KeyAverages() []KeyAverage {
	nodes := t.keyAvgNodes()
	loose := t.keyAvgMemory(nodes)
	keyAvgTree(nodes)
	nodes = append(nodes, loose...)

	type key struct {
		name string
		ua   bool
	}
	index := map[key]int{}
	var rows []KeyAverage
	for i := range nodes {
		n := &nodes[i]
		if n.dead {
			continue
		}
		k := key{n.name, n.ua}
		j, ok := index[k]
		if !ok {
			j = len(rows)
			index[k] = j
			rows = append(rows, KeyAverage{Name: n.name, UserAnnotation: n.ua})
		}
		r := &rows[j]
		r.Count++
		r.DeviceMemory += n.dev
		r.CPUMemory += n.cpu
		r.SelfDeviceMemory += n.dev
		r.SelfCPUMemory += n.cpu
		for _, c := range n.children {
			r.SelfDeviceMemory -= nodes[c].dev
			r.SelfCPUMemory -= nodes[c].cpu
		}
	}
	slices.SortStableFunc(rows, func(a, b KeyAverage) int {
		if c := cmp.Compare(abs64(b.SelfDeviceMemory), abs64(a.SelfDeviceMemory)); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return rows
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// keyAvgNodes collects the CPU-side events torch turns into FunctionEvents,
// sorted by thread, start and longer first.
func (t *Trace) keyAvgNodes() []kaNode {
	nodes := make([]kaNode, 0, len(t.Ops)+len(t.Calls))
	add := func(name StringID, ua bool, th ThreadID, start, dur int64) {
		s := t.Strings[name]
		if keyAvgFiltered[s] {
			return
		}
		if strings.HasPrefix(s, "ProfilerStep#") {
			s = "ProfilerStep*"
		}
		nodes = append(nodes, kaNode{name: s, ua: ua, thread: th, start: start, end: start + dur, parent: -1})
	}
	for i := range t.Ops {
		o := &t.Ops[i]
		add(o.Name, o.Kind == UserAnnotation, o.Thread, o.Start, o.Dur)
	}
	for i := range t.Calls {
		c := &t.Calls[i]
		add(c.Name, false, c.Thread, c.Start, c.Dur)
	}
	slices.SortStableFunc(nodes, func(a, b kaNode) int {
		return byThreadStart(a.thread, b.thread, a.start, b.start, a.end-a.start, b.end-b.start)
	})
	return nodes
}

// keyAvgMemory sums the memory events in each node's interval, the way
// MemRecordsAcc.in_interval does: bounds are start_ns/1000 and end_ns/1000
// as floats, multiplied back by 1000 in float and compared with the
// integer ns of the events. It returns "[memory]" nodes for the events in
// no interval.
func (t *Trace) keyAvgMemory(nodes []kaNode) []kaNode {
	n := len(t.Memory)
	starts := make([]int64, 0, n)
	devSum := make([]int64, 1, n+1)
	cpuSum := make([]int64, 1, n+1)
	var mems []int // indexes of [memory] events (not [OutOfMemory])
	for i := range t.Memory {
		m := &t.Memory[i]
		if m.OOM {
			continue
		}
		mems = append(mems, i)
		starts = append(starts, m.Time)
		dev, cpu := memUsage(m)
		devSum = append(devSum, devSum[len(devSum)-1]+dev)
		cpuSum = append(cpuSum, cpuSum[len(cpuSum)-1]+cpu)
	}
	cover := make([]int, len(starts)+1)
	var r big.Rat
	for i := range nodes {
		nd := &nodes[i]
		lo := ceilInt(divRound(&r, nd.start, 1000) * 1000)
		hi := floorInt(divRound(&r, nd.end, 1000) * 1000)
		a, _ := slices.BinarySearch(starts, lo) // bisect_left: first start ≥ lo
		b := len(starts)                        // bisect_right: first start > hi
		if hi < math.MaxInt64 {
			b, _ = slices.BinarySearch(starts, hi+1)
		}
		if b < a {
			b = a
		}
		nd.dev = devSum[b] - devSum[a]
		nd.cpu = cpuSum[b] - cpuSum[a]
		cover[a]++
		cover[b]--
	}
	var loose []kaNode
	depth := 0
	for j, i := range mems {
		depth += cover[j]
		if depth > 0 {
			continue
		}
		m := &t.Memory[i]
		dev, cpu := memUsage(m)
		loose = append(loose, kaNode{name: "[memory]", thread: m.Thread, start: m.Time, end: m.Time, dev: dev, cpu: cpu, parent: -1})
	}
	for i := range t.Memory {
		if m := &t.Memory[i]; m.OOM {
			dev, cpu := memUsage(m)
			loose = append(loose, kaNode{name: "[OutOfMemory]", thread: m.Thread, start: m.Time, end: m.Time, dev: dev, cpu: cpu, parent: -1})
		}
	}
	return loose
}

// memUsage splits a memory event's bytes the way torch does: device memory
// for CUDA, HIP and PrivateUse1, CPU memory for CPU, MKLDNN and IDEEP.
func memUsage(m *MemEvent) (dev, cpu int64) {
	switch {
	case isDeviceMem(m.DeviceType):
		return m.Bytes, 0
	case isCPUMem(m.DeviceType):
		return 0, m.Bytes
	}
	return 0, 0
}

// keyAvgTree nests nodes per thread and folds single same-named children
// into their parent, as EventList._build_tree does.
func keyAvgTree(nodes []kaNode) {
	nestParents(len(nodes), func(i int) (int64, int64) { return nodes[i].start, nodes[i].end },
		func(i int) ThreadID { return nodes[i].thread },
		func(child, parent int) {
			nodes[child].parent = int32(parent)
			nodes[parent].children = append(nodes[parent].children, int32(child))
		})
	for changed := true; changed; {
		changed = false
		for i := range nodes {
			n := &nodes[i]
			if n.dead || n.parent < 0 {
				continue
			}
			p := &nodes[n.parent]
			if p.name != n.name || len(p.children) != 1 {
				continue
			}
			p.children = n.children
			for _, c := range n.children {
				nodes[c].parent = n.parent
			}
			n.dead, n.children = true, nil
			changed = true
		}
	}
}
