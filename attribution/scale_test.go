package attribution_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// The shapes of issue 11 that made replay or analysis quadratic, one
// dimension at a time, each at a size where the quadratic code took more
// than 10 s (so a regression times the suite out; no timing is asserted)
// and the fixed code well under a second. The values asserted follow from
// how snapgen built the input.

const mib2 = 2 << 20 // every block snapgen's extreme shapes make

func analyzeAll(s *snapshot.Snapshot) *attribution.Analysis {
	return attribution.Analyze(s, attribution.Options{Device: -1})
}

func oneDevice(t *testing.T, a *attribution.Analysis) *attribution.Device {
	t.Helper()
	if len(a.Devices) != 1 {
		t.Fatalf("Analyze(%s) has %d devices, want 1", a.Snapshot.Source, len(a.Devices))
	}
	d := a.Devices[0]
	for _, w := range d.Warnings {
		if w.Kind == snapshot.WarnContradiction || w.Kind == snapshot.WarnSizes || w.Kind == snapshot.WarnLateStart {
			t.Errorf("%s: warning %s: %s", a.Snapshot.Source, w.Kind, w.Message)
		}
	}
	return d
}

func wantBytes(t *testing.T, what string, got, want int64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", what, got, want)
	}
}

// 30,000 segments live together, then freed: the old layout rebuilt the
// segment list on each free (and on each segment_alloc walking back).
// Before: 10.3 s at 20,000.
func TestScaleManySegments(t *testing.T) {
	const n = 30_000
	d := oneDevice(t, analyzeAll(snapgen.ManySegments(n)))
	kept := int64((n + 9) / 10)
	tl := d.Timeline
	wantBytes(t, "PeakAllocated", tl.PeakAllocated.Bytes, n*mib2)
	wantBytes(t, "PeakReserved", tl.PeakReserved.Bytes, n*2*mib2)
	wantBytes(t, "End.Allocated", tl.End.Allocated, kept*mib2)
	wantBytes(t, "End.Reserved", tl.End.Reserved, kept*2*mib2)
	wantBytes(t, "segments at the end", int64(len(d.End.Ranges)), kept)
	wantBytes(t, "segments at the peak", int64(len(d.Peak.Ranges)), n)
	wantBytes(t, "blocks live at the end", int64(len(d.End.Live)), kept)
}

// 100,000 blocks in one segment at falling addresses, half freed at
// rising ones: the old layout shifted a sorted slice per event. Before:
// 1.06 s at 50,000 and 62.7 s at 200,000 (so about 16 s here).
func TestScaleFallingBlocks(t *testing.T) {
	const n = 100_000
	d := oneDevice(t, analyzeAll(snapgen.FallingBlocks(n)))
	tl := d.Timeline
	wantBytes(t, "PeakAllocated", tl.PeakAllocated.Bytes, n*mib2)
	wantBytes(t, "PeakAllocated.Index", int64(tl.PeakAllocated.Index), n)
	wantBytes(t, "End.Allocated", tl.End.Allocated, (n-n/2)*mib2)
	wantBytes(t, "End.Reserved", tl.End.Reserved, n*mib2)
	wantBytes(t, "blocks live at the peak", int64(len(d.Peak.Live)), n)
	wantBytes(t, "blocks live at the end", int64(len(d.End.Live)), n-n/2)
	for _, b := range d.End.Live {
		if b.Size != mib2 || b.Estimated {
			t.Fatalf("live block at %#x: size %d (estimated %v), want %d exact", b.Addr, b.Size, b.Estimated, mib2)
		}
	}
}

