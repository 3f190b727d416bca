package attribution

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// fuzzWorkloads are the small workload fixtures FuzzWorkloadAnalysis
// mutates: an OOM at the optimizer's first step, hand-made CUDA graphs in
// private pools, gradient accumulation, the eval-loop leak.
var fuzzWorkloads = []string{"oom-first-step", "cuda-graph", "grad-accum", "nca"}

var (
	fuzzSnapsOnce sync.Once
	fuzzSnaps     []*snapshot.Snapshot
)

// FuzzWorkloadAnalysis mutates a decoded workload fixture's trace the way
// damaged or odd recordings differ — entries swapped, dropped or
// duplicated, stacks exchanged among the file's own, sizes and streams
// changed, annotations dropped — and runs the analysis with every moment
// spec: the step, layer, category and pool rules must never panic, and the
// replay's invariants must hold.
func FuzzWorkloadAnalysis(f *testing.F) {
	for i := range fuzzWorkloads {
		f.Add(byte(i), []byte{})
		f.Add(byte(i), []byte{0, 5, 9, 1, 7, 3, 2, 2, 8, 3, 1, 1, 4, 0, 0})
	}
	f.Fuzz(func(t *testing.T, which byte, prog []byte) {
		if len(prog) > 512 {
			return
		}
		fuzzSnapsOnce.Do(func() {
			for _, n := range fuzzWorkloads {
				s, err := snapshot.Open("../fixtures/workloads/" + n + "/snapshot.pickle")
				if err != nil {
					panic(err)
				}
				fuzzSnaps = append(fuzzSnaps, s)
			}
		})
		base := fuzzSnaps[int(which)%len(fuzzSnaps)]
		s := *base
		s.Traces = make([][]snapshot.Event, len(base.Traces))
		for d := range base.Traces {
			s.Traces[d] = slices.Clone(base.Traces[d])
		}
		s.Annotations = slices.Clone(base.Annotations)
		mutateTrace(&s, prog)
		an := Analyze(&s, Options{Device: -1})
		for _, d := range an.Devices {
			if err := d.Timeline.CheckValid(); err != nil {
				t.Fatalf("timeline: %v", err)
			}
			specs := []string{"peak", "end", "oom", "event:0"}
			for _, ph := range d.Phases.List {
				if ph.Step >= 0 {
					specs = append(specs, fmt.Sprintf("step:%d:%s", ph.Step, ph.Name), fmt.Sprintf("step:%d:%s:1", ph.Step, ph.Name))
				}
			}
			for _, sp := range specs {
				if m, err := d.ParseMoment(sp); err == nil && m == nil {
					t.Fatalf("ParseMoment(%q) = nil, nil", sp)
				}
			}
		}
	})
}

// mutateTrace applies prog, three bytes an operation, to device 0's trace.
func mutateTrace(s *snapshot.Snapshot, prog []byte) {
	if len(s.Traces) == 0 {
		return
	}
	ev := s.Traces[0]
	for len(prog) >= 3 && len(ev) > 0 {
		op, a := prog[0], int(binary.LittleEndian.Uint16(prog[1:3]))
		prog = prog[3:]
		i := a % len(ev)
		j := (a * 7919) % len(ev)
		switch op % 8 {
		case 0: // swap two entries
			ev[i], ev[j] = ev[j], ev[i]
		case 1: // drop one
			ev = slices.Delete(ev, i, i+1)
		case 2: // duplicate one
			ev = slices.Insert(ev, i, ev[i])
		case 3: // another of the file's stacks
			if n := s.Stacks.Len(); n > 0 {
				ev[i].Stack = snapshot.StackID(a % n)
			}
		case 4: // another size, a multiple of 512
			ev[i].Size = int64(a+1) * 512
		case 5: // another stream
			ev[i].Stream = int64(a % 3)
		case 6: // drop the annotations
			s.Annotations = nil
		case 7: // another action, among the real ones
			ev[i].Action = snapshot.Action(1 + a%10)
		}
	}
	s.Traces[0] = ev
}
