package attribution_test

import (
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// benchSnapshot decodes the benchmark's snapshot (snapgen.BenchFile).
func benchSnapshot(b *testing.B) (*snapshot.Snapshot, int64) {
	path, size := snapgen.BenchFile(b, "..")
	s, err := snapshot.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	return s, size
}

// BenchmarkReplay is what the summary needed before attribution: one
// replay of the trace and the live set at the peak.
func BenchmarkReplay(b *testing.B) {
	s, size := benchSnapshot(b)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		t := snapshot.Replay(s, 0, snapshot.ReplayOptions{})
		t.LiveAt(t.PeakAllocated.Index)
	}
	b.ReportMetric(float64(len(s.Traces[0]))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAnalyze is the whole analysis 'memscope summary' runs: phases,
// categories, leaks, fragmentation, OOMs, at the peak and the end.
//
//	MEMSCOPE_BENCH_SNAPSHOT=$PWD/bench-data/big.pickle go test ./attribution -run '^$' -bench . -benchtime 3x
func BenchmarkAnalyze(b *testing.B) {
	s, size := benchSnapshot(b)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		attribution.Analyze(s, attribution.Options{Device: -1})
	}
	b.ReportMetric(float64(len(s.Traces[0]))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