// 20,000 devices of one segment and one block each, under a stack of
// their own: every device scanned every segment and annotation, and made
// a table the size of the whole stack table. Before: 3.7 s at 10,000.
func TestScaleManyDevices(t *testing.T) {
	const n = 20_000
	a := analyzeAll(snapgen.ManyDevices(n))
	if len(a.Devices) != n {
		t.Fatalf("Analyze has %d devices, want %d", len(a.Devices), n)
	}
	for i, d := range a.Devices {
		tl := d.Timeline
		if d.Device != i || tl.PeakAllocated.Bytes != mib2 || tl.PeakReserved.Bytes != 2*mib2 ||
			tl.End.Allocated != mib2 || len(d.End.Live) != 1 || len(tl.Warnings) != 0 {
			t.Fatalf("device %d (index %d): peak %d, reserved %d, end %d, %d live, warnings %v; want %d, %d, %d, 1, none",
				d.Device, i, tl.PeakAllocated.Bytes, tl.PeakReserved.Bytes, tl.End.Allocated, len(d.End.Live), tl.Warnings, mib2, 2*mib2, mib2)
		}
	}
	for _, i := range []int{0, n / 2, n - 1} {
		d := a.Devices[i]
		if len(d.Peak.Sites) != 1 || d.Peak.Sites[0].Bytes != mib2 {
			t.Fatalf("device %d: peak sites %+v, want one of 2 MiB", i, d.Peak.Sites)
		}
		if got := d.Peak.Sites[0].Label; !strings.Contains(got, fmt.Sprintf("train.py:%d", i+1)) {
			t.Errorf("device %d: peak site %q, want train.py:%d", i, got, i+1)
		}
	}
	if r := a.Snapshot.Ranges(n - 1); len(r) != 1 || r[0].Name != "step" {
		t.Errorf("Ranges(%d) = %v, want one step range", n-1, r)
	}
}

// 25,000 OOMs: each post-mortem replayed the trace from its first event.
// Before: 1.15 s at 5,000.
func TestScaleManyOOMs(t *testing.T) {
	const n = 25_000
	d := oneDevice(t, analyzeAll(snapgen.ManyOOMs(n)))
	if len(d.OOMs) != n {
		t.Fatalf("%d OOMs, want %d", len(d.OOMs), n)
	}
	wantBytes(t, "PeakAllocated", d.Timeline.PeakAllocated.Bytes, mib2)
	for _, o := range d.OOMs {
		if o.Allocated != mib2 || o.Reserved != 2*mib2 || len(o.At.Live) != 1 || o.Index != 4*(o.N-1)+2 {
			t.Fatalf("OOM %d at event %d: allocated %d, reserved %d, %d live; want %d, %d, 1 at event %d",
				o.N, o.Index, o.Allocated, o.Reserved, len(o.At.Live), mib2, 2*mib2, 4*(o.N-1)+2)
		}
	}
}

// 3,000 harness steps of a leak's staircase: the analysis itself was
// linear here; the budget's per-step moments were not (cmd/memscope's
// TestScaleBudgetStaircase). The numbers the budget compares come from it.
func TestScaleStaircase(t *testing.T) {
	const n = 3000
	d := oneDevice(t, analyzeAll(snapgen.Staircase(n)))
	tl := d.Timeline
	wantBytes(t, "PeakAllocated", tl.PeakAllocated.Bytes, n*mib2)
	wantBytes(t, "steps", int64(len(d.Phases.Steps)), n)
	if d.Phases.Source != "harness" {
		t.Errorf("phases from %q, want harness", d.Phases.Source)
	}
	for _, ph := range d.Phases.List {
		if ph.Name == "forward" && ph.Peak.Allocated != int64(ph.Step+1)*mib2 {
			t.Fatalf("step %d forward peak = %d, want %d", ph.Step, ph.Peak.Allocated, int64(ph.Step+1)*mib2)
		}
	}
	if !d.Leak.Found || d.Leak.GrowthPerStep != mib2 {
		t.Errorf("leak found %v, growth %d per step (reason %d); want a 2 MiB staircase", d.Leak.Found, d.Leak.GrowthPerStep, d.Leak.Reason)
	}
}

// The benchmarks of the extreme shapes, each at three sizes, for the
// growth exponents in BENCHMARKS.md:
//
//	go test ./attribution -run '^$' -bench Scale -benchtime 3x
func BenchmarkScale(b *testing.B) {
	shapes := []struct {
		name  string
		build func(int) *snapshot.Snapshot
		sizes []int
	}{
		{"segments", snapgen.ManySegments, []int{10_000, 30_000, 100_000}},
		{"falling-blocks", snapgen.FallingBlocks, []int{50_000, 200_000, 800_000}},
		{"devices", snapgen.ManyDevices, []int{5_000, 20_000, 80_000}},
		{"ooms", snapgen.ManyOOMs, []int{5_000, 25_000, 100_000}},
		{"steps", snapgen.Staircase, []int{1_000, 4_000, 16_000}},
	}
	for _, sh := range shapes {
		for _, n := range sh.sizes {
			b.Run(fmt.Sprintf("%s=%d", sh.name, n), func(b *testing.B) {
				s := sh.build(n)
				b.ReportAllocs()
				for b.Loop() {
					analyzeAll(s)
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), sh.name+"/s")
			})
		}
	}
}
