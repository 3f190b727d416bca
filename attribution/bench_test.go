package attribution_test

import (
	"sync"
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

// deepSnapshot has 100,000 blocks live at the peak and the end, each under
// a 28-frame stack (a Llama layer's op in site-packages, called by the HF
// Trainer from train.py), 10 × 50 distinct stacks: the shape where
// choosing each block's site costs the most.
var deepSnapshot = sync.OnceValue(func() *snapshot.Snapshot {
	return snapgen.Deep(snapgen.DeepOptions{Blocks: 100_000, Variants: 50})
})

// BenchmarkAnalyzeDeep is the whole analysis of deepSnapshot.
//
//	go test ./attribution -run '^$' -bench Deep -benchtime 5x
func BenchmarkAnalyzeDeep(b *testing.B) {
	s := deepSnapshot()
	b.ReportAllocs()
	for b.Loop() {
		attribution.Analyze(s, attribution.Options{Device: -1})
	}
	b.ReportMetric(float64(len(s.Traces[0]))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkTopSitesDeep groups deepSnapshot's live blocks by site, as each
// moment (peak, end, OOM, --at) does: cold with a new filter each time (the
// rule runs once per frame and the site is chosen once per stack), warm
// with the filter's table already made.
func BenchmarkTopSitesDeep(b *testing.B) {
	s := deepSnapshot()
	t := snapshot.Replay(s, 0, snapshot.ReplayOptions{})
	_, live, _ := t.At(t.PeakAllocated.Index)
	for _, warm := range []bool{false, true} {
		name := "cold"
		if warm {
			name = "warm"
		}
		b.Run(name, func(b *testing.B) {
			f, _ := attribution.NewFilter("", "")
			b.ReportAllocs()
			for b.Loop() {
				if !warm {
					f, _ = attribution.NewFilter("", "")
				}
				attribution.TopSites(s.Stacks, live, f, t.PeakAllocated.Bytes, 15)
			}
			b.ReportMetric(float64(len(live))*float64(b.N)/b.Elapsed().Seconds(), "blocks/s")
		})
	}
}
