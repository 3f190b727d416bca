package budget

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
	return Part{Kind: PartWeights, Ops: Operands{Params: P, Elem: c.d.weight}, Bytes: P * c.d.weight,
		PerParam: c.d.weight, Live: LiveWholeStep}
}

func (c *calc) grads() Part {
	P := c.p.Total
	live := LiveBackwardToOptimizer
	if c.s.Accumulation > 1 {
		live = LiveAccumulated
	}
	return Part{Kind: PartGrads, Ops: Operands{Params: P, Elem: c.d.grad}, Bytes: P * c.d.grad,
		PerParam: c.d.grad, Live: live}
}

// sharded divides b over the ranks the optimizer state is sharded on.
func (c *calc) sharded(b int64) int64 {
	if c.shard <= 1 {
		return b
	}
	return ceilDiv(b, c.shard)
}

func (c *calc) master() Part {
	P := c.p.Total
	return Part{Kind: PartMaster, Ops: Operands{Params: P, Elem: c.d.master, Ranks: c.shard},
		Bytes: c.sharded(P * c.d.master), PerParam: c.d.master, Live: LiveWholeStep}
}

func (c *calc) optimizerState() Part {
	P, k := c.p.Total, c.moments()
	kind := map[Optimizer]PartKind{AdamW: PartAdamWMoments, SGDMomentum: PartMomentumBuffer, SGD: PartNoOptimizerState}[c.s.Optimizer]
	return Part{Kind: kind, Ops: Operands{Params: P, Count: k, Elem: c.d.state, Ranks: c.shard},
		Bytes: c.sharded(P * k * c.d.state), PerParam: k * c.d.state, Live: LiveWholeStep}
}

// stepTemporaries is what optimizer.step() allocates and frees: with
// foreach, AdamW computes sqrt(exp_avg_sq) for the whole parameter list at
// once, one state-dtype tensor per parameter; with bf16-mixed the gradients
// are also upcast to fp32 for the master update; fused needs none; the
// for-loop implementation needs them for one tensor at a time.
func (c *calc) stepTemporaries() Part {
	p := Part{Live: LiveOptimizerStep}
	if c.s.Optimizer != AdamW && c.d.master == 0 {
		p.Kind, p.Ops = PartStepInPlace, Operands{Optimizer: c.s.Optimizer}
		return p
	}
	var per int64
	var temps StepTemps
	if c.s.Optimizer == AdamW {
		per += c.d.state
		temps |= TempSqrtMoments
	}
	if c.d.master > 0 {
		per += 4
		temps |= TempFP32Grads
	}
	switch c.s.OptimizerImpl {
	case Fused:
		p.Kind = PartStepFused
	case ForLoop:
		p.Kind, p.Ops = PartStepLargest, Operands{Params: c.p.Largest, Elem: per, Temps: temps}
		p.Bytes = c.p.Largest * per
	default:
		P := c.p.Total
		p.Kind, p.Ops = PartStepForeach, Operands{Params: P, Elem: per, Ranks: c.shard, Temps: temps}
		p.Bytes = c.sharded(P * per)
		p.PerParam = per
	}
	return p
}

// workspace and outside are the overhead term's parts.
func (c *calc) workspace() Part {
	threads := int64(2) // forward, autograd
	if c.s.Mode == Infer {
		threads = 1
	}
	return Part{Kind: PartWorkspaces, Ops: Operands{Count: threads}, Bytes: c.s.Workspace, Live: LiveWholeStep}
}

func (c *calc) outsidePart() Part {
	return Part{Kind: PartOutside, Bytes: c.s.Outside, Live: LiveOutside}
}
