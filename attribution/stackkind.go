package attribution

import (
	"strings"
	"sync"

	"github.com/memscope/memscope/snapshot"
)

// kind says what an event's stack tells of the work that made it, for the
// phase and category rules. The bits are decided once per frame and once
// per stack (kinds), never per event.
type kind uint16

const (
	// kindBackward: autograd's backward. The engine's own thread runs no
	// Python, so its allocations and frees have no Python frame; Python
	// work it calls back into is under a torch frame that names backward
	// (Tensor.backward, CompiledFunctionBackward's runtime wrappers, a
	// custom Function's backward) or under checkpoint's recomputation
	// (torch/utils/checkpoint.py unpack_hook, recompute_fn).
	kindBackward kind = 1 << iota
	// kindOptimizer: under torch/optim, and not inside a closure the
	// optimizer calls (optimizer.step(closure) runs the forward and
	// backward inside the step: Lightning, LBFGS).
	kindOptimizer
	// kindModule: calls an nn.Module (torch/nn/modules/module.py) or enters
	// a compiled region (torch/_dynamo): model work, as a micro-batch's
	// forward is.
	kindModule
	// kindPython: the stack has a Python frame.
	kindPython
	// kindForward: runs inside a module's forward (nn.Module's
	// _call_impl) or a compiled region (torch/_dynamo): model work, not
	// the building or moving of the model.
	kindForward
	// kindLoad: builds, loads or moves a model's weights: nn.Module's
	// _apply (.to(), .cuda(), .half()), a torch module's __init__ or
	// reset_parameters, torch/nn/init.py, transformers' from_pretrained
	// and weight loading (modeling_utils.py), accelerate's
	// set_module_tensor_to_device, safetensors.
	kindLoad
	// kindKV: under transformers/cache_utils.py, the KV cache classes
	// (DynamicCache's torch.cat per token, StaticCache's preallocated
	// keys and values).
	kindKV
	// kindGather: a sharded data-parallel library gathering parameters
	// for compute: FSDP2's all-gather outputs and unsharded storage
	// (torch/distributed/fsdp/_fully_shard: allocate, alloc_storage, the
	// cast of the shard for the all-gather), FSDP1's padded unsharded
	// flat parameter, DeepSpeed ZeRO-3's partitioned parameters' all-gather,
	// DataParallel's replicas.
	kindGather
	// kindReduce: a sharded library's gradient reduction buffers (FSDP2's
	// reduce-scatter input, chunk_cat and foreach_reduce; FSDP1's;
	// Megatron's grad_data, kindCache.gradBufLine).
	kindReduce
	// kindZeroGrad: inside zero_grad (an optimizer's, torch/optim, or a
	// module's): on a free, the block freed is a gradient.
	kindZeroGrad
	kindDone // the stack's bits are computed
)

// frame bits, cached per FrameID.
const (
	fPython uint16 = 1 << iota
	fBackward
	fOptim
	fClosure
	fModule
	fForward
	fLoad
	fKV
	fGather
	fReduce
	fZeroGrad
	fDone
)

// kinds computes and caches stack kinds for one device's events.
type kinds struct {
	*kindCache
	// emptyAlloc and emptyFree are the kind of an empty stack on an alloc
	// and on a free: backward when the recording has Python frames for
	// the events of that action elsewhere (the engine's thread has none),
	// else nothing (stacks were not recorded).
	emptyAlloc, emptyFree kind
}

// kindCache holds the bits of each frame and stack of one snapshot's
// stack table, shared by its devices: one table per device made 10⁵
// devices cost devices × stacks.
type kindCache struct {
	st     *snapshot.Stacks
	frames []uint16
	stacks []kind
	// gradBufLine is the last line of Megatron's
	// _ParamAndGradBuffer.__init__ that allocates in this table (0: none).
	// That function makes param_data (with the distributed optimizer
	// only) and then grad_data, so its last allocating line is the
	// gradient buffer's and any earlier one the parameters'.
	gradBufLine int64
	// oomDevices are the first two devices whose traces hold an OOM,
	// found once (oomElsewhere).
	oomOnce    sync.Once
	oomDevices []int
}

