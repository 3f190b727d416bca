package attribution

import (
	"path"
	"strings"

	"github.com/memscope/memscope/snapshot"
)

// nestedLayers reports whether the steps periodSteps cut are the layers of
// one pass through a model rather than steps: one forward through N
// transformer layers repeats the same allocations N times, as a loop of N
// steps does. The stacks tell them apart. Every allocation of the middle
// spans (the first holds what precedes the loop, the last what follows it)
// shares an outermost run of frames; when that run enters a module's call
// and then the model's own code (its forward, looping over its layers),
// and below it each allocation goes on into one and the same function (the
// layer's forward), the repeats are nested in one module call: layers.
// A loop of steps has allocations outside the model (the batch, the loss,
// an argmax) or inside several of the model's parts (embedding, layers,
// head), so its shared run ends at the user's line or the module call.
//
// It returns the layer's function ("LlamaDecoderLayer.forward" as
// file-less "forward" of its file's base name) and true for layers.
func nestedLayers(st *snapshot.Stacks, events []snapshot.Event, sp []span, k *kinds) (string, bool) {
	if len(sp) < 2 {
		return "", false
	}
	mid := sp
	if len(sp) >= 3 {
		mid = sp[1 : len(sp)-1]
	}
	// The shared outermost Python frames (prefix, outermost first) of
	// every allocation in the middle spans: C and C++ frames (stacks="all")
	// are left out, as torch's combined tracebacks interleave them.
	var prefix, py []snapshot.FrameID
	first := true
	pyFrames := func(id snapshot.StackID) []snapshot.FrameID {
		fr := st.Stack(id) // innermost first
		py = py[:0]
		for j := len(fr) - 1; j >= 0; j-- {
			if k.frame(fr[j])&fPython != 0 {
				py = append(py, fr[j])
			}
		}
		return py
	}
	// Each stack is looked at once: a stack seen before narrows the shared
	// frames no further, and goes into the same function below them.
	seen := make([]bool, st.Len())
	for _, s := range mid {
		for i := s.first; i <= s.last; i++ {
			ev := &events[i]
			if ev.Action != snapshot.ActionAlloc {
				continue
			}
			if ev.Stack == 0 || k.stack(ev.Stack)&kindPython == 0 {
				return "", false // C++ or autograd work: a backward is in the period
			}
			if int(ev.Stack) < len(seen) {
				if seen[ev.Stack] {
					continue
				}
				seen[ev.Stack] = true
			}
			fr := pyFrames(ev.Stack)
			if first {
				prefix = append([]snapshot.FrameID(nil), fr...)
				first = false
				continue
			}
			n := 0
			for n < len(prefix) && n < len(fr) && prefix[n] == fr[n] {
				n++
			}
			prefix = prefix[:n]
			if n == 0 {
				return "", false
			}
		}
	}
	if first {
		return "", false
	}
	// The run must enter a module's call, then the model's own code.
	called, inside := false, false
	for _, fid := range prefix {
		switch b := k.frame(fid); {
		case b&fForward != 0:
			called = true
		case called && !plumbingCall(st.Frame(fid)):
			inside = true
		}
	}
	if !inside {
		return "", false
	}
	// Below the run, each allocation enters one function: the layer's.
	layer := ""
	clear(seen)
	for _, s := range mid {
		for i := s.first; i <= s.last; i++ {
			ev := &events[i]
			if ev.Action != snapshot.ActionAlloc {
				continue
			}
			if int(ev.Stack) < len(seen) {
				if seen[ev.Stack] {
					continue
				}
				seen[ev.Stack] = true
			}
			fr := pyFrames(ev.Stack)
			var branch *snapshot.Frame
			for _, fid := range fr[min(len(prefix), len(fr)):] {
				f := st.Frame(fid)
				if k.frame(fid)&fForward != 0 || plumbingCall(f) {
					continue
				}
				branch = f
				break
			}
			if branch == nil {
				continue // allocated by the call machinery itself
			}
			if hookFrame(branch) {
				continue // a hook around the layer's call (FSDP's all-gather)
			}
			name := path.Base(normPath(branch.Filename)) + " " + branch.Name
			switch {
			case layer == "":
				layer = name
			case layer != name:
				return "", false
			}
		}
	}
	return layer, layer != ""
}

// plumbingCall reports whether a frame is nn.Module's call machinery or a
// wrapper around it (transformers' GradientCheckpointingLayer.__call__,
// its output-capturing decorators, functools wrappers): frames every
// module call passes through, not the model's own code.
func plumbingCall(f *snapshot.Frame) bool {
	p := normPath(f.Filename)
	switch {
	case strings.HasSuffix(p, "torch/nn/modules/module.py"):
		return true
	case strings.HasSuffix(p, "transformers/modeling_layers.py"), strings.HasSuffix(p, "transformers/utils/generic.py"),
		strings.Contains(p, "transformers/utils/"):
		return true
	case strings.HasSuffix(p, "functools.py"), strings.HasSuffix(p, "contextlib.py"):
		return true
	case strings.Contains(p, "torch/_dynamo/"), strings.Contains(p, "torch/utils/_contextlib.py"):
		return true
	}
	return false
}

// hookFrame reports whether a frame is a hook torch runs around a module's
// call (FSDP's pre- and post-forward, DDP, torch.utils.hooks): its
// allocations are the wrapping library's, not the layer's.
func hookFrame(f *snapshot.Frame) bool {
	p := normPath(f.Filename)
	return strings.Contains(p, "torch/distributed/") || strings.HasSuffix(p, "torch/utils/hooks.py") ||
		strings.Contains(p, "torch/nn/parallel/")
}
