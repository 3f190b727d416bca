package attribution_test

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// benchSnapshot decodes $MEMSCOPE_BENCH_SNAPSHOT, or a ~64 MB snapshot
// generated from a fixture.
func benchSnapshot(b *testing.B) (*snapshot.Snapshot, int64) {
	path := os.Getenv("MEMSCOPE_BENCH_SNAPSHOT")
	if path == "" {
		src, err := snapshot.Open(snapgen.DefaultSource(".."))
		if err != nil {
			b.Fatal(err)
		}
		path = filepath.Join(b.TempDir(), "bench.pickle")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		if _, err := snapgen.Write(w, src, 64<<20); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	s, err := snapshot.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(path)
	return s, st.Size()
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
		b.ReportMetric(float64(len(t.Events))/b.Elapsed().Seconds()*float64(b.N), "events/s")
	}
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
		a := attribution.Analyze(s, attribution.Options{Device: -1})
		b.ReportMetric(float64(len(a.Devices[0].Timeline.Events))/b.Elapsed().Seconds()*float64(b.N), "events/s")
	}
}
