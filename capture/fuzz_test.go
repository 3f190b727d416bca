package capture

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadResults: any results.json is refused with an error or read
// without a panic (sweep.FuzzAnalyze analyses what is read).
func FuzzReadResults(f *testing.F) {
	for _, p := range []string{"../fixtures/sweep-llama/results.json", "../fixtures/sweep-mlp/results.json", "../fixtures/sweep-paths/ddp/results.json"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"schema":"` + ResultsSchema + `","points":[{"precision":"fp32","batch":0,"fits":true}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		ReadResults(dir)
	})
}
