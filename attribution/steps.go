package attribution

import (
	"fmt"
	"sort"
	"strings"

	"github.com/memscope/memscope/snapshot"
)

// span is one step's events, first..last inclusive.
type span struct{ first, last int }

// stepSource says where step boundaries came from.
type stepSource struct {
	key       string // optimizer, profiler, record_function, dataloader, pattern, none
	rangeName string // record_function: the repeated range
}

// Step boundaries, in order of preference (the harness's marks are read
// before this, by harnessPhases):
//   - the END of each Optimizer.step range, by time (an END whose START
//     predates the recording counts): a step ends there even when nothing
//     was allocated inside (fused AdamW, SGD);
//   - the END of each ProfilerStep#N range;
//   - the END of each range of a repeated top-level record_function name;
//   - the START of each enumerate(DataLoader)#…__next__ range;
//   - the period of the allocation stream itself (periodSteps).
//
// A step that ends at a range's END also keeps the frees that follow it up
// to the next allocation (zero_grad, a gradient freed by the loop), so
// the next step starts with its first allocation.
func findSteps(s *snapshot.Snapshot, device int, events []snapshot.Event, ranges []snapshot.Range, k *kinds) ([]span, stepSource) {
	if len(events) == 0 {
		return nil, stepSource{key: "none"}
	}
	timed := events[len(events)-1].TimeUS != 0
	if timed {
		ends, _ := annotationTimes(s, device, func(n string) bool { return strings.HasPrefix(n, "Optimizer.step#") })
		if sp := spansFromEnds(events, ends); len(sp) > 0 {
			return trimSetup(events, sp), stepSource{key: "optimizer"}
		}
		ends, starts := annotationTimes(s, device, func(n string) bool { return strings.HasPrefix(n, "ProfilerStep#") })
		if sp := spansFromEnds(events, ends); len(sp) > 0 {
			return startAt(events, sp, starts), stepSource{key: "profiler"}
		}
		if name := repeatedRange(ranges); name != "" {
			ends, starts := annotationTimes(s, device, func(n string) bool { return n == name })
			if sp := spansFromEnds(events, ends); len(sp) > 0 {
				return startAt(events, sp, starts), stepSource{"record_function", name}
			}
		}
		_, starts = annotationTimes(s, device, func(n string) bool { return strings.HasPrefix(n, "enumerate(DataLoader)#") })
		if sp := spansFromStarts(events, starts); len(sp) > 1 {
			return sp, stepSource{key: "dataloader"}
		}
	}
	if sp := periodSteps(events); len(sp) > 1 {
		if layer, ok := nestedLayers(s.Stacks, events, sp, k); ok {
			// One pass through repeated layers: one step, from the
			// first allocation on.
			return []span{{firstAlloc(events, 0, len(events)-1), len(events) - 1}},
				stepSource{key: "one pass", rangeName: fmt.Sprintf("%s ×%d", layer, len(sp))}
		}
		return sp, stepSource{key: "pattern"}
	}
	if onePass(events, k, oomElsewhere(s, device, k) >= 0) {
		return []span{{firstAlloc(events, 0, len(events)-1), len(events) - 1}}, stepSource{key: "one pass"}
	}
	return nil, stepSource{key: "none"}
}

