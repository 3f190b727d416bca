package fit

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// benchPair writes the Llama's recordings at batches 2 and 4
// (fixtures/fit-lm) with their traces repeated until each file holds
// $MEMSCOPE_BENCH_FIT_MB megabytes (70 by default): the same program at
// two batches, thousands of steps long, as fit reads them.
func benchPair(b *testing.B) [2]string {
	mb := int64(70)
	if v := os.Getenv("MEMSCOPE_BENCH_FIT_MB"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("MEMSCOPE_BENCH_FIT_MB=%q: want megabytes", v)
		}
		mb = n
	}
	var out [2]string
	repeats := 0 // the first file's, for both: one program
	for i, batch := range []string{"b4", "b2"} {
		s, err := snapshot.Open(filepath.Join("../fixtures/fit-lm", batch, "snapshot.pickle.gz"))
		if err != nil {
			b.Fatal(err)
		}
		out[i] = filepath.Join(b.TempDir(), batch+".pickle")
		f, err := os.Create(out[i])
		if err != nil {
			b.Fatal(err)
		}
		st, err := snapgen.WriteOptions(f, s, mb<<20, snapgen.Options{Repeats: repeats})
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		repeats = st.Repeats
		b.Logf("%s: %d bytes, %d events, the trace %d times", batch, st.Bytes, st.Events, st.Repeats)
	}
	return out
}

// BenchmarkFit is 'memscope fit' on two recordings: both decoded, paired
// and fitted, and the frontier bisected under a 12 GiB cap (each step one
// run of the allocator model over the synthesized stream).
//
//	go test ./fit -run '^$' -bench . -benchtime 3x -count 3
func BenchmarkFit(b *testing.B) {
	paths := benchPair(b)
	for b.Loop() {
		var ins []Input
		for i, p := range paths {
			s, err := snapshot.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			ins = append(ins, Input{Path: p, Snap: s, Batch: 4 / (i + 1)})
		}
		m, err := New(ins, 0, Options{MemoryLimit: 12 << 30})
		if err != nil {
			b.Fatal(err)
		}
		f, err := m.Frontier(m.RecordedSettings(), 4096)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(f.Points)), "runs")
	}
}

// BenchmarkSummaryOne is what fit is held against: 'memscope summary”s
// decode and analysis of one of the two files.
func BenchmarkSummaryOne(b *testing.B) {
	paths := benchPair(b)
	for b.Loop() {
		s, err := snapshot.Open(paths[0])
		if err != nil {
			b.Fatal(err)
		}
		attribution.Analyze(s, attribution.Options{})
		_ = paths
	}
}
