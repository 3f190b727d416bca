package budget

import (
	"errors"
	"fmt"
)

// Model is the architecture of a decoder-only transformer in the shape of
// Hugging Face's Llama family: token embedding, Layers decoder layers of
// (RMSNorm, attention with rotary embeddings, residual add, RMSNorm, MLP,
// residual add), a final RMSNorm and an output projection (lm_head) to the
// vocabulary.
type Model struct {
	Name string `json:"name,omitempty"` // for messages: the config's file or model type

	Vocab        int64 `json:"vocab"`
	Hidden       int64 `json:"hidden"`
	Layers       int64 `json:"layers"`
	Heads        int64 `json:"heads"`    // query heads
	KVHeads      int64 `json:"kv_heads"` // key/value heads: Heads for MHA, fewer for GQA
	HeadDim      int64 `json:"head_dim"` // 0: Hidden / Heads
	Intermediate int64 `json:"intermediate"`

	// TiedEmbeddings shares the embedding matrix with the output
	// projection: one matrix of parameters, used twice.
	TiedEmbeddings bool `json:"tied_embeddings"`
	// MLP is the feed-forward block: gated (gate, up, down projections; SiLU
	// or GELU on the gate: Llama, Mistral, Qwen, Gemma) or plain (up,
	// activation, down: GPT-2, GPT-NeoX, OPT).
	MLP MLPKind `json:"mlp"`
	// Attention is how attention is computed: SDPA (flash or memory-
	// efficient kernels, which save no s×s matrix) or eager (softmax
	// probabilities saved).
	Attention AttentionKind `json:"attention"`
	// Biases on the attention projections (q, k, v, o) and MLP projections.
	AttentionBias bool `json:"attention_bias,omitempty"`
	MLPBias       bool `json:"mlp_bias,omitempty"`
}

// MLPKind is the kind of feed-forward block.
type MLPKind string

const (
	GatedMLP MLPKind = "gated" // down(act(gate(x)) * up(x))
	PlainMLP MLPKind = "plain" // down(act(up(x)))
)

// AttentionKind is the attention implementation.
type AttentionKind string

const (
	SDPA  AttentionKind = "sdpa"  // flash / memory-efficient: saves q, k, v, output, logsumexp
	Eager AttentionKind = "eager" // matmul + softmax: saves the s×s probabilities
)

// Params counts a model's parameters by where they sit.
type Params struct {
	Embedding int64 `json:"embedding"` // Vocab × Hidden
	// PerLayer is one decoder layer: attention, MLP and its two norms;
	// LayerMatmul the part of it that is weights of linear layers (what
	// autocast casts to bf16 on each call).
	PerLayer    int64 `json:"per_layer"`
	LayerMatmul int64 `json:"layer_matmul"`
	FinalNorm   int64 `json:"final_norm"`
	LMHead      int64 `json:"lm_head"` // 0 when tied to the embedding
	Total       int64 `json:"total"`
	// Matmul is every weight that goes through a matrix multiply: the
	// layers' linear weights and the output projection (the embedding
	// matrix when tied).
	Matmul int64 `json:"matmul"`
	// Largest is the largest single parameter tensor (the embedding or the
	// output projection), for optimizers that step one tensor at a time.
	Largest int64 `json:"largest"`
}

// headDim returns the per-head dimension.
func (m Model) headDim() int64 {
	if m.HeadDim > 0 {
		return m.HeadDim
	}
	return m.Hidden / m.Heads
}

// q and kv are the widths of the query and of one of key or value.
func (m Model) q() int64  { return m.Heads * m.headDim() }
func (m Model) kv() int64 { return m.KVHeads * m.headDim() }

// Params counts the parameters of m.
func (m Model) Params() Params {
	h, i := m.Hidden, m.Intermediate
	attn := h*m.q() + 2*h*m.kv() + m.q()*h // q, k, v, o
	mlp := 3 * h * i                       // gate, up, down
	if m.MLP == PlainMLP {
		mlp = 2 * h * i // up, down
	}
	var bias int64
	if m.AttentionBias {
		bias += m.q() + 2*m.kv() + h
	}
	if m.MLPBias {
		if m.MLP == PlainMLP {
			bias += i + h
		} else {
			bias += 2*i + h
		}
	}
	p := Params{
		Embedding:   m.Vocab * h,
		LayerMatmul: attn + mlp,
		FinalNorm:   h,
	}
	p.PerLayer = attn + mlp + bias + 2*h // two RMSNorm weights
	if !m.TiedEmbeddings {
		p.LMHead = m.Vocab * h
	}
	p.Total = p.Embedding + m.Layers*p.PerLayer + p.FinalNorm + p.LMHead
	p.Matmul = m.Layers*p.LayerMatmul + m.Vocab*h
	p.Largest = p.Embedding
	return p
}

// Check reports what makes m unusable: a missing or non-positive size, heads
// that do not divide the hidden size (when HeadDim is not given) or key/value
// heads that do not divide the query heads.
func (m Model) Check() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"vocab size", m.Vocab}, {"hidden size", m.Hidden}, {"layers", m.Layers},
		{"attention heads", m.Heads}, {"key/value heads", m.KVHeads},
		{"intermediate size", m.Intermediate},
	} {
		if f.v <= 0 {
			errs = append(errs, fmt.Errorf("%s is %d, want > 0", f.name, f.v))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if m.HeadDim < 0 {
		errs = append(errs, fmt.Errorf("head dimension is %d, want > 0", m.HeadDim))
	}
	if m.HeadDim == 0 && m.Hidden%m.Heads != 0 {
		errs = append(errs, fmt.Errorf("hidden size %d is not a multiple of %d heads; give the head dimension", m.Hidden, m.Heads))
	}
	if m.Heads%m.KVHeads != 0 {
		errs = append(errs, fmt.Errorf("%d attention heads are not a multiple of %d key/value heads", m.Heads, m.KVHeads))
	}
	switch m.MLP {
	case GatedMLP, PlainMLP:
	default:
		errs = append(errs, fmt.Errorf("MLP kind %q: want gated or plain", m.MLP))
	}
	switch m.Attention {
	case SDPA, Eager:
	default:
		errs = append(errs, fmt.Errorf("attention %q: want sdpa or eager", m.Attention))
	}
	return errors.Join(errs...)
}