// megatronBuffers is the file of Megatron's contiguous parameter and
// gradient buffers.
const megatronBuffers = "megatron/core/distributed/param_and_grad_buffer.py"

func newKindCache(st *snapshot.Stacks) *kindCache {
	c := &kindCache{st: st, frames: make([]uint16, len(st.Frames)), stacks: make([]kind, st.Len())}
	for i := range st.Frames {
		if fr := &st.Frames[i]; fr.Name == "__init__" && fr.Line > c.gradBufLine && strings.HasSuffix(normPath(fr.Filename), megatronBuffers) {
			c.gradBufLine = fr.Line
		}
	}
	return c
}

// newKindsShared returns the kinds of events over an existing cache.
func newKindsShared(c *kindCache, events []snapshot.Event) *kinds {
	k := &kinds{kindCache: c}
	var allocPy, freePy bool
	for i := 0; i < len(events) && !(allocPy && freePy); i++ {
		ev := &events[i]
		if ev.Stack == 0 {
			continue
		}
		switch ev.Action {
		case snapshot.ActionAlloc:
			allocPy = allocPy || k.stack(ev.Stack)&kindPython != 0
		case snapshot.ActionFreeRequested:
			freePy = freePy || k.stack(ev.Stack)&kindPython != 0
		}
	}
	if allocPy {
		k.emptyAlloc = kindBackward
	}
	if freePy {
		k.emptyFree = kindBackward
	}
	return k
}

// event returns the kind of an alloc or free_requested event; other
// actions have none.
func (k *kinds) event(ev *snapshot.Event) kind {
	switch ev.Action {
	case snapshot.ActionAlloc:
		if ev.Stack == 0 {
			return k.emptyAlloc
		}
	case snapshot.ActionFreeRequested:
		if ev.Stack == 0 {
			return k.emptyFree
		}
	default:
		return 0
	}
	return k.stack(ev.Stack)
}

// frameKinds are the kind bits a stack takes from any one of its frames.
var frameKinds = [...]struct {
	frame uint16
	kind  kind
}{{fPython, kindPython}, {fBackward, kindBackward}, {fModule, kindModule}, {fForward, kindForward}, {fLoad, kindLoad}, {fKV, kindKV}, {fGather, kindGather}, {fReduce, kindReduce}, {fZeroGrad, kindZeroGrad}}

// stack returns the kind bits of stack id.
func (k *kinds) stack(id snapshot.StackID) kind {
	if int(id) >= len(k.stacks) {
		return 0
	}
	if b := k.stacks[id]; b&kindDone != 0 {
		return b &^ kindDone
	}
	var b kind
	optimDone := false
	for _, fid := range k.st.Stack(id) { // innermost first
		f := k.frame(fid)
		for _, m := range frameKinds {
			if f&m.frame != 0 {
				b |= m.kind
			}
		}
		if !optimDone {
			switch {
			case f&fClosure != 0:
				optimDone = true
			case f&fOptim != 0:
				b |= kindOptimizer
				optimDone = true
			}
		}
	}
	if b&kindPython == 0 {
		b |= kindBackward
	}
	k.stacks[id] = b | kindDone
	return b
}

func (k *kinds) frame(id snapshot.FrameID) uint16 {
	if int(id) >= len(k.frames) {
		return 0
	}
	if f := k.frames[id]; f&fDone != 0 {
		return f
	}
	fr := k.st.Frame(id)
	f := frameBits(fr) | fDone
	if f&fLoad != 0 && fr.Line == k.gradBufLine && fr.Name == "__init__" && strings.HasSuffix(normPath(fr.Filename), megatronBuffers) {
		f = f&^fLoad | fReduce // Megatron's grad_data: the gradients' flat buffer
	}
	k.frames[id] = f
	return f
}

