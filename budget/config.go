package budget

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// hfConfig is the part of a Hugging Face config.json that decides memory.
// Pointers tell a missing field from a zero one. GPT-2-style names (n_embd…)
// are read too.
type hfConfig struct {
	ModelType         string   `json:"model_type"`
	Architectures     []string `json:"architectures"`
	VocabSize         *int64   `json:"vocab_size"`
	HiddenSize        *int64   `json:"hidden_size"`
	NumHiddenLayers   *int64   `json:"num_hidden_layers"`
	NumAttentionHeads *int64   `json:"num_attention_heads"`
	NumKeyValueHeads  *int64   `json:"num_key_value_heads"`
	HeadDim           *int64   `json:"head_dim"`
	IntermediateSize  *int64   `json:"intermediate_size"`
	TieWordEmbeddings *bool    `json:"tie_word_embeddings"`
	HiddenAct         string   `json:"hidden_act"`
	AttentionBias     bool     `json:"attention_bias"`
	MLPBias           bool     `json:"mlp_bias"`

	// GPT-2 names.
	NEmbd  *int64 `json:"n_embd"`
	NLayer *int64 `json:"n_layer"`
	NHead  *int64 `json:"n_head"`
	NInner *int64 `json:"n_inner"`
	// Mixture of experts: not modelled, but said.
	NumLocalExperts *int64 `json:"num_local_experts"`
	NumExperts      *int64 `json:"num_experts"`

	// Multimodal configs nest the language model's config.
	TextConfig *hfConfig `json:"text_config"`
}

// gatedTypes are model types whose MLP is gated (gate, up, down).
var gatedTypes = []string{"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe",
	"gemma", "gemma2", "gemma3", "gemma3_text", "phi3", "olmo", "olmo2", "granite", "cohere",
	"internlm2", "deepseek_v2", "deepseek_v3", "starcoder2", "smollm3", "exaone", "glm", "helium"}

// tiedByDefault are model types whose config class defaults
// tie_word_embeddings to true when config.json leaves it out.
var tiedByDefault = []string{"gemma", "gemma2", "gemma3", "gemma3_text", "gpt2", "opt", "smollm3"}

// ConfigWarningKind says what ParseConfig had to guess about a config.json;
// package report words each kind.
type ConfigWarningKind int

const (
	// ConfigTiedByDefault: tie_word_embeddings is absent and ModelType's
	// config class ties them by default; taken as tied.
	ConfigTiedByDefault ConfigWarningKind = iota + 1
	// ConfigAssumedUntied: tie_word_embeddings is absent; taken as untied.
	ConfigAssumedUntied
	// ConfigGatedFromActivation: no model_type; HiddenAct (silu or swish)
	// was taken for a gated MLP.
	ConfigGatedFromActivation
	// ConfigExpertsDense: Experts experts per layer are modelled as one
	// dense MLP of intermediate_size, so parameters and optimizer state
	// are underestimated.
	ConfigExpertsDense
)

// ConfigWarning is a guess ParseConfig made about the config File; the
// fields beyond Kind and File are set by the kinds that use them.
type ConfigWarning struct {
	Kind      ConfigWarningKind
	File      string
	ModelType string // ConfigTiedByDefault
	HiddenAct string // ConfigGatedFromActivation, as the config spells it
	Experts   int64  // ConfigExpertsDense
}

// LoadConfig reads a Hugging Face config.json; see ParseConfig.
func LoadConfig(path string) (Model, []ConfigWarning, error) {
	f, err := os.Open(path)
	if err != nil {
		return Model{}, nil, err
	}
	defer f.Close()
	return ParseConfig(f, path)
}

// ParseConfig reads a Hugging Face config.json of a decoder-only model. name
// names the input in errors and warnings. It returns the model and the
// guesses it had to make as ConfigWarnings (a missing tie_word_embeddings,
// an MLP kind inferred from the activation, mixture-of-experts layers
// modelled as dense).
func ParseConfig(r io.Reader, name string) (Model, []ConfigWarning, error) {
	var c hfConfig
	if err := json.NewDecoder(r).Decode(&c); err != nil {
		return Model{}, nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if c.TextConfig != nil && c.HiddenSize == nil && c.NEmbd == nil {
		c = *c.TextConfig
	}
	var warns []ConfigWarning
	first := func(ps ...*int64) int64 {
		for _, p := range ps {
			if p != nil {
				return *p
			}
		}
		return 0
	}
	m := Model{
		Name:         name,
		Vocab:        first(c.VocabSize),
		Hidden:       first(c.HiddenSize, c.NEmbd),
		Layers:       first(c.NumHiddenLayers, c.NLayer),
		Heads:        first(c.NumAttentionHeads, c.NHead),
		HeadDim:      first(c.HeadDim),
		Intermediate: first(c.IntermediateSize, c.NInner),
		Attention:    SDPA,
		// AttentionBias and MLPBias are Llama's flags; Qwen2 has biases on
		// q, k and v only, which this counts as attention_bias (the o bias
		// is Hidden parameters per layer).
		AttentionBias: c.AttentionBias || c.ModelType == "qwen2",
		MLPBias:       c.MLPBias,
	}
	m.KVHeads = first(c.NumKeyValueHeads)
	if m.KVHeads == 0 {
		m.KVHeads = m.Heads // no GQA
	}
	if m.Intermediate == 0 && m.Hidden > 0 {
		m.Intermediate = 4 * m.Hidden // GPT-2's n_inner default
	}

	switch {
	case c.TieWordEmbeddings != nil:
		m.TiedEmbeddings = *c.TieWordEmbeddings
	case slices.Contains(tiedByDefault, c.ModelType):
		m.TiedEmbeddings = true
		warns = append(warns, ConfigWarning{Kind: ConfigTiedByDefault, File: name, ModelType: c.ModelType})
	default:
		warns = append(warns, ConfigWarning{Kind: ConfigAssumedUntied, File: name})
	}

	act := strings.ToLower(c.HiddenAct)
	switch {
	case slices.Contains(gatedTypes, c.ModelType):
		m.MLP = GatedMLP
	case c.ModelType == "" && (act == "silu" || act == "swish"):
		m.MLP = GatedMLP
		warns = append(warns, ConfigWarning{Kind: ConfigGatedFromActivation, File: name, HiddenAct: c.HiddenAct})
	default:
		m.MLP = PlainMLP
	}
	if n := first(c.NumLocalExperts, c.NumExperts); n > 1 {
		warns = append(warns, ConfigWarning{Kind: ConfigExpertsDense, File: name, Experts: n})
	}
	if c.HeadDim != nil && *c.HeadDim > 0 && m.Heads > 0 && *c.HeadDim*m.Heads == m.Hidden {
		m.HeadDim = 0 // the default: keep Describe and JSON simple
	}
	if err := m.Check(); err != nil {
		return Model{}, warns, fmt.Errorf("%s: not a decoder-only transformer config memscope can budget: %w", name, err)
	}
	return m, warns, nil
}
