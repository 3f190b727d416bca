package report

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// maxPage is the bound on a page without the ECharts library (DESIGN.md).
const maxPage = 3 << 20

// pageFor renders the views of snapshots the way 'memscope report' does
// and returns the page less the inlined library (whose size is fixed:
// EChartsSize), which is what the bound holds.
func pageFor(t testing.TB, snaps ...*snapshot.Snapshot) []byte {
	t.Helper()
	var ans []*attribution.Analysis
	n := 0
	for _, s := range snaps {
		an := attribution.Analyze(s, attribution.Options{Device: -1})
		ans = append(ans, an)
		n += len(an.Devices)
	}
	var views []*attribution.View
	for _, an := range ans {
		views = append(views, attribution.NewView(an, attribution.ViewOptionsFor(n)))
	}
	var b bytes.Buffer
	if err := writeHTML(&b, views, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	return withoutLibrary(t, b.Bytes())
}

// withoutLibrary is the page less the inlined echarts build.
func withoutLibrary(t testing.TB, page []byte) []byte {
	t.Helper()
	out := bytes.Replace(page, []byte(echartsLib), nil, 1)
	if len(out) != len(page)-EChartsSize() {
		t.Fatalf("the page does not inline the echarts build")
	}
	return out
}

// TestHTMLBoundGenerated: a report of a snapshot made by the repository's
// generator (the Llama fixture's trace repeated to tens of MB) stays under
// the bound, and its timeline still reaches the true peak.
func TestHTMLBoundGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and analyses a 24 MB snapshot")
	}
	src, err := snapshot.Open("../fixtures/llama-bf16/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	var big bytes.Buffer
	st, err := snapgen.Write(&big, src, 24<<20)
	if err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Decode(&big, "generated.pickle")
	if err != nil {
		t.Fatal(err)
	}
	page := pageFor(t, s)
	t.Logf("generated snapshot %d bytes, %d events: page %d bytes without the library", st.Bytes, st.Events, len(page))
	if len(page) > maxPage {
		t.Errorf("page of a %d-byte snapshot = %d bytes, want ≤ %d", st.Bytes, len(page), maxPage)
	}
	charts := pageCharts(t, string(page))
	var hi int64
	for _, r := range datasetRows(t, charts["f0d0-timeline"]) {
		hi = max(hi, num(t, r[1]))
	}
	an := attribution.Analyze(s, attribution.Options{Device: -1})
	if want := an.Devices[0].Timeline.PeakAllocated.Bytes; hi != want {
		t.Errorf("highest allocated on the timeline = %d, want the peak %d", hi, want)
	}
}

// TestHTMLBoundHostile: snapshots built to make the page as large as it
// can be — every allocation its own site, names of characters that HTML
// and JSON both escape, hundreds of steps, segments and OOMs — stay under
// the bound with one device and with the most devices a page takes.
func TestHTMLBoundHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and analyses 16 devices")
	}
	for _, devices := range []int{1, attribution.MaxViewSections} {
		t.Run(fmt.Sprintf("%d-devices", devices), func(t *testing.T) {
			page := pageFor(t, hostileSnapshot(devices, 900))
			t.Logf("%d devices: page %d bytes", devices, len(page))
			if len(page) > maxPage {
				t.Errorf("page of %d hostile devices = %d bytes, want ≤ %d", devices, len(page), maxPage)
			}
		})
	}
}

