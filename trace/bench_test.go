package trace

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/trace/internal/gentrace/scale"
)

// benchTrace returns the trace file to benchmark: $MEMSCOPE_BENCH_TRACE, or
// about 64 MiB generated from the fixture into a temporary directory.
func benchTrace(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("MEMSCOPE_BENCH_TRACE"); p != "" {
		return p
	}
	src, err := os.Open(filepath.Join(fixtureDir, "trace.json.gz"))
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	tmpl, err := scale.Load(src)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "bench-trace.json")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if _, _, err := tmpl.Write(w, 64<<20); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkDecode measures Open on a large trace (see benchTrace): MB/s of
// the uncompressed JSON, events/s, allocations.
//
//	go test ./trace -run '^$' -bench Decode -benchtime 5x
//	MEMSCOPE_BENCH_TRACE=bench-data/trace-1g.json go test ./trace -run '^$' -bench Decode -benchtime 2x
func BenchmarkDecode(b *testing.B) {
	path := benchTrace(b)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	var events int64
	for b.Loop() {
		tr, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		events = tr.Counts.Events
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkKeyAverages measures the key_averages view on the same trace.
func BenchmarkKeyAverages(b *testing.B) {
	tr, err := Open(benchTrace(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		tr.KeyAverages()
	}
}