// checkpointRecompute names checkpoint.py's functions that run in
// backward (non-reentrant recomputation).
var checkpointRecompute = map[string]bool{"unpack_hook": true, "recompute_fn": true, "unpack": true}

func frameBits(fr *snapshot.Frame) uint16 {
	var f uint16
	if isPython(fr) {
		f |= fPython
	}
	path := normPath(fr.Filename)
	if strings.Contains(strings.ToLower(fr.Name), "closure") {
		f |= fClosure
	}
	torch := inTorch(path)
	f |= loadOrCacheBits(path, fr.Name, torch) | shardBits(path, fr.Name)
	if torch && fr.Name == "zero_grad" && (strings.HasSuffix(path, "torch/optim/optimizer.py") || strings.HasSuffix(path, "torch/nn/modules/module.py")) {
		f |= fZeroGrad
	}
	switch {
	case !torch && optimizerFile(path):
		f |= fOptim
	case !torch:
	case strings.Contains(path, "torch/optim/"):
		f |= fOptim
	case strings.HasSuffix(path, "torch/utils/checkpoint.py"):
		if checkpointRecompute[fr.Name] || strings.Contains(strings.ToLower(fr.Name), "backward") {
			f |= fBackward
		}
	case strings.Contains(strings.ToLower(fr.Name), "backward"):
		f |= fBackward
	case strings.HasSuffix(path, "torch/autograd/__init__.py") && (fr.Name == "grad" || fr.Name == "_make_grads"):
		f |= fBackward
	case strings.HasSuffix(path, "torch/nn/modules/module.py"):
		f |= fModule
		if fr.Name == "_call_impl" || fr.Name == "_wrapped_call_impl" {
			f |= fForward
		}
	case strings.Contains(path, "torch/_dynamo/"):
		f |= fModule | fForward
	}
	return f
}

// inTorch reports whether a normalised path (normPath) is inside the torch
// package.
func inTorch(path string) bool {
	return strings.HasPrefix(path, "torch/") || strings.Contains(path, "/torch/")
}

// moduleLoads names nn.Module's methods that allocate a model's weights:
// every dtype and device move goes through _apply.
var moduleLoads = map[string]bool{"_apply": true, "to_empty": true, "_load_from_state_dict": true, "load_state_dict": true}

// hfLoads names transformers' modeling_utils.py functions that build, load
// or move a model's weights.
var hfLoads = map[string]bool{
	"from_pretrained": true, "_from_config": true, "from_config": true, "_load_pretrained_model": true,
	"load_state_dict": true, "_load_state_dict_into_meta_model": true, "load_shard_file": true,
	"_init_weights": true, "_initialize_weights": true, "initialize_weights": true, "init_weights": true,
	"post_init": true, "tie_weights": true, "_tie_or_clone_weights": true, "tie_embeddings_and_encoder_decoder": true,
	"to": true, "cuda": true, "half": true, "float": true, "resize_token_embeddings": true,
}

// loadOrCacheBits returns fLoad for a frame that builds, loads or moves
// weights and fKV for one of transformers' KV cache classes, from the
// normalised path and the function's name.
func loadOrCacheBits(path, name string, torch bool) uint16 {
	switch {
	case torch && strings.HasSuffix(path, "torch/nn/modules/module.py"):
		if moduleLoads[name] {
			return fLoad
		}
	case torch && strings.HasSuffix(path, "torch/nn/init.py"):
		return fLoad
	case torch && strings.Contains(path, "torch/nn/modules/"):
		if name == "__init__" || name == "reset_parameters" {
			return fLoad
		}
	case strings.HasSuffix(path, "transformers/modeling_utils.py"):
		if hfLoads[name] {
			return fLoad
		}
	case strings.HasSuffix(path, "cache_utils.py"), kvAllocator(path, name):
		return fKV // transformers' cache classes, a fork's or a quantised copy's, a serving engine's pools
	case strings.HasSuffix(path, megatronBuffers):
		return fLoad // Megatron's contiguous parameter (and gradient, kindCache.gradBufLine) buffers
	case strings.Contains(path, "safetensors/"), name == "set_module_tensor_to_device":
		return fLoad
	case !torch && weightInit(name):
		return fLoad // a library's own weight builder (FlexGen's init_weight_list, a model's load_weights)
	case (strings.Contains(path, "vllm/") || strings.Contains(path, "sglang/")) && (name == "create_weights" || name == "load_weights" || name == "weight_loader"):
		return fLoad // a serving engine's layers making and loading their weights
	}
	return 0
}

