package capture

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memscope/memscope/internal/testenv"
)

// FuzzReadResults: any results.json is refused with an error or read
// without a panic (sweep.FuzzAnalyze analyses what is read).
func FuzzReadResults(f *testing.F) {
	testenv.FuzzMinimize(f, 2*time.Second)
	for _, p := range []string{"../fixtures/sweep-llama/results.json", "../fixtures/sweep-mlp/results.json", "../fixtures/sweep-paths/ddp/results.json"} {
		if b, ok := smallResults(p); ok {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"schema":"` + ResultsSchema + `","points":[{"precision":"fp32","batch":0,"fits":true}]}`))
	dir := f.TempDir() // one per process: the body runs one input at a time
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		ReadResults(dir)
	})
}

// smallResults returns the results.json at path cut to its first points
// of each precision, compact: a seed small enough that minimizing the
// inputs grown from it stays quick (the whole 24 KB fixtures held the
// fuzzer in minimization for most of a minute).
func smallResults(path string) ([]byte, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	var doc map[string]any
	if json.Unmarshal(b, &doc) != nil {
		return nil, false
	}
	pts, _ := doc["points"].([]any)
	var keep []any
	seen := map[any]int{}
	for _, p := range pts {
		m, _ := p.(map[string]any)
		if seen[m["precision"]] < 2 {
			seen[m["precision"]]++
			keep = append(keep, p)
		}
	}
	doc["points"] = keep
	out, err := json.Marshal(doc)
	return out, err == nil
}
