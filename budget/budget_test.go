package budget

import (
	"testing"
)

// The documented shape: Llama-3.2-1B (testdata/llama-3.2-1b.json, the
// public config): 16 layers, hidden h = 2048, 32 heads of 64, 8 KV heads,
// intermediate 8192 (gated SiLU MLP), vocab V = 128256, tied embeddings;
// micro-batch 4 × 4096 = 16384 tokens, bf16 autocast over fp32 weights,
// foreach AdamW, no checkpointing, plain cross-entropy on fp32 logits.
// Every want below is worked out by hand in its comment.
func llama1B(t *testing.T) *Prediction {
	t.Helper()
	m, warns, err := LoadConfig("testdata/llama-3.2-1b.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("LoadConfig warnings = %+v, want none", warns)
	}
	s := DefaultShape()
	s.Batch, s.Seq = 4, 4096
	p, err := Predict(m, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLlama1BParams(t *testing.T) {
	p := llama1B(t).Params
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		// 128256 × 2048
		{"Embedding", p.Embedding, 262_668_288},
		// q 2048·2048 + k 2048·512 + v 2048·512 + o 2048·2048 = 10,485,760
		// + gate, up, down 3 × 2048·8192 = 50,331,648 → 60,817,408 matmul
		{"LayerMatmul", p.LayerMatmul, 60_817_408},
		// + two RMSNorm weights 2 × 2048
		{"PerLayer", p.PerLayer, 60_821_504},
		{"LMHead", p.LMHead, 0}, // tied
		// 262,668,288 + 16 × 60,821,504 + 2048 (final norm) ≈ 1.24 B
		{"Total", p.Total, 1_235_814_400},
		// 16 × 60,817,408 + 262,668,288 (the tied matrix, used by lm_head)
		{"Matmul", p.Matmul, 1_235_746_816},
	} {
		if c.got != c.want {
			t.Errorf("Params().%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// partOf returns the part of term k of kind kind.
func partOf(t *testing.T, p *Prediction, k TermKey, kind PartKind) Part {
	t.Helper()
	for _, pt := range p.Terms[k].Parts {
		if pt.Kind == kind {
			return pt
		}
	}
	t.Fatalf("%s has no part of kind %d", k, kind)
	return Part{}
}

// partBytes returns the bytes of the part of term k of kind kind.
func partBytes(t *testing.T, p *Prediction, k TermKey, kind PartKind) int64 {
	t.Helper()
	return partOf(t, p, k, kind).Bytes
}

func TestLlama1BModelStates(t *testing.T) {
	p := llama1B(t)
	// fp32 weights 4 + fp32 gradients 4 + two fp32 Adam moments 8 = 16 B/param.
	if p.PerParam != 16 {
		t.Errorf("PerParam = %d, want 16", p.PerParam)
	}
	const P = 1_235_814_400
	for _, c := range []struct {
		part PartKind
		want int64
	}{
		{PartWeights, P * 4},      // 4,943,257,600
		{PartGrads, P * 4},        // 4,943,257,600
		{PartAdamWMoments, P * 8}, // 9,886,515,200
		{PartStepForeach, P * 4},  // foreach sqrt(exp_avg_sq): 4,943,257,600
	} {
		if got := partBytes(t, p, ModelStates, c.part); got != c.want {
			t.Errorf("model states part %d = %d, want %d", c.part, got, c.want)
		}
	}
	// The largest the term holds: in the optimizer step, weights + grads +
	// moments + temporaries = 20 B/param = 24,716,288,000.
	if got := p.Terms[ModelStates].Bytes; got != P*20 {
		t.Errorf("model states = %d, want %d", got, int64(P*20))
	}
}

func TestLlama1BActivations(t *testing.T) {
	p := llama1B(t)
	// Per token of one layer (h = 2048, K = 8 × 64 = 512, I = 8192):
	//   residual stream, 2 fp32 tensors      2 × 2048 × 4    = 16,384
	//   2 RMSNorms: fp32 normalized + 1/rms  2 × (8192 + 4)  = 16,392
	//   bf16 input casts of q,k,v,gate,up    5 × 2048 × 2    = 20,480
	//   q, k, v for SDPA                     (2048 + 1024)×2 =  6,144
	//   attention output                     2048 × 2        =  4,096
	//   logsumexp                            32 × 4          =    128
	//   MLP: 4 tensors of 8192 in bf16       4 × 8192 × 2    = 65,536
	//                                                 total  = 129,160
	const perToken = 129_160
	if p.Layer.PerToken != perToken {
		t.Errorf("Layer.PerToken = %d, want %d", p.Layer.PerToken, perToken)
	}
	if p.Layer.Full != perToken*16384 { // 2,116,157,440 per layer
		t.Errorf("Layer.Full = %d, want %d", p.Layer.Full, perToken*16384)
	}
	// The rule of thumb: 34 × s × b × h = 34 × 4096 × 4 × 2048.
	if p.Layer.Rule != 1_140_850_688 {
		t.Errorf("Layer.Rule = %d, want 1,140,850,688", p.Layer.Rule)
	}
	// 16 layers × 2,116,157,440
	if got := partBytes(t, p, Activations, PartLayers); got != 33_858_519_040 {
		t.Errorf("16 layers = %d, want 33,858,519,040", got)
	}
	// autocast's bf16 weight copies: 1,235,746,816 matmul params × 2 B
	if got := partBytes(t, p, Activations, PartWeightCopies); got != 2_471_493_632 {
		t.Errorf("weight copies = %d, want 2,471,493,632", got)
	}
	// Full checkpointing keeps each layer's fp32 input: 16384 × 2048 × 4 =
	// 134,217,728 per layer, 2,147,483,648 (2 GiB) for 16.
	s := p.Shape
	s.Checkpointing = FullCheckpointing
	q, err := Predict(p.Model, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := partBytes(t, q, Activations, PartLayersFullCkpt); got != 2_147_483_648 {
		t.Errorf("16 layers, full checkpointing = %d, want 2,147,483,648", got)
	}
}

func TestLlama1BLogits(t *testing.T) {
	p := llama1B(t)
	const fp32 = 16384 * 128256 * 4 // 8,405,385,216: tokens × vocab × 4 B
	for _, c := range []struct {
		part PartKind
		want int64
	}{
		{PartLogits, fp32 / 2},
		{PartLogitsFP32, fp32},
		{PartLogSoftmax, fp32},
		{PartLogSoftmaxGrad, fp32},
		{PartLogitsGradFP32, fp32},
	} {
		if got := partBytes(t, p, LogitsLoss, c.part); got != c.want {
			t.Errorf("logits part %d = %d, want %d", c.part, got, c.want)
		}
	}
	// The most at once: at the start of backward, the saved log-softmax and
	// its two gradients, 3 × 8,405,385,216.
	if got := p.Terms[LogitsLoss].Bytes; got != 3*fp32 {
		t.Errorf("logits and loss = %d, want %d", got, int64(3*fp32))
	}
}

func TestLlama1BPhases(t *testing.T) {
	p := llama1B(t)
	const (
		floor = 4_943_257_600 + 9_886_515_200 + 64<<20 + 16384*8 // weights, moments, 2 cuBLAS workspaces, ids
		acts  = 134_217_728 + 2_097_152 + 33_858_519_040 +       // embedding output, rotary tables, 16 layers
			2_471_493_632 + 134_283_264 + 67_108_864 // weight copies, final norm, lm_head's input cast
		fp32 = 8_405_385_216
		// Forward: + final hidden states (fp32) + bf16 logits, fp32 copy, log-softmax.
		forward = floor + acts + 134_217_728 + fp32/2 + fp32 + fp32
		// Backward start: the log-softmax saved and its two gradients.
		backward = floor + acts + 3*fp32
		// Optimizer: gradients (4 B/param) and foreach temporaries (4 B/param).
		optimizer = floor + 2*4_943_257_600
	)
	want := map[string]int64{"forward": forward, "backward": backward, "optimizer": optimizer}
	for _, ph := range p.Phases {
		if ph.Bytes != want[ph.Phase] {
			t.Errorf("%s peak = %d, want %d", ph.Phase, ph.Bytes, want[ph.Phase])
		}
	}
	// backward = 76,780,888,064 B holds the step's peak, and there the
	// saved activations (36.7 GB) outweigh the logits and loss (25.2 GB).
	if got := p.Phases[p.Peak]; got.Phase != "backward" || got.Dominant() != Activations {
		t.Errorf("peak in %s, dominant %s; want backward, saved activations", got.Phase, got.Dominant())
	}
	// On an 80 GB H100 (81,559 MiB): 76,780,888,064 + 768 MiB outside the
	// allocator leaves 7,934,615,552 B, 9.3%.
	g, ok := LookupGPU("h100")
	if !ok {
		t.Fatal(`LookupGPU("h100") found nothing`)
	}
	f := p.FitOn(g.Name, g.Memory)
	if f.Headroom != 81559<<20-backward-768<<20 || f.Verdict != Fits {
		t.Errorf("FitOn(H100) = %+v, want headroom %d, fits", f, int64(81559<<20-backward-768<<20))
	}
}

func TestKVCacheLlama8B(t *testing.T) {
	// Llama 3.1 8B, bf16 inference: 2 × 32 layers × 8 KV heads × 128 × 2 B
	// = 131,072 B (128 KiB) per token.
	m := Model{Vocab: 128256, Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 8, Intermediate: 14336,
		MLP: GatedMLP, Attention: SDPA}
	s := DefaultShape()
	s.Mode, s.Precision, s.Batch, s.Seq, s.MaxTokens = Infer, BF16, 8, 1024, 65536
	p, err := Predict(m, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Terms[KVCache].Bytes; got != 131_072*65536 {
		t.Errorf("KV cache = %d, want 131,072 × 65,536 = %d", got, int64(131_072*65536))
	}
	if p.PerParam != 2 || len(p.Phases) != 1 {
		t.Errorf("inference: PerParam %d, %d phases; want 2 B/param, one phase", p.PerParam, len(p.Phases))
	}
}
