package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/memscope/memscope/budget"
)

// Every kind of part and share has a name, every part kind but the KV
// cache's absence a formula, and no share-only kind a formula.
func TestBudgetPartWordsComplete(t *testing.T) {
	firstShare := budget.ShareLayersSaved
	for k := budget.PartKind(1); int(k) < budget.NumPartKinds; k++ {
		if k == firstShare-1 {
			continue // the marker between parts and shares
		}
		if name := partName(k, budget.Operands{}); name == "" || strings.HasPrefix(name, "part of kind") {
			t.Errorf("partName(%d) = %q, want words", k, name)
		}
		f := partFormula(k, budget.Operands{})
		switch {
		case k < firstShare && k != budget.PartNoKVCache && f == "":
			t.Errorf("partFormula(%d) = \"\", want a formula", k)
		case (k >= firstShare || k == budget.PartNoKVCache) && f != "":
			t.Errorf("partFormula(%d) = %q, want none", k, f)
		}
	}
}

// Each kind's words, with its operands in the formula.
func TestBudgetPartWords(t *testing.T) {
	const P = 1_235_814_400
	for _, c := range []struct {
		kind          budget.PartKind
		ops           budget.Operands
		name, formula string
	}{
		{budget.PartWeights, budget.Operands{Params: P, Elem: 4}, "weights (fp32)", "1,235,814,400 params × 4 B"},
		{budget.PartGrads, budget.Operands{Params: P, Elem: 2}, "gradients (bf16)", "1,235,814,400 params × 2 B"},
		{budget.PartMaster, budget.Operands{Params: P, Elem: 4, Ranks: 4}, "fp32 master weights", "1,235,814,400 params × 4 B / 4 ranks"},
		{budget.PartAdamWMoments, budget.Operands{Params: P, Count: 2, Elem: 4, Ranks: 1},
			"AdamW moments (exp_avg, exp_avg_sq)", "1,235,814,400 params × 2 × 4 B"},
		{budget.PartMomentumBuffer, budget.Operands{Params: P, Count: 1, Elem: 4, Ranks: 8},
			"SGD momentum buffer", "1,235,814,400 params × 1 × 4 B / 8 ranks"},
		{budget.PartNoOptimizerState, budget.Operands{Params: P, Elem: 4}, "none (SGD keeps no state)", "1,235,814,400 params × 0 × 4 B"},
		{budget.PartStepInPlace, budget.Operands{Optimizer: budget.SGDMomentum}, "optimizer step temporaries", "none: sgd-momentum updates in place"},
		{budget.PartStepFused, budget.Operands{}, "optimizer step temporaries", "none: the fused kernel updates in place"},
		{budget.PartStepLargest, budget.Operands{Params: 262_668_288, Elem: 8, Temps: budget.TempSqrtMoments | budget.TempFP32Grads},
			"optimizer step temporaries", "sqrt(exp_avg_sq) and fp32 gradients of the largest tensor: 262,668,288 params × 8 B"},
		{budget.PartStepForeach, budget.Operands{Params: P, Elem: 4, Ranks: 2, Temps: budget.TempFP32Grads},
			"optimizer step temporaries", "fp32 gradients of every parameter at once (foreach): 1,235,814,400 params × 4 B / 2 ranks"},
		{budget.PartWorkspaces, budget.Operands{Count: 2}, "cuBLAS workspaces (in the allocator)", "2 threads (forward, autograd); set with --workspace"},
		{budget.PartWorkspaces, budget.Operands{Count: 1}, "cuBLAS workspaces (in the allocator)", "1 thread; set with --workspace"},
		{budget.PartTokenIDs, budget.Operands{Tokens: 16384}, "token ids (int64)", "16,384 tokens × 8 B"},
		{budget.PartInferResiduals, budget.Operands{Count: 4, Tokens: 16384, Hidden: 2048, Elem: 4},
			"embedding output, layer input, post-attention residual, MLP input", "4 × 16,384 tokens × 2048 × 4 B"},
		{budget.PartLayers, budget.Operands{Layers: 16, LayerBytes: 2_116_157_440, Tokens: 16384, PerToken: 129_160},
			"16 layers, no checkpointing", "16 layers × 2,116,157,440 B (16,384 tokens × 129,160 B per token; per-layer table)"},
		{budget.PartLayersFullCkpt, budget.Operands{Layers: 16, Tokens: 16384, Hidden: 2048, Elem: 4},
			"16 layers, full checkpointing", "16 layers × (16,384 tokens × 2048 hidden × 4 B): each layer's input"},
		{budget.PartLayersSelectiveCkpt, budget.Operands{Layers: 16, LayerBytes: 1_000_000},
			"16 layers, selective checkpointing", "16 layers × 1,000,000 (input, matmul and attention outputs)"},
		{budget.PartRope, budget.Operands{Positions: 4096, HeadDim: 64, Elem: 4}, "rotary cos and sin", "2 × 4096 positions × 64 dim × 4 B"},
		{budget.PartWeightCopies, budget.Operands{Params: 1_235_746_816, Elem: 2}, "bf16 weight copies (autocast)", "1,235,746,816 matmul params × 2 B"},
		{budget.PartBackwardGrads, budget.Operands{Tokens: 16384, Count: 3, Intermediate: 8192, Elem: 2},
			"gradients inside one layer's backward", "16,384 tokens × 3 × intermediate 8192 × 2 B + one weight gradient"},
		{budget.PartLogits, budget.Operands{Tokens: 16384, Vocab: 128256, Elem: 2}, "logits (bf16)", "16,384 tokens × 128,256 vocab × 2 B"},
		{budget.PartChunkLogSoftmax, budget.Operands{Count: 8, Tokens: 16384, Vocab: 128256, Elem: 4},
			"log-softmax output of all 8 chunks, fp32 (saved)", "16,384 tokens × 128,256 vocab × 4 B"},
		{budget.PartFusedChunkLogits, budget.Operands{Tokens: 1024, Vocab: 128256, Elem: 2},
			"logits of one 1,024-token chunk (bf16)", "1,024 tokens × 128,256 vocab × 2 B"},
		{budget.PartFusedHeadGrad, budget.Operands{Vocab: 128256, Hidden: 2048, Elem: 4},
			"gradient of the output projection, computed in the forward", "128,256 vocab × 2048 hidden × 4 B"},
		{budget.PartLastLogits, budget.Operands{Sequences: 4, Vocab: 128256, Elem: 2},
			"logits of the last position of each sequence", "4 sequences × 128,256 vocab × 2 B"},
		{budget.PartNoKVCache, budget.Operands{}, "none in training (use_cache off)", ""},
		{budget.PartKVCache, budget.Operands{Tokens: 65536, Layers: 16, KVHeads: 8, HeadDim: 64, Elem: 4, PerToken: 65536},
			"keys and values of every layer", "65,536 tokens × 2 × 16 layers × 8 KV heads × 64 dim × 4 B = 65,536 tokens × 65,536 B"},
		{budget.PartLayerQKV, budget.Operands{Tokens: 16384, QWidth: 2048, KVWidth: 512, Elem: 2},
			"q, k, v after rotary embedding, saved by SDPA", "16,384 tokens × (2048 + 2 × 512) × 2 B"},
		{budget.PartLayerProbs, budget.Operands{Tokens: 16384, Heads: 32, Positions: 4096, Elem: 6},
			"attention probabilities: fp32 softmax and its copy", "16,384 tokens × 32 heads × 4096 keys × 6 B"},
		{budget.ShareLayersSaved, budget.Operands{Layers: 15}, "saved activations of 15 layers", ""},
		{budget.ShareInferMLP, budget.Operands{Count: 2}, "MLP intermediates (2 × intermediate)", ""},
	} {
		if got := partName(c.kind, c.ops); got != c.name {
			t.Errorf("partName(%d, %+v) = %q, want %q", c.kind, c.ops, got, c.name)
		}
		if got := partFormula(c.kind, c.ops); got != c.formula {
			t.Errorf("partFormula(%d, %+v) = %q, want %q", c.kind, c.ops, got, c.formula)
		}
	}
}