// kvAllocator reports whether a frame is a serving engine's KV cache
// allocator: vLLM v0's worker/cache_engine.py (_allocate_kv_cache), v1's
// workers (initialize_kv_cache, _allocate_kv_cache_tensors,
// _reshape_kv_cache_tensors), SGLang's memory pools
// (mem_cache/memory_pool.py: the token-to-KV pools), and any function of a
// serving package named for its KV cache.
func kvAllocator(path, name string) bool {
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(path, "vllm/worker/cache_engine.py"):
		return true
	case strings.Contains(path, "sglang/") && strings.Contains(path, "mem_cache/"):
		return true
	case strings.Contains(path, "vllm/"), strings.Contains(path, "sglang/"), strings.Contains(path, "lmdeploy/"),
		strings.Contains(path, "tensorrt_llm/"):
		return strings.Contains(lower, "kv_cache") || strings.Contains(lower, "kvcache")
	}
	return false
}

// optimizerFile reports whether a file outside torch holds an optimizer
// whose allocations are optimizer state: Megatron's distributed optimizer
// (its fp32 main parameters and moments), DeepSpeed's ZeRO stages 1 and 2
// (flat fp32 partitions), bitsandbytes' and torchao's optimizers.
func optimizerFile(path string) bool {
	return strings.HasSuffix(path, "megatron/core/optimizer/distrib_optimizer.py") ||
		strings.HasSuffix(path, "deepspeed/runtime/zero/stage_1_and_2.py") ||
		strings.Contains(path, "bitsandbytes/optim/") || strings.Contains(path, "torchao/optim/")
}

// shardBits returns fGather or fReduce for a sharded data-parallel
// library's frames that allocate gathered parameters or gradient
// reduction buffers.
func shardBits(path, name string) uint16 {
	switch {
	case strings.Contains(path, "torch/distributed/fsdp/"):
		switch name {
		case "chunk_cat", "foreach_reduce", "_div_if_needed", "foreach_reduce_scatter_copy_in",
			"_reduce_grad", "_reduce_grad_no_shard", "_post_backward_hook", "post_backward":
			return fReduce
		case "allocate", "alloc_storage", "_to_dtype_if_needed", "foreach_all_gather", "foreach_all_gather_copy_out",
			"init_all_gather_outputs", "init_unsharded_param", "_alloc_padded_unsharded_flat_param",
			"_all_gather_flat_param", "unshard", "_unshard", "pre_unshard", "_use_low_precision_shard":
			return fGather
		}
	case strings.HasSuffix(path, "torch/nn/parallel/replicate.py"):
		if name == "replicate" || name == "_broadcast_coalesced_reshape" {
			return fGather // DataParallel's replicas of the module's parameters and buffers on the other GPUs
		}
	case strings.HasSuffix(path, "deepspeed/runtime/zero/partition_parameters.py"):
		if strings.Contains(name, "all_gather") || strings.Contains(name, "allgather") {
			return fGather
		}
	}
	return 0
}

// weightInit reports whether a function outside torch is named for
// building or loading weights.
func weightInit(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "init_weight") || strings.Contains(n, "load_weight") || strings.Contains(n, "load_state_dict") ||
		strings.Contains(n, "load_checkpoint") || strings.Contains(n, "load_pretrained")
}
