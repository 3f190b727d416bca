package attribution

import (
	"fmt"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// loop builds a snapshot of a loop of n steps, each allocating a batch,
// then `layers` activations under an nn.Module call from the same line,
// then (when train) backward work on the engine's thread (no Python
// frame) and an optimizer update under torch/optim, with the annotation
// ranges ann asks for. Events are 10 µs apart.
type loop struct {
	steps, layers int
	train         bool
	fusedOptim    bool   // the update allocates nothing
	ann           string // "", optimizer, profiler, record_function, dataloader
	setup         int    // setup allocations before the loop
}

func (l loop) build() *snapshot.Snapshot {
	s := &snapshot.Snapshot{Stacks: snapshot.NewStacks(), HasTraces: true}
	st := s.Stacks
	fr := func(name, file string, line int64) snapshot.FrameID {
		return st.InternFrame(snapshot.Frame{Name: name, Filename: file, Line: line})
	}
	main := fr("<module>", "/home/u/train.py", 40)
	batch := st.InternStack([]snapshot.FrameID{fr("<module>", "/home/u/train.py", 38)})
	layer := st.InternStack([]snapshot.FrameID{fr("forward", "/home/u/model.py", 12),
		fr("_call_impl", "/env/site-packages/torch/nn/modules/module.py", 1784), main})
	setup := st.InternStack([]snapshot.FrameID{fr("__init__", "/home/u/model.py", 5), fr("<module>", "/home/u/train.py", 30)})
	optim := st.InternStack([]snapshot.FrameID{fr("_multi_tensor_adam", "/env/site-packages/torch/optim/adam.py", 400),
		fr("step", "/env/site-packages/torch/optim/adam.py", 240), fr("<module>", "/home/u/train.py", 44)})
	zero := st.InternStack([]snapshot.FrameID{fr("zero_grad", "/env/site-packages/torch/optim/optimizer.py", 900),
		fr("<module>", "/home/u/train.py", 45)})
	var ev []snapshot.Event
	t := int64(1_000_000)
	addr := uint64(1 << 20)
	add := func(a snapshot.Action, stack snapshot.StackID, size int64, at uint64) uint64 {
		t += 10
		if a == snapshot.ActionAlloc {
			addr += 1 << 20
			at = addr
		}
		ev = append(ev, snapshot.Event{Action: a, Addr: at, Size: size, Stack: stack, TimeUS: t})
		return at
	}
	annotate := func(name string, start bool) {
		t += 10
		s.Annotations = append(s.Annotations, snapshot.Annotation{Name: name, Start: start, TimeUS: t})
	}
	for i := range l.setup {
		add(snapshot.ActionAlloc, setup, int64(4096+512*i), 0)
	}
	var grads []uint64
	for k := range l.steps {
		switch l.ann {
		case "profiler":
			annotate(fmt.Sprintf("ProfilerStep#%d", k), true)
		case "record_function":
			annotate("train_step", true)
		case "dataloader":
			annotate("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", true)
			annotate("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", false)
		}
		x := add(snapshot.ActionAlloc, batch, 1<<16, 0)
		var acts []uint64
		for range l.layers {
			acts = append(acts, add(snapshot.ActionAlloc, layer, 1<<18, 0))
		}
		if l.train {
			for _, g := range grads {
				add(snapshot.ActionFreeRequested, zero, 1<<14, g)
			}
			grads = grads[:0]
			for _, a := range acts {
				grads = append(grads, add(snapshot.ActionAlloc, 0, 1<<14, 0))
				add(snapshot.ActionFreeRequested, 0, 1<<18, a)
			}
			if l.ann == "optimizer" {
				annotate("Optimizer.step#Adam.step", true)
			}
			if !l.fusedOptim {
				tmp := add(snapshot.ActionAlloc, optim, 1<<14, 0)
				add(snapshot.ActionFreeRequested, optim, 1<<14, tmp)
			}
			if l.ann == "optimizer" {
				annotate("Optimizer.step#Adam.step", false)
			}
		} else {
			for _, a := range acts {
				add(snapshot.ActionFreeRequested, layer, 1<<18, a)
			}
		}
		add(snapshot.ActionFreeRequested, batch, 1<<16, x)
		switch l.ann {
		case "profiler":
			annotate(fmt.Sprintf("ProfilerStep#%d", k), false)
		case "record_function":
			annotate("train_step", false)
		}
	}
	s.Traces = [][]snapshot.Event{ev}
	return s
}

func TestStepSources(t *testing.T) {
	for _, c := range []struct {
		name   string
		l      loop
		source string
	}{
		{"optimizer", loop{steps: 6, layers: 3, train: true, ann: "optimizer", setup: 4}, "optimizer"},
		{"fused optimizer", loop{steps: 6, layers: 3, train: true, fusedOptim: true, ann: "optimizer", setup: 4}, "optimizer"},
		{"profiler", loop{steps: 5, layers: 3, train: true, ann: "profiler", setup: 2}, "profiler"},
		{"record_function", loop{steps: 5, layers: 3, train: true, ann: "record_function"}, "record_function"},
		{"dataloader", loop{steps: 7, layers: 2, ann: "dataloader", setup: 3}, "dataloader"},
		{"bare training loop", loop{steps: 6, layers: 4, train: true, setup: 5}, "pattern"},
		{"inference, 12 layers", loop{steps: 8, layers: 12, setup: 3}, "pattern"},
	} {
		t.Run(c.name, func(t *testing.T) {
			an := Analyze(c.l.build(), Options{Device: -1})
			p := an.Devices[0].Phases
			if p.Source != c.source || len(p.Steps) != c.l.steps {
				t.Fatalf("%d steps from %s (range %q), want %d from %s", len(p.Steps), p.Source, p.Range, c.l.steps, c.source)
			}
			var setup int
			for _, ph := range p.List {
				if ph.Step < 0 && ph.Name == "setup" {
					setup = ph.Last - ph.First + 1
				}
			}
			if setup != c.l.setup && c.source != "profiler" && c.source != "dataloader" {
				t.Errorf("setup holds %d events, want %d", setup, c.l.setup)
			}
			want := []string{"forward"}
			if c.l.train {
				want = []string{"forward", "backward", "optimizer"}
			}
			for _, s := range p.Steps {
				var got []string
				for _, pi := range s.Phases {
					got = append(got, p.List[pi].Name)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("step %d phases %v, want %v", s.Step, got, want)
				}
			}
		})
	}
}

// TestNoSteps: a stream that does not repeat has no steps, and says so.
func TestNoSteps(t *testing.T) {
	s := &snapshot.Snapshot{Stacks: snapshot.NewStacks(), HasTraces: true}
	var ev []snapshot.Event
	for i := range 50 {
		id := s.Stacks.InternStack([]snapshot.FrameID{s.Stacks.InternFrame(snapshot.Frame{Name: "f", Filename: "/a.py", Line: int64(i + 1)})})
		ev = append(ev, snapshot.Event{Action: snapshot.ActionAlloc, Addr: uint64(i+1) << 20, Size: int64(512 * (i + 1)), Stack: id, TimeUS: int64(i + 1)})
	}
	s.Traces = [][]snapshot.Event{ev}
	p := Analyze(s, Options{Device: -1}).Devices[0].Phases
	if len(p.Steps) != 0 || p.Source != "none" || p.Range != "" {
		t.Errorf("%d steps from %s (range %q), want none", len(p.Steps), p.Source, p.Range)
	}
}

// TestOneKeyIsNoLoop: sixteen blocks of one size made on one line (a list
// filled in a comprehension, then half of it freed) are not sixteen steps:
// the fragmentation what-if fixture has no loop at all.
func TestOneKeyIsNoLoop(t *testing.T) {
	s, err := snapshot.Open("../fixtures/whatif-fragoom/default/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	p := Analyze(s, Options{Device: -1}).Devices[0].Phases
	if p.Source != "none" || len(p.Steps) != 0 {
		t.Errorf("%d steps from %s, want none: the script has no loop", len(p.Steps), p.Source)
	}
}
