package attribution

import (
	"strings"

	"github.com/memscope/memscope/snapshot"
)

// Inference is where an inference run's memory goes: the weights, the
// floor under every token; the KV cache and how it grew; and the
// activation peak of the largest prefill, above weights and cache.
// Device.Inference is nil unless a KV cache was recognised (kvcache.go).
type Inference struct {
	// Calls counts the generate() calls told by their caches (0 when the
	// cache was found by shape and the phases come from elsewhere).
	Calls int
	// Weights is the parameter category at the end, KVCache the kv cache
	// category when the first call ends (the end of the recording when
	// its cache is kept); KVRequested the cache tensors' own bytes.
	Weights, KVCache Bytes
	KVRequested      int64
	// Growing is true when the cache grows by a torch.cat per token
	// (DynamicCache); false when it was allocated once (StaticCache, a
	// pool). For a growing cache, KVAfterPrefill is the cache tensors'
	// requested bytes when the prefill ends, DecodeSteps the steps that
	// grew it, and GrowthPerStep (KVRequested − KVAfterPrefill) /
	// DecodeSteps: 2 × layers × batch × kv heads × head dim × element size.
	Growing        bool
	KVAfterPrefill int64
	DecodeSteps    int
	GrowthPerStep  int64
	// PeakPhase is the phase whose peak is described: "prefill", or
	// "generate" when the prefill is not told apart from the decode
	// steps; "" for the device's peak when there are no generate phases.
	// Peak is allocated bytes at that peak (after event PeakIndex) and
	// Activations what the work holds there: the activation, temporary
	// and input categories (the logits among them); the rest is weights,
	// cache and what no phase frees (unknown: a cuBLAS workspace, say).
	PeakPhase   string
	PeakIndex   int
	Peak        int64
	Activations int64
	// DecodePeak, DecodePeakIndex and DecodeActivations are the same at
	// the first call's decode peak (0 and -1 with no decode phase): a
	// compiled decode step's warm-up can hold more than the prefill.
	DecodePeak, DecodeActivations int64
	DecodePeakIndex               int

	// Engine names the serving engine whose allocator made the cache
	// ("vLLM", "SGLang", "LMDeploy", "TensorRT-LLM"; "" for transformers'
	// cache classes or a cache told by its shape), found from the stacks
	// of the cache's blocks; PoolFrame is that allocator's innermost frame
	// in the largest block's stack (0 when no frame names it). A cache
	// found only by its blocks' stacks (every block made before the
	// recording, or no history at all) is an engine's pool allocated once.
	Engine    string
	PoolFrame snapshot.FrameID
	// Trainer holds the gradient and optimizer state bytes at the end: a
	// trainer sharing the GPU with the engine (an RL job's actor beside
	// its rollout); zero when none.
	Trainer int64
}

// inference derives the device's Inference from its phases and moments.
func (d *Device) inference() *Inference {
	if d.class.kv == nil {
		return d.poolInference()
	}
	inf := &Inference{Calls: len(d.Phases.kv), Weights: d.End.Categories[Parameter]}
	end := d.End
	if len(d.Phases.kv) > 0 {
		r := d.Phases.kv[0]
		if r.kvEnd < len(d.Timeline.Events)-1 {
			end = d.At(r.kvEnd, "end of the first generate() call")
		}
		if r.growing {
			inf.Growing, inf.DecodeSteps = true, r.rounds-1
			inf.KVAfterPrefill = kvRequested(d.At(r.prefillEnd, "end of the prefill"))
		}
	}
	inf.KVCache, inf.KVRequested = end.Categories[KVCache], kvRequested(end)
	if inf.Growing && inf.DecodeSteps > 0 {
		inf.GrowthPerStep = (inf.KVRequested - inf.KVAfterPrefill) / int64(inf.DecodeSteps)
	}
	inf.PeakIndex, inf.Peak, inf.Activations = d.Peak.Index, d.Peak.Allocated, working(d.Peak)
	inf.DecodePeakIndex = -1
	for _, ph := range d.Phases.List {
		if len(d.Phases.kv) == 0 || ph.Step != 0 {
			continue
		}
		m := d.Peak
		if ph.PeakIndex != d.Peak.Index {
			m = d.At(ph.PeakIndex, "step 0 "+ph.Name+" peak")
		}
		switch ph.Name {
		case "prefill", "generate":
			inf.PeakPhase = ph.Name
			inf.PeakIndex, inf.Peak, inf.Activations = m.Index, m.Allocated, working(m)
		case "decode":
			inf.DecodePeakIndex, inf.DecodePeak, inf.DecodeActivations = m.Index, m.Allocated, working(m)
		}
	}
	return inf
}

// poolInference is the Inference of a device whose kv cache was found by
// its blocks' stacks alone (a serving engine's pool made before the
// recording began, or a dump with no history): the weights and the cache
// at the end, allocated once, the serving engine named from the stacks;
// nil when no block at the end is kv cache.
func (d *Device) poolInference() *Inference {
	end := d.End
	if end == nil || end.Categories[KVCache].Bytes == 0 {
		return nil
	}
	inf := &Inference{Weights: end.Categories[Parameter], KVCache: end.Categories[KVCache], KVRequested: kvRequested(end),
		PeakIndex: d.Peak.Index, Peak: d.Peak.Allocated, Activations: working(d.Peak), DecodePeakIndex: -1,
		Trainer: end.Categories[Gradient].Bytes + end.Categories[OptimizerState].Bytes}
	var largest int64
	for i := range end.Live {
		b := &end.Live[i]
		if b.PendingFree || end.Category[i] != KVCache || b.Size <= largest {
			continue
		}
		if f, engine := d.kvAllocatorFrame(b.Stack); f != 0 {
			largest, inf.PoolFrame, inf.Engine = b.Size, f, engine
		}
	}
	return inf
}

// kvAllocatorFrame returns the innermost frame of stack id that is a kv
// cache's allocator, and the serving engine its file belongs to ("" for
// transformers' cache classes); 0 when no frame is.
func (d *Device) kvAllocatorFrame(id snapshot.StackID) (snapshot.FrameID, string) {
	st := d.an.Snapshot.Stacks
	for _, f := range st.Stack(id) {
		if d.class.kinds.frame(f)&fKV == 0 {
			continue
		}
		path := normPath(st.Frame(f).Filename)
		for _, e := range [...]struct{ dir, name string }{{"vllm/", "vLLM"}, {"sglang/", "SGLang"}, {"lmdeploy/", "LMDeploy"}, {"tensorrt_llm/", "TensorRT-LLM"}} {
			if strings.Contains(path, e.dir) {
				return f, e.name
			}
		}
		return f, ""
	}
	return 0, ""
}

// working returns what the work holds at m: its activation, temporary and
// input bytes.
func working(m *Moment) int64 {
	return m.Categories[Activation].Bytes + m.Categories[Temporary].Bytes + m.Categories[Input].Bytes
}

// kvRequested returns the requested bytes of m's kv cache blocks.
func kvRequested(m *Moment) int64 {
	var n int64
	for i := range m.Live {
		if !m.Live[i].PendingFree && m.Category[i] == KVCache {
			n += m.Live[i].Requested
		}
	}
	return n
}
