package snapgen

import (
	"fmt"

	"github.com/memscope/memscope/snapshot"
)

// DeepOptions shape the snapshot Deep builds.
type DeepOptions struct {
	Blocks   int // live blocks at the end (and at the peak)
	Variants int // distinct user lines calling the model: stacks = 10 × Variants
	Windows  bool
}

// Deep builds, in memory, a snapshot of a shape that costs attribution the
// most per event: every block allocated is still live at the end, each with
// a deep stack (31 frames: a Hugging Face Llama layer's op under activation
// checkpointing, called by the Trainer and accelerate from a user's
// train.py), as an inference server's KV cache or a leak looks. Paths are
// absolute, as an unneutralised capture has them (Windows paths with
// opt.Windows). The trace allocates one 128 MiB segment per 64 blocks of
// 2 MiB; the end state holds them all.
func Deep(opt DeepOptions) *snapshot.Snapshot {
	st := snapshot.NewStacks()
	site := "/home/me/proj/.venv/lib/python3.12/site-packages/"
	repo := "/home/me/proj/"
	if opt.Windows {
		site = `C:\Users\me\proj\.venv\Lib\site-packages\`
		repo = `C:\Users\me\proj\`
	}
	path := func(prefix, rel string) string {
		if opt.Windows {
			b := []byte(rel)
			for i, c := range b {
				if c == '/' {
					b[i] = '\\'
				}
			}
			rel = string(b)
		}
		return prefix + rel
	}
	fr := func(prefix, rel string, line int64, name string) snapshot.FrameID {
		return st.InternFrame(snapshot.Frame{Filename: path(prefix, rel), Line: line, Name: name})
	}
	call := func() []snapshot.FrameID {
		return []snapshot.FrameID{
			fr(site, "torch/nn/modules/module.py", 1790, "_call_impl"),
			fr(site, "torch/nn/modules/module.py", 1779, "_wrapped_call_impl"),
		}
	}
	type op struct {
		leaf       snapshot.FrameID
		model      snapshot.FrameID
		moduleLine int64
	}
	linear := fr(site, "torch/nn/modules/linear.py", 134, "forward")
	ops := []op{
		{linear, fr(site, "transformers/models/llama/modeling_llama.py", 245, "forward"), 245},
		{linear, fr(site, "transformers/models/llama/modeling_llama.py", 246, "forward"), 246},
		{linear, fr(site, "transformers/models/llama/modeling_llama.py", 247, "forward"), 247},
		{fr(site, "torch/nn/functional.py", 6012, "scaled_dot_product_attention"), fr(site, "transformers/integrations/sdpa_attention.py", 92, "sdpa_attention_forward"), 0},
		{linear, fr(site, "transformers/models/llama/modeling_llama.py", 276, "forward"), 276},
		{linear, fr(site, "transformers/models/llama/modeling_llama.py", 175, "forward"), 175},
		{fr(site, "torch/nn/functional.py", 2380, "silu"), fr(site, "transformers/activations.py", 103, "forward"), 0},
		{linear, fr(site, "transformers/models/llama/modeling_llama.py", 176, "forward"), 176},
		{fr(site, "torch/_tensor.py", 44, "wrapped"), fr(site, "transformers/models/llama/modeling_llama.py", 70, "forward"), 0},
		{fr(site, "torch/nn/functional.py", 2921, "rms_norm"), fr(site, "transformers/models/llama/modeling_llama.py", 71, "forward"), 0},
	}
	outer := func(variant int) []snapshot.FrameID {
		var fs []snapshot.FrameID
		fs = append(fs, call()...)
		fs = append(fs, fr(site, "transformers/models/llama/modeling_llama.py", 322, "forward"))
		fs = append(fs,
			fr(site, "torch/utils/checkpoint.py", 1590, "_checkpoint_without_reentrant_generator"),
			fr(site, "torch/utils/checkpoint.py", 496, "checkpoint"),
			fr(site, "torch/_compile.py", 53, "inner"),
			fr(site, "torch/_dynamo/eval_frame.py", 1044, "_fn"),
			fr(site, "torch/utils/_contextlib.py", 120, "decorate_context"))
		fs = append(fs, fr(site, "transformers/modeling_layers.py", 93, "__call__"))
		fs = append(fs, fr(site, "transformers/models/llama/modeling_llama.py", 403, "forward"))
		fs = append(fs, fr(site, "transformers/utils/generic.py", 1068, "wrapper"))
		fs = append(fs, call()...)
		fs = append(fs, fr(site, "transformers/models/llama/modeling_llama.py", 460, "forward"))
		fs = append(fs, call()...)
		fs = append(fs,
			fr(site, "accelerate/utils/operations.py", 819, "forward"),
			fr(site, "torch/amp/autocast_mode.py", 44, "decorate_autocast"),
			fr(site, "transformers/trainer.py", 3801, "compute_loss"),
			fr(site, "transformers/trainer.py", 3745, "training_step"),
			fr(site, "transformers/trainer.py", 2520, "_inner_training_loop"),
			fr(site, "transformers/trainer.py", 2206, "train"),
			fr(repo, "train.py", int64(40+variant), "main"),
			fr(repo, "train.py", 90, "<module>"))
		return fs
	}
	variants := max(opt.Variants, 1)
	stacks := make([]snapshot.StackID, 0, len(ops)*variants)
	for v := range variants {
		o := outer(v)
		for _, op := range ops {
			fs := []snapshot.FrameID{op.leaf}
			fs = append(fs, call()...)
			fs = append(fs, op.model)
			fs = append(fs, o...)
			stacks = append(stacks, st.InternStack(fs))
		}
	}

	const block, perSeg = 2 << 20, 64
	s := &snapshot.Snapshot{Source: fmt.Sprintf("deep(%d blocks)", opt.Blocks), HasTraces: true,
		Stacks: st, Strings: snapshot.NewStrings()}
	var tr []snapshot.Event
	base, t := uint64(0x7f0000000000), int64(1_700_000_000_000_000)
	for i := 0; i < opt.Blocks; i += perSeg {
		addr := base + uint64(i/perSeg)*(perSeg*block)
		seg := snapshot.Segment{Address: addr, TotalSize: perSeg * block}
		n := min(perSeg, opt.Blocks-i)
		tr = append(tr, snapshot.Event{Action: snapshot.ActionSegmentAlloc, Addr: addr, Size: perSeg * block, TimeUS: t, Stack: stacks[i%len(stacks)]})
		for k := range perSeg {
			b := snapshot.Block{Address: addr + uint64(k)*block, Size: block}
			if k < n {
				id := stacks[(i+k)%len(stacks)]
				b.State, b.RequestedSize, b.Stack = snapshot.BlockActiveAllocated, block, id
				seg.AllocatedSize += block
				seg.ActiveSize += block
				seg.RequestedSize += block
				t++
				tr = append(tr, snapshot.Event{Action: snapshot.ActionAlloc, Addr: b.Address, Size: block, TimeUS: t, Stack: id})
			}
			seg.Blocks = append(seg.Blocks, b)
		}
		s.Segments = append(s.Segments, seg)
		t++
	}
	s.Traces = [][]snapshot.Event{tr}
	return s
}
