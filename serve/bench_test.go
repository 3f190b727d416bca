package serve

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// benchIndex generates a snapshot of about size bytes from the
// plain-trainer-late fixture (its steps repeated), analyses it and indexes
// its device, once per size.
var (
	benchIndexes  = map[int64]*index{}
	benchAnalyses = map[int64]*attribution.Analysis{}
)

func benchIndex(b *testing.B, size int64) *index {
	if x := benchIndexes[size]; x != nil {
		return x
	}
	an := benchAnalysis(b, size)
	x := newIndex(an.Devices[0], an.Snapshot.Stacks, newAxis(an.Devices[0].Timeline))
	benchIndexes[size] = x
	return x
}

// benchAnalysis analyses, once per size, a generated snapshot of about
// size bytes or (size 0) $MEMSCOPE_SERVE_BENCH_FILE, as the serve command
// does.
func benchAnalysis(b *testing.B, size int64) *attribution.Analysis {
	if an := benchAnalyses[size]; an != nil {
		return an
	}
	path := os.Getenv("MEMSCOPE_SERVE_BENCH_FILE")
	if size > 0 || path == "" {
		path = generate(b, max(size, 32<<20))
	}
	s, err := snapshot.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	an := attribution.Analyze(s, attribution.Options{Device: -1, AllocSizes: true, SeriesPoints: OverviewPoints})
	benchAnalyses[size] = an
	return an
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
				// How far into the window the bands reach: the last
				// event at which one is first drawn, as a share of the
				// window's events.
				reach := 0
				for _, band := range tl.Bands {
					reach = max(reach, tl.Sample[band.C0]-x.firstAt(from))
				}
				b.ReportMetric(100*float64(reach)/float64(max(tl.Events, 1)), "band-reach-%")
				b.ReportMetric(float64(len(x.events)), "events")
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/zoom")
			})
		}
	}
}

// BenchmarkIndex builds the index of a generated 32 MiB snapshot (or of
// MEMSCOPE_SERVE_BENCH_FILE) as New does in the background, with the
// replay beside it that records reserved and keeps the moments' states:
// what serve adds to the analysis before the bands and moments are fast.
func BenchmarkIndex(b *testing.B) {
	size := int64(32 << 20)
	if os.Getenv("MEMSCOPE_SERVE_BENCH_FILE") != "" {
		size = 0
	}
	x := benchIndex(b, size)
	b.ReportAllocs()
	keep := min(len(x.events)/momentEvents, maxKeptStates)
	for b.Loop() {
		buildIndex(x.d, x.stacks, x.axis, keep)
	}
	b.ReportMetric(float64(len(x.events)), "events")
}

// BenchmarkAPI answers the page's queries through the handler, encoding
// and gzip included, on a generated 32 MiB snapshot or
// $MEMSCOPE_SERVE_BENCH_FILE (DESIGN.md's target, on 1 GB: p95 ≤ 100 ms
// for a moment at any event, ≤ 200 ms for any page). A moment and the
// sites are asked at 64 events spread at random over the recording, in
// random order (a cursor that only moves forward does not help them);
// each sub-benchmark reports the p50 and p95 of its single answers.
func BenchmarkAPI(b *testing.B) {
	size := int64(32 << 20)
	if os.Getenv("MEMSCOPE_SERVE_BENCH_FILE") != "" {
		size = 0
	}
	an := benchAnalysis(b, size)
	srv, err := New([]Source{{Path: "bench.pickle", Analysis: an}}, Options{Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	srv.Ready()
	n := len(an.Devices[0].Timeline.Events)
	rng := rand.New(rand.NewPCG(1, 2))
	at := func(api string) []string {
		var urls []string
		for range 64 {
			urls = append(urls, fmt.Sprintf("/api/%s?at=%d", api, rng.IntN(n)))
		}
		return urls
	}
	span := srv.views[0].ax.span()
	for _, c := range []struct {
		name string
		urls []string
	}{
		{"moment", at("moment")},
		{"sites", at("sites")},
		{"summary", []string{"/api/summary"}},
		{"steps", []string{"/api/steps"}},
		{"leaks", []string{"/api/leaks"}},
		{"oom", []string{"/api/oom"}},
		{"timeline", []string{fmt.Sprintf("/api/timeline?px=1400&from=0&to=%d", span)}},
		{"moment-peak", []string{"/api/moment?at=peak"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var took []time.Duration
			bytes := 0
			b.ReportAllocs()
			for b.Loop() {
				for _, u := range c.urls {
					req := httptest.NewRequest("GET", u, nil)
					req.Header.Set("Accept-Encoding", "gzip")
					rec := httptest.NewRecorder()
					start := time.Now()
					srv.ServeHTTP(rec, req)
					took = append(took, time.Since(start))
					if rec.Code != 200 {
						b.Fatalf("GET %s = %d: %s", u, rec.Code, rec.Body.String())
					}
					bytes += rec.Body.Len()
				}
			}
			slices.Sort(took)
			q := func(p float64) float64 { return float64(took[int(p*float64(len(took)-1))].Microseconds()) / 1000 }
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.95), "p95-ms")
			b.ReportMetric(float64(bytes)/float64(len(took)), "bytes/answer")
			b.ReportMetric(float64(n), "events")
		})
	}
}