// hostileSnapshot returns a snapshot whose devices each record steps of
// allocations with unique 32-frame stacks (one leaked per step), 200
// segments and an OOM every 60 allocations. Names are longer than any
// clip and made of characters that HTML and JSON escape.
func hostileSnapshot(devices, allocs int) *snapshot.Snapshot {
	st := snapshot.NewStacks()
	long := func(k int) string { return strings.Repeat(`<&>"`, 42) + fmt.Sprint(k) }
	var shared []snapshot.FrameID
	for k := range 31 {
		shared = append(shared, st.InternFrame(snapshot.Frame{Name: long(k), Filename: "/x/" + long(k) + ".py", Line: int64(k + 1)}))
	}
	s := &snapshot.Snapshot{Source: "hostile.pickle", HasTraces: true, Stacks: st, Strings: snapshot.NewStrings()}
	const mib = 1 << 20
	for d := range devices {
		var ev []snapshot.Event
		now := int64(1_700_000_000_000_000)
		tick := func() int64 { now += 10; return now }
		base := uint64(d+1) << 40
		for k := range 200 {
			ev = append(ev, snapshot.Event{Action: snapshot.ActionSegmentAlloc, Addr: base + uint64(k)*8*mib, Size: 8 * mib, TimeUS: tick()})
		}
		var live []uint64
		step := 0
		for i := range allocs {
			if i%24 == 0 {
				for _, phase := range []string{"forward", "backward"} {
					name := fmt.Sprintf("memscope/step/%d/%s", step, phase)
					s.Annotations = append(s.Annotations, snapshot.Annotation{Start: true, Name: name, Device: d, TimeUS: tick()},
						snapshot.Annotation{Name: name, Device: d, TimeUS: tick() + 5})
				}
				step++
			}
			fid := st.InternFrame(snapshot.Frame{Name: long(1000 + i), Filename: "/u/" + long(i) + ".py", Line: int64(i + 1)})
			stack := st.InternStack(append([]snapshot.FrameID{fid}, shared...))
			addr := base + uint64(i%200)*8*mib + uint64(i/200%8)*mib
			ev = append(ev, snapshot.Event{Action: snapshot.ActionAlloc, Addr: addr, Size: mib, Stack: stack, TimeUS: tick()})
			live = append(live, addr)
			if i%24 != 0 && len(live) > 1 { // keep one block per step: a leak
				a := live[len(live)-2]
				live = append(live[:len(live)-2], live[len(live)-1])
				ev = append(ev, snapshot.Event{Action: snapshot.ActionFreeRequested, Addr: a, Size: mib, Stack: stack, TimeUS: tick()},
					snapshot.Event{Action: snapshot.ActionFreeCompleted, Addr: a, Size: mib, Stack: stack, TimeUS: tick()})
			}
			if i%60 == 59 {
				ev = append(ev, snapshot.Event{Action: snapshot.ActionOOM, Addr: mib, Size: 64 * mib, Stack: stack, TimeUS: tick()})
			}
		}
		for len(s.Traces) <= d {
			s.Traces = append(s.Traces, nil)
		}
		s.Traces[d] = ev
	}
	return s
}

// BenchmarkHTMLLarge reports the page of a large snapshot: set
// MEMSCOPE_BENCH_SNAPSHOT, or make ../bench-data/big.pickle with
//
//	go run ./snapshot/internal/gensnap -o bench-data/big.pickle -size 1GiB -from fixtures/llama-bf16/snapshot.pickle
//	go test ./report -run '^$' -bench HTMLLarge -benchtime 1x
func BenchmarkHTMLLarge(b *testing.B) {
	path := os.Getenv("MEMSCOPE_BENCH_SNAPSHOT")
	if path == "" {
		path = "../bench-data/big.pickle"
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Skipf("%v: no large snapshot to report on", err)
	}
	s, err := snapshot.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	an := attribution.Analyze(s, attribution.Options{Device: -1})
	b.ReportAllocs()
	var page int
	for b.Loop() {
		v := attribution.NewView(an, attribution.ViewOptionsFor(len(an.Devices)))
		var buf bytes.Buffer
		if err := writeHTML(&buf, []*attribution.View{v}, HTMLOptions{}); err != nil {
			b.Fatal(err)
		}
		page = len(withoutLibrary(b, buf.Bytes()))
	}
	b.ReportMetric(float64(page), "page-bytes")
	b.ReportMetric(float64(st.Size()), "snapshot-bytes")
	if page > maxPage {
		b.Errorf("page = %d bytes, want ≤ %d", page, maxPage)
	}
}

// TestHTMLBound1GB: the page of a report on a 1 GB snapshot (the Llama
// fixture's trace repeated by the repository's generator) stays under the
// bound. It writes 1 GB to a temporary folder and needs about 2 GB of
// memory, so it runs under CI (CI=true) or with MEMSCOPE_BIG_TESTS=1.
func TestHTMLBound1GB(t *testing.T) {
	if os.Getenv("CI") != "true" && os.Getenv("MEMSCOPE_BIG_TESTS") != "1" {
		t.Skip("writes and reports a 1 GB snapshot: set MEMSCOPE_BIG_TESTS=1 (CI runs it)")
	}
	src, err := snapshot.Open("../fixtures/llama-bf16/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "big.pickle")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	st, err := snapgen.Write(w, src, 1<<30)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	page := pageFor(t, s)
	t.Logf("generated snapshot %d bytes, %d events: page %d bytes without the library", st.Bytes, st.Events, len(page))
	if st.Bytes < 1<<30 {
		t.Fatalf("generated %d bytes, want ≥ 1 GiB", st.Bytes)
	}
	if len(page) > maxPage {
		t.Errorf("page of a %d-byte snapshot = %d bytes, want ≤ %d", st.Bytes, len(page), maxPage)
	}
}
