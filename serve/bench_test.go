package serve

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// benchIndex generates a snapshot of about size bytes from the
// plain-trainer-late fixture (its steps repeated), analyses it and indexes
// its device, once per size.
var benchIndexes = map[int64]*index{}

func benchIndex(b *testing.B, size int64) *index {
	if x := benchIndexes[size]; x != nil {
		return x
	}
	path := os.Getenv("MEMSCOPE_SERVE_BENCH_FILE")
	if size > 0 || path == "" {
		path = generate(b, size)
	}
	s, err := snapshot.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	an := attribution.Analyze(s, attribution.Options{Device: -1, AllocSizes: true})
	x := newIndex(an.Devices[0], s.Stacks, newAxis(an.Devices[0].Timeline))
	benchIndexes[size] = x
	return x
}

// generate writes a snapshot of at least size bytes.
func generate(b *testing.B, size int64) string {
	src, err := snapshot.Open("../fixtures/plain-trainer-late/snapshot.pickle")
	if err != nil {
		b.Skip(err)
	}
	path := filepath.Join(b.TempDir(), "gen.pickle")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if _, err := snapgen.Write(w, src, size); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return path
}

// BenchmarkTimeline answers /api/timeline's query at zoom levels from the
// whole recording down to a thousandth of it (centred on the peak), 1400
// columns and 300 bands, on generated snapshots of growing size. The
// target is 200 ms a zoom on a 1 GB snapshot (DESIGN.md); set
// MEMSCOPE_SERVE_BENCH_BIG=1 to add 1 GiB, or MEMSCOPE_SERVE_BENCH_FILE to
// a snapshot (size=file).
func BenchmarkTimeline(b *testing.B) {
	sizes := []int64{8 << 20, 32 << 20, 128 << 20}
	if os.Getenv("MEMSCOPE_SERVE_BENCH_BIG") != "" {
		sizes = append(sizes, 1<<30)
	}
	if os.Getenv("MEMSCOPE_SERVE_BENCH_FILE") != "" {
		sizes = []int64{0}
	}
	for _, size := range sizes {
		for _, zoom := range []int64{1, 10, 100, 1000} {
			name := fmt.Sprintf("size=%dMiB/zoom=%d", size>>20, zoom)
			if size == 0 {
				name = fmt.Sprintf("size=file/zoom=%d", zoom)
			}
			b.Run(name, func(b *testing.B) {
				x := benchIndex(b, size)
				span := x.span()
				peak := x.xOf(max(x.d.Timeline.PeakAllocated.Index, 0))
				w := span / zoom
				from := min(max(peak-w/2, 0), span-w)
				b.ReportAllocs()
				var tl *Timeline
				for b.Loop() {
					tl = x.timeline(from, from+w, 1400, defaultBands)
				}
				b.ReportMetric(float64(tl.Events), "events/window")
				b.ReportMetric(float64(len(x.events)), "events")
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/zoom")
			})
		}
	}
}

// BenchmarkIndex builds the index of a generated 32 MiB snapshot (or of
// MEMSCOPE_SERVE_BENCH_FILE): what serve adds to the analysis before it
// listens.
func BenchmarkIndex(b *testing.B) {
	size := int64(32 << 20)
	if os.Getenv("MEMSCOPE_SERVE_BENCH_FILE") != "" {
		size = 0
	}
	x := benchIndex(b, size)
	b.ReportAllocs()
	for b.Loop() {
		newIndex(x.d, x.stacks, x.axis)
	}
	b.ReportMetric(float64(len(x.events)), "events")
}
