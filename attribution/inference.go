package attribution

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
}

// inference derives the device's Inference from its phases and moments.
func (d *Device) inference() *Inference {
	if d.class.kv == nil {
		return nil
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
