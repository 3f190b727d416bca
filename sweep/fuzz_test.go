package sweep

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/internal/testenv"
)

// FuzzAnalyze: any results.json that capture reads is analysed (fits,
// frontiers, savings, spreads) and compared with itself without a panic.
func FuzzAnalyze(f *testing.F) {
	testenv.FuzzMinimize(f, 2*time.Second)
	for _, p := range []string{"../fixtures/sweep-llama/results.json", "../fixtures/sweep-mlp/results.json", "../fixtures/sweep-paths/ddp/results.json"} {
		if b, ok := testenv.SmallResults(p); ok {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"schema":"` + capture.ResultsSchema + `","points":[{"precision":"fp32","batch":0,"fits":true}]}`))
	dir := f.TempDir() // one per process: the body runs one input at a time
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := capture.ReadResults(dir)
		if err != nil {
			return
		}
		a := Analyze(dir, r)
		Compare(a, a)
	})
}
