package budget

import "fmt"

// Overhead defaults, measured on the H200 captures in fixtures/ (torch 2.11,
// CUDA 13).
const (
	// CublasWorkspace is the cuBLAS workspace torch allocates through the
	// caching allocator per handle and stream on Hopper and newer GPUs
	// (CUBLAS_WORKSPACE_CONFIG ":4096:8", 8 × 4 MiB). Training has two: the
	// forward runs on the Python thread and backward on autograd's thread,
	// each with its own handle. Older GPUs use ":4096:2:16:8", 8.125 MiB.
	CublasWorkspace = 32 << 20
	// DefaultOutside is the memory used outside the caching allocator by
	// one process with no NCCL: CUDA context, kernel images, cuBLAS and
	// cuDNN handles. Every Llama fixture measured device used − reserved =
	// 766.8 MiB.
	DefaultOutside = 768 << 20
)

// DefaultWorkspace is the cuBLAS workspace memory of a run in mode on a
// Hopper-class GPU: one workspace per thread that runs matmuls.
func DefaultWorkspace(mode Mode) int64 {
	if mode == Infer {
		return CublasWorkspace
	}
	return 2 * CublasWorkspace
}

// moments is the number of optimizer state tensors per parameter.
func (c *calc) moments() int64 {
	switch c.s.Optimizer {
	case AdamW:
		return 2
	case SGDMomentum:
		return 1
	}
	return 0
}

// perParam is the model states' bytes per parameter, unsharded.
func (c *calc) perParam() int64 {
	if c.s.Mode == Infer {
		return c.d.weight
	}
	return c.d.weight + c.d.grad + c.d.master + c.moments()*c.d.state
}

// weights, grads, master, optimizerState and stepTemporaries are the parts
// of the model states.
func (c *calc) weights() Part {
	P := c.p.Total
	return Part{Name: fmt.Sprintf("weights (%s)", dtypeName(c.d.weight)), Bytes: P * c.d.weight, PerParam: c.d.weight,
		Formula: fmt.Sprintf("%s params × %d B", n(P), c.d.weight), Live: LiveWholeStep}
}

func (c *calc) grads() Part {
	P := c.p.Total
	live := LiveBackwardToOptimizer
	if c.s.Accumulation > 1 {
		live = LiveAccumulated
	}
	return Part{Name: fmt.Sprintf("gradients (%s)", dtypeName(c.d.grad)), Bytes: P * c.d.grad, PerParam: c.d.grad,
		Formula: fmt.Sprintf("%s params × %d B", n(P), c.d.grad), Live: live}
}

// sharded divides b over the ranks the optimizer state is sharded on.
func (c *calc) sharded(b int64) (int64, string) {
	if c.shard <= 1 {
		return b, ""
	}
	return ceilDiv(b, c.shard), fmt.Sprintf(" / %d ranks", c.shard)
}

func (c *calc) master() Part {
	P := c.p.Total
	b, by := c.sharded(P * c.d.master)
	return Part{Name: "fp32 master weights", Bytes: b, PerParam: c.d.master,
		Formula: fmt.Sprintf("%s params × %d B%s", n(P), c.d.master, by), Live: LiveWholeStep}
}

func (c *calc) optimizerState() Part {
	P, k := c.p.Total, c.moments()
	b, by := c.sharded(P * k * c.d.state)
	name := map[Optimizer]string{AdamW: "AdamW moments (exp_avg, exp_avg_sq)", SGDMomentum: "SGD momentum buffer", SGD: "none (SGD keeps no state)"}[c.s.Optimizer]
	return Part{Name: name, Bytes: b, PerParam: k * c.d.state,
		Formula: fmt.Sprintf("%s params × %d × %d B%s", n(P), k, c.d.state, by), Live: LiveWholeStep}
}

// stepTemporaries is what optimizer.step() allocates and frees: with
// foreach, AdamW computes sqrt(exp_avg_sq) for the whole parameter list at
// once, one state-dtype tensor per parameter; with bf16-mixed the gradients
// are also upcast to fp32 for the master update; fused needs none; the
// for-loop implementation needs them for one tensor at a time.
func (c *calc) stepTemporaries() Part {
	p := Part{Name: "optimizer step temporaries", Live: LiveOptimizerStep}
	if c.s.Optimizer != AdamW && c.d.master == 0 {
		p.Formula = "none: " + string(c.s.Optimizer) + " updates in place"
		return p
	}
	var per int64
	what := ""
	if c.s.Optimizer == AdamW {
		per += c.d.state
		what = "sqrt(exp_avg_sq)"
	}
	if c.d.master > 0 {
		per += 4
		if what != "" {
			what += " and "
		}
		what += "fp32 gradients"
	}
	switch c.s.OptimizerImpl {
	case Fused:
		p.Formula = "none: the fused kernel updates in place"
	case ForLoop:
		p.Bytes = c.p.Largest * per
		p.Formula = fmt.Sprintf("%s of the largest tensor: %s params × %d B", what, n(c.p.Largest), per)
	default:
		P := c.p.Total
		p.Bytes, _ = c.sharded(P * per)
		_, by := c.sharded(1)
		p.PerParam = per
		p.Formula = fmt.Sprintf("%s of every parameter at once (foreach): %s params × %d B%s", what, n(P), per, by)
	}
	return p
}

// workspace and outside are the overhead term's parts.
func (c *calc) workspace() Part {
	handles := "2 threads (forward, autograd)"
	if c.s.Mode == Infer {
		handles = "1 thread"
	}
	return Part{Name: "cuBLAS workspaces (in the allocator)", Bytes: c.s.Workspace, Live: LiveWholeStep,
		Formula: fmt.Sprintf("%s; set with --workspace", handles)}
}

func (c *calc) outsidePart() Part {
	return Part{Name: "CUDA context, kernels, libraries (outside the allocator)", Bytes: c.s.Outside,
		Formula: "measured 766.8 MiB on H200, torch 2.11, no NCCL; set with --overhead", Live: LiveOutside}
}
