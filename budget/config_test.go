package budget

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	for _, c := range []struct {
		name, json string
		want       Model
		warn       []ConfigWarning
	}{
		{
			name: "llama GQA untied",
			json: `{"model_type":"llama","vocab_size":32000,"hidden_size":4096,"num_hidden_layers":32,
				"num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,
				"hidden_act":"silu","tie_word_embeddings":false}`,
			want: Model{Vocab: 32000, Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 8, Intermediate: 14336,
				MLP: GatedMLP, Attention: SDPA},
		},
		{
			name: "no num_key_value_heads: multi-head attention",
			json: `{"model_type":"llama","vocab_size":32000,"hidden_size":2048,"num_hidden_layers":2,
				"num_attention_heads":16,"intermediate_size":5504,"tie_word_embeddings":true}`,
			want: Model{Vocab: 32000, Hidden: 2048, Layers: 2, Heads: 16, KVHeads: 16, Intermediate: 5504,
				TiedEmbeddings: true, MLP: GatedMLP, Attention: SDPA},
		},
		{
			name: "head_dim that is not hidden/heads (Qwen3, Gemma)",
			json: `{"model_type":"qwen3","vocab_size":151936,"hidden_size":1024,"num_hidden_layers":28,
				"num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,"intermediate_size":3072,
				"tie_word_embeddings":true}`,
			want: Model{Vocab: 151936, Hidden: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128,
				Intermediate: 3072, TiedEmbeddings: true, MLP: GatedMLP, Attention: SDPA},
		},
		{
			name: "GPT-2 names, plain MLP, tied by default",
			json: `{"model_type":"gpt2","vocab_size":50257,"n_embd":768,"n_layer":12,"n_head":12}`,
			want: Model{Vocab: 50257, Hidden: 768, Layers: 12, Heads: 12, KVHeads: 12, Intermediate: 3072,
				TiedEmbeddings: true, MLP: PlainMLP, Attention: SDPA},
			warn: []ConfigWarning{{Kind: ConfigTiedByDefault, File: "config.json", ModelType: "gpt2"}},
		},
		{
			name: "multimodal: the text_config",
			json: `{"model_type":"gemma3","text_config":{"model_type":"gemma3_text","vocab_size":262208,
				"hidden_size":2560,"num_hidden_layers":34,"num_attention_heads":8,"num_key_value_heads":4,
				"head_dim":256,"intermediate_size":10240}}`,
			want: Model{Vocab: 262208, Hidden: 2560, Layers: 34, Heads: 8, KVHeads: 4, HeadDim: 256,
				Intermediate: 10240, TiedEmbeddings: true, MLP: GatedMLP, Attention: SDPA},
			warn: []ConfigWarning{{Kind: ConfigTiedByDefault, File: "config.json", ModelType: "gemma3_text"}},
		},
		{
			name: "no model_type, no tie_word_embeddings: guessed from hidden_act",
			json: `{"vocab_size":32000,"hidden_size":2048,"num_hidden_layers":2,
				"num_attention_heads":16,"intermediate_size":5504,"hidden_act":"SiLU"}`,
			want: Model{Vocab: 32000, Hidden: 2048, Layers: 2, Heads: 16, KVHeads: 16, Intermediate: 5504,
				MLP: GatedMLP, Attention: SDPA},
			warn: []ConfigWarning{{Kind: ConfigAssumedUntied, File: "config.json"},
				{Kind: ConfigGatedFromActivation, File: "config.json", HiddenAct: "SiLU"}},
		},
		{
			name: "mixture of experts is said",
			json: `{"model_type":"mixtral","vocab_size":32000,"hidden_size":4096,"num_hidden_layers":32,
				"num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,
				"num_local_experts":8,"tie_word_embeddings":false}`,
			want: Model{Vocab: 32000, Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 8, Intermediate: 14336,
				MLP: GatedMLP, Attention: SDPA},
			warn: []ConfigWarning{{Kind: ConfigExpertsDense, File: "config.json", Experts: 8}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, warns, err := ParseConfig(strings.NewReader(c.json), "config.json")
			if err != nil {
				t.Fatal(err)
			}
			m.Name = ""
			if m != c.want {
				t.Errorf("ParseConfig = %+v, want %+v", m, c.want)
			}
			if !reflect.DeepEqual(warns, c.warn) {
				t.Errorf("warnings = %+v, want %+v", warns, c.warn)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{`, "reading config.json"},
		{`{"model_type":"llama"}`, "vocab size is 0"},
		{`{"model_type":"llama","vocab_size":10,"hidden_size":100,"num_hidden_layers":1,
			"num_attention_heads":3,"intermediate_size":10}`, "not a multiple of 3 heads"},
		{`{"model_type":"llama","vocab_size":10,"hidden_size":96,"num_hidden_layers":1,
			"num_attention_heads":6,"num_key_value_heads":4,"intermediate_size":10}`, "not a multiple of 4 key/value heads"},
	} {
		_, _, err := ParseConfig(strings.NewReader(c.json), "config.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseConfig(%.40q) error = %v, want one containing %q", c.json, err, c.want)
		}
	}
}

func TestShapeCheck(t *testing.T) {
	s := DefaultShape()
	if err := s.Check(); err != nil {
		t.Errorf("DefaultShape().Check() = %v, want nil", err)
	}
	s.Precision, s.Batch = "fp8", 0
	err := s.Check()
	for _, want := range []string{`precision "fp8"`, "micro-batch 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check() = %v, want an error containing %q", err, want)
		}
	}
}

func TestLookupGPU(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"H100", "H100"}, {"h200", "H200"}, {"A100-40GB", "A100-40GB"}, {"a100", "A100-80GB"},
		{"RTX 4090", "RTX-4090"}, {"NVIDIA GeForce RTX 4090", "RTX-4090"}, {"l4", "L4"},
	} {
		g, ok := LookupGPU(c.in)
		if !ok || g.Name != c.want {
			t.Errorf("LookupGPU(%q) = %q, %v; want %q", c.in, g.Name, ok, c.want)
		}
	}
	if g, ok := LookupGPU("TPU"); ok {
		t.Errorf("LookupGPU(TPU) = %v, want nothing", g)
	}
}