// annotationTimes returns the END and START times of device's annotations
// whose name passes match, each in time order.
func annotationTimes(s *snapshot.Snapshot, device int, match func(string) bool) (ends, starts []int64) {
	for _, i := range s.AnnotationsOf(device) {
		a := &s.Annotations[i]
		if !match(a.Name) {
			continue
		}
		if a.Start {
			starts = append(starts, a.TimeUS)
		} else {
			ends = append(ends, a.TimeUS)
		}
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	return ends, starts
}

// spansFromEnds cuts events at each end time: a step is the events after
// the previous step up to the end time, plus the frees that follow up to
// the next allocation. Steps with no allocation merge into the next. The
// events after the last end stay outside steps (setup comes first; what
// follows the last step is left to the caller), except a partial step that
// holds work of its own (see tailStep).
func spansFromEnds(events []snapshot.Event, ends []int64) []span {
	var out []span
	first := 0
	hasAlloc := false
	j := 0
	for _, e := range ends {
		// Events up to time e.
		for j < len(events) && events[j].TimeUS <= e {
			hasAlloc = hasAlloc || events[j].Action == snapshot.ActionAlloc
			j++
		}
		for j < len(events) && trailing(events[j].Action) {
			j++
		}
		if !hasAlloc || j == first {
			continue
		}
		out = append(out, span{first, j - 1})
		first, hasAlloc = j, false
	}
	return out
}

// spansFromStarts cuts events at each start time: a step runs from one
// start to the next; the last to the end of the events, when it holds an
// allocation.
func spansFromStarts(events []snapshot.Event, starts []int64) []span {
	var cuts []int
	for _, st := range starts {
		i := sort.Search(len(events), func(i int) bool { return events[i].TimeUS >= st })
		if i < len(events) && (len(cuts) == 0 || i > cuts[len(cuts)-1]) {
			cuts = append(cuts, i)
		}
	}
	var out []span
	for k, c := range cuts {
		end := len(events) - 1
		if k+1 < len(cuts) {
			end = cuts[k+1] - 1
		}
		if hasAllocIn(events, c, end) {
			out = append(out, span{c, end})
		}
	}
	return out
}

// trailing reports whether an event after a step's end range still
// belongs to the step: frees, and segments the allocator gives back.
func trailing(a snapshot.Action) bool {
	switch a {
	case snapshot.ActionFreeRequested, snapshot.ActionFreeCompleted, snapshot.ActionSegmentFree,
		snapshot.ActionSegmentUnmap, snapshot.ActionSnapshot, snapshot.ActionAnnotate:
		return true
	}
	return false
}

func hasAllocIn(events []snapshot.Event, first, last int) bool {
	for i := first; i <= last; i++ {
		if events[i].Action == snapshot.ActionAlloc {
			return true
		}
	}
	return false
}

// trimSetup moves the start of the first step past the setup that precedes
// it (building the model, the optimizer): the first step starts at the
// first allocation of the same stack and size as the second step's first
// allocation, else of the same stack, when there is one.
func trimSetup(events []snapshot.Event, sp []span) []span {
	if len(sp) < 2 {
		return sp
	}
	k := firstAlloc(events, sp[1].first, sp[1].last)
	if k < 0 {
		return sp
	}
	// The same stack and size, else the same stack (the batch may grow).
	for _, sized := range []bool{true, false} {
		for i := sp[0].first; i <= sp[0].last; i++ {
			ev := &events[i]
			if ev.Action == snapshot.ActionAlloc && ev.Stack == events[k].Stack && (!sized || ev.Size == events[k].Size) {
				sp[0].first = i
				return sp
			}
		}
	}
	return sp
}

// startAt moves the first step's start to the first start time, when
// ranges mark where steps begin.
func startAt(events []snapshot.Event, sp []span, starts []int64) []span {
	if len(starts) == 0 {
		return sp
	}
	i := sort.Search(len(events), func(i int) bool { return events[i].TimeUS >= starts[0] })
	if i > sp[0].first && i <= sp[0].last {
		sp[0].first = i
	}
	return sp
}

func firstAlloc(events []snapshot.Event, first, last int) int {
	for i := first; i <= last; i++ {
		if events[i].Action == snapshot.ActionAlloc {
			return i
		}
	}
	return -1
}

// repeatedRange returns the top-level record_function name that repeats
// most often (at least twice) and is none of torch's own names; "" when
// there is none.
func repeatedRange(ranges []snapshot.Range) string {
	count := map[string]int{}
	for _, r := range ranges {
		if r.Depth != 0 || r.EndUS == 0 || ownRange(r.Name) {
			continue
		}
		count[r.Name]++
	}
	best, n := "", 1
	for name, c := range count {
		if c > n || (c == n && name < best) {
			best, n = name, c
		}
	}
	return best
}

// ownRange reports whether a range name is one torch, a library or memscope
// writes by itself, not the user's: torch's own (Optimizer., DataLoader,
// ProfilerStep, aten::), collectives (nccl:…, gloo:…, c10d::…), and any
// "::"-named library range (FSDP::pre_forward per wrapped module,
// DDP::…, autograd::…), which repeat once per layer or bucket, never once
// per step.
func ownRange(name string) bool {
	for _, p := range []string{"Optimizer.", "enumerate(DataLoader)#", "ProfilerStep#", "memscope/", "##", "aten::", "nccl:", "gloo:", "c10d", "record_param_comms"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return strings.Contains(name, "::")
}

// oomElsewhere returns the first other device of s whose trace ran out of
// memory (-1: none): one process driving several GPUs (DataParallel's
// replicas, a model split over devices by device_map="auto") stops at one
// device's OOM, and every device's recording is then the same cut-short
// pass. The devices with an OOM are found once per snapshot (k's cache):
// asked by every device, a scan of every trace would grow with the square
// of the devices.
func oomElsewhere(s *snapshot.Snapshot, device int, k *kinds) int {
	k.oomOnce.Do(func() {
		for d, evs := range s.Traces {
			if hasOOM(evs) {
				k.oomDevices = append(k.oomDevices, d)
				if len(k.oomDevices) == 2 {
					break // the first other than any one device is among these two
				}
			}
		}
	})
	for _, d := range k.oomDevices {
		if d != device {
			return d
		}
	}
	return -1
}

// onePass reports whether a recording in which no step repeats is one
// pass of a model's work: a model ran (an allocation calls an nn.Module)
// and either the recording holds an out-of-memory error (a forward that
// ran out, torchtitan's dump of its first step; or another device's
// OOM, oomElsewhere, in a process driving several GPUs) or a backward (a tenth
// of its allocations or more: one training pass with no optimizer). A
// forward-only stream that does not repeat (a server's requests of
// varying shapes) is no one pass: it says nothing of its steps.
func onePass(events []snapshot.Event, k *kinds, oomElsewhere bool) bool {
	model, oom := false, oomElsewhere
	allocs, backward := 0, 0
	for i := range events {
		ev := &events[i]
		switch ev.Action {
		case snapshot.ActionOOM:
			oom = true
		case snapshot.ActionAlloc:
			allocs++
			kd := k.event(ev)
			model = model || kd&kindModule != 0
			if kd&kindBackward != 0 {
				backward++
			}
		}
	}
	return model && (oom || 10*backward >= allocs)
}

// hasOOM reports whether events hold an out-of-memory error.
func hasOOM(events []snapshot.Event) bool {
	for i := range events {
		if events[i].Action == snapshot.ActionOOM {
			return true
		}
	}
	return false
}
