package budget

import (
	"bytes"
	"os"
	"testing"
)

// FuzzParseConfig: any config.json is refused with an error or predicted
// from (every term, every phase) without a panic.
func FuzzParseConfig(f *testing.F) {
	if b, err := os.ReadFile("testdata/llama-3.2-1b.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"vocab_size":0,"hidden_size":0,"num_hidden_layers":0,"num_attention_heads":0}`))
	f.Add([]byte(`{"vocab_size":32000,"hidden_size":4096,"num_hidden_layers":2,"num_attention_heads":3,"num_key_value_heads":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, _, err := ParseConfig(bytes.NewReader(b), "config.json")
		if err != nil {
			return
		}
		Predict(m, DefaultShape())
	})
}