func TestBudgetMomentAndRuleWords(t *testing.T) {
	for _, c := range []struct {
		m    budget.Moment
		want string
	}{
		{budget.Moment{Kind: budget.MomentForwardEnd}, "end of forward: the loss computed, every layer's activations saved"},
		{budget.Moment{Kind: budget.MomentLayerBackward, Layer: 7}, "backward of layer 7: layers below still saved, gradients above made"},
		{budget.Moment{Kind: budget.MomentOptimizerStep}, "inside optimizer.step(): every gradient and the step's temporaries"},
		{budget.Moment{Kind: budget.MomentPrefillOutput}, "prefill, the output projection of the last positions"},
	} {
		if got := budgetMomentText(c.m); got != c.want {
			t.Errorf("budgetMomentText(%+v) = %q, want %q", c.m, got, c.want)
		}
	}
	for k := budget.MomentForwardEnd; k <= budget.MomentPrefillOutput; k++ {
		if got := budgetMomentText(budget.Moment{Kind: k}); strings.HasPrefix(got, "moment of kind") {
			t.Errorf("budgetMomentText(kind %d) = %q, want words", k, got)
		}
	}
	for _, c := range []struct {
		r    budget.RuleOperands
		want string
	}{
		{budget.RuleOperands{Seq: 4096, Batch: 4, Hidden: 2048}, "34 × s 4096 × b 4 × h 2048"},
		{budget.RuleOperands{Seq: 4096, Batch: 4, Hidden: 2048, Heads: 32}, "34 × s 4096 × b 4 × h 2048 + 5 × a 32 × s² × b"},
	} {
		if got := ruleText(c.r); got != c.want {
			t.Errorf("ruleText(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}

// The JSON document words the parts, the phase moments and shares, and the
// rule, from the prediction's kinds and operands.
func TestBudgetJSONWords(t *testing.T) {
	p := smallPrediction(t)
	var js bytes.Buffer
	if err := Write(&js, JSON, &Budget{Prediction: p}); err != nil {
		t.Fatal(err)
	}
	var doc ResultDoc[struct {
		Layer struct {
			RuleText string `json:"rule_text"`
		} `json:"layer"`
		Terms []struct {
			Parts []struct {
				Name    string `json:"name"`
				Formula string `json:"formula"`
			} `json:"parts"`
		} `json:"terms"`
		Phases []struct {
			Moment string `json:"moment"`
			Shares []struct {
				Name string `json:"name"`
			} `json:"shares"`
		} `json:"phases"`
	}]
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	r := doc.Result
	if want := ruleText(p.Layer.RuleOps); r.Layer.RuleText != want {
		t.Errorf("layer.rule_text = %q, want %q", r.Layer.RuleText, want)
	}
	w := p.Terms[budget.ModelStates].Parts[0]
	if got := r.Terms[budget.ModelStates].Parts[0]; got.Name != partName(w.Kind, w.Ops) || got.Formula != partFormula(w.Kind, w.Ops) ||
		!strings.Contains(got.Formula, commas(p.Params.Total)+" params") {
		t.Errorf("first model-states part = %+v, want the weights of %s params", got, commas(p.Params.Total))
	}
	if len(r.Phases) != len(p.Phases) {
		t.Fatalf("phases = %d, want %d", len(r.Phases), len(p.Phases))
	}
	for i, ph := range p.Phases {
		if r.Phases[i].Moment != budgetMomentText(ph.Moment) || len(r.Phases[i].Shares) != len(ph.Shares) {
			t.Fatalf("phase %d = %+v, want moment %q and %d shares", i, r.Phases[i], budgetMomentText(ph.Moment), len(ph.Shares))
		}
		for j, sh := range ph.Shares {
			if got := r.Phases[i].Shares[j].Name; got != partName(sh.Kind, sh.Ops) || strings.HasPrefix(got, "part of kind") {
				t.Errorf("phase %d share %d named %q, want %q", i, j, got, partName(sh.Kind, sh.Ops))
			}
		}
	}
}

func TestConfigWarningWords(t *testing.T) {
	for _, c := range []struct {
		w    budget.ConfigWarning
		want string
	}{
		{budget.ConfigWarning{Kind: budget.ConfigTiedByDefault, File: "config.json", ModelType: "gemma3_text"},
			"config.json: tie_word_embeddings absent; gemma3_text ties them by default"},
		{budget.ConfigWarning{Kind: budget.ConfigAssumedUntied, File: "config.json"},
			"config.json: tie_word_embeddings absent; assumed untied"},
		{budget.ConfigWarning{Kind: budget.ConfigGatedFromActivation, File: "c.json", HiddenAct: "SiLU"},
			"c.json: no model_type; hidden_act SiLU taken for a gated MLP"},
		{budget.ConfigWarning{Kind: budget.ConfigExpertsDense, File: "config.json", Experts: 8},
			"config.json: 8 experts per layer are modelled as one dense MLP of intermediate_size: parameters and optimizer state are underestimated"},
	} {
		if got := configWarningText(c.w); got != c.want {
			t.Errorf("configWarningText(%+v) = %q, want %q", c.w, got, c.want)
		}
	}
}
