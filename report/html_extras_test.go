package report

import (
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/internal/testenv"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/sweep"
	"github.com/memscope/memscope/trace"
)

// testSweep is a made-up sweep of two precisions (no sweep run is
// committed under fixtures/ yet): fp32 fits up to batch 8, bf16 up to 16,
// peak = 1 GiB + batch × slope.
func testSweep() *sweep.Analysis {
	const gib = 1 << 30
	r := &capture.Results{Schema: capture.ResultsSchema, Workload: capture.WorkloadInfo{Name: "llama"}, Mode: "train",
		Optimizer: "adamw", Warmup: 1, Steps: 3, Nproc: 1, MemoryLimit: 24 * gib, Precisions: []string{"fp32", "bf16"},
		Device: capture.DeviceInfo{Name: "NVIDIA H200", Total: 140 * gib}}
	for _, prec := range r.Precisions {
		slope := int64(2 * gib)
		if prec == "bf16" {
			slope = gib
		}
		for _, b := range []int{1, 2, 4, 8, 16, 32} {
			p := capture.Point{ID: fmt.Sprintf("%s-b%d", prec, b), Precision: prec, Batch: b, Stage: capture.StageLadder}
			peak := gib + int64(b)*slope
			if peak <= r.MemoryLimit {
				ms := 10 * float64(b)
				p.Fits, p.StepTimeMS = true, &ms
				p.Peak = capture.Numbers{Allocated: peak, Requested: peak, Reserved: peak + gib/2, Active: peak}
			} else {
				p.OOM = true
			}
			r.Points = append(r.Points, p)
		}
	}
	return sweep.Analyze("runs/sweep", r)
}

// sweepFixture reads the committed sweep run; without it the test skips,
// or fails under CI (need).
func sweepFixture(t *testing.T) *sweep.Analysis {
	t.Helper()
	const dir = "../fixtures/sweep-llama"
	r, err := capture.ReadResults(dir)
	if err != nil {
		testenv.Need(t, "no sweep run to report on: %v", err)
	}
	return sweep.Analyze(dir, r)
}

// TestHTMLSweep: the sweep chart plots each fitting point's peak, the OOMs
// at the limit and the fitted line through fixed and slope.
func TestHTMLSweep(t *testing.T) {
	t.Run("made-up", func(t *testing.T) { checkSweep(t, testSweep()) })
	t.Run("sweep-llama", func(t *testing.T) { checkSweep(t, sweepFixture(t)) })
}

func checkSweep(t *testing.T, a *sweep.Analysis) {
	page := renderHTML(t, nil, HTMLOptions{Run: &RunView{Sweep: a}})
	c, ok := pageCharts(t, page)["run-sweep"]
	if !ok || c.Kind != "sweep" {
		t.Fatalf("no sweep chart")
	}
	got := map[string][][2]float64{}
	for _, s := range c.Option["series"].([]any) {
		sm := s.(map[string]any)
		for _, d := range sm["data"].([]any) {
			v := d.(map[string]any)["value"].([]any)
			x, _ := v[0].(json.Number).Float64()
			y, _ := v[1].(json.Number).Float64()
			got[sm["name"].(string)] = append(got[sm["name"].(string)], [2]float64{x, y})
		}
	}
	for _, p := range a.Rows {
		name := p.Precision + " peak"
		want := [2]float64{float64(p.Batch), float64(p.Peak.Allocated)}
		if p.OOM {
			name, want = p.Precision+" OOM", [2]float64{float64(p.Batch), float64(a.Results.MemoryLimit)}
		}
		if !containsPoint(got[name], want) {
			t.Errorf("series %q lacks %v", name, want)
		}
	}
	for _, f := range a.Fits {
		name := fmt.Sprintf("%s fit (R² %.3f)", f.Precision, f.R2)
		line := got[name]
		if len(line) != 2 || line[0][1] != f.Fixed || line[1][1] != f.Fixed+line[1][0]*f.Slope {
			t.Errorf("fit line %q = %v, want from (0, %g) with slope %g", name, line, f.Fixed, f.Slope)
		}
	}
	for _, f := range a.Frontiers {
		if mark := fmt.Sprintf("%s: first OOM at %d", f.Precision, f.FirstFail); f.FirstFail > 0 && !strings.Contains(page, mark) {
			t.Errorf("the frontier %q is not marked", mark)
		}
	}
}

func containsPoint(ps [][2]float64, p [2]float64) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// TestHTMLCaptureRanks: a capture run shows one bar and one row per rank.
func TestHTMLCaptureRanks(t *testing.T) {
	d, err := capture.ReadRun("../capture/testdata/run-fake-2ranks")
	if err != nil {
		t.Fatal(err)
	}
	a := sweep.SummarizeRun(d)
	_, v := fixtureView(t, "mlp-adamw")
	page := renderHTML(t, []*attribution.View{v}, HTMLOptions{Run: &RunView{Capture: a}})
	c := pageCharts(t, page)["run-ranks"]
	series := c.Option["series"].([]any)
	alloc := series[0].(map[string]any)["data"].([]any)
	if len(alloc) != len(a.Ranks) {
		t.Fatalf("%d bars of peak allocated, want one per rank (%d)", len(alloc), len(a.Ranks))
	}
	for i, r := range a.Ranks {
		if got := num(t, alloc[i].(map[string]any)["value"]); got != r.Peak.Allocated {
			t.Errorf("rank %d bar = %d, want peak allocated %d", r.Rank, got, r.Peak.Allocated)
		}
	}
	if !strings.Contains(page, `href="#run"`) {
		t.Error("the run section is not in the navigation")
	}
}

// TestHTMLOps: the operator table of a profiler trace lists its largest
// operators with their bytes, and says how many it left out.
func TestHTMLOps(t *testing.T) {
	tr, err := trace.Open("../fixtures/llama-profiled/trace.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	tb := tr.OpTable(tr.PeakDevice(), false)
	page := html.UnescapeString(renderHTML(t, nil, HTMLOptions{Ops: &OpsView{Source: "trace.json.gz", Table: tb, Top: 5}}))
	for _, r := range tb.Rows[:5] {
		if !strings.Contains(page, "<td>"+r.Name+"</td>") || !strings.Contains(page, units.Bytes(r.SelfAlloc)) {
			t.Errorf("operator table lacks %s with %s self", r.Name, units.Bytes(r.SelfAlloc))
		}
	}
	if want := fmt.Sprintf("(%d more operators)", len(tb.Rows)-5); !strings.Contains(page, want) {
		t.Errorf("operator table does not say %q", want)
	}
}

// TestProfileViews: a trace becomes the operator table of its device with
// the highest allocated peak, with its warnings; an export_memory_timeline
// file becomes the category chart.
func TestProfileViews(t *testing.T) {
	tr, err := trace.OpenProfile("../fixtures/llama-profiled/trace.json.gz")
	if err != nil || tr.Trace == nil {
		t.Fatalf("OpenProfile(trace.json.gz) = %v, %v", tr, err)
	}
	tr.Trace.Warnings = append(tr.Trace.Warnings, trace.Warning{Offset: 12, Message: "planted"})
	ov, tv := ProfileViews("trace.json.gz", tr, 7)
	want := tr.Trace.OpTable(tr.Trace.PeakDevice(), false)
	if tv != nil || ov == nil || ov.Source != "trace.json.gz" || ov.Top != 7 || ov.Table.Device != want.Device || len(ov.Table.Rows) != len(want.Rows) || ov.Table.Rows[0] != want.Rows[0] {
		t.Errorf("ProfileViews(trace) = %+v, %+v; want the table of device %v (%d rows), top 7", ov, tv, want.Device, len(want.Rows))
	}
	if ov != nil && (len(ov.Warnings) != len(tr.Trace.Warnings) || ov.Warnings[len(ov.Warnings)-1] != tr.Trace.Warnings[len(tr.Trace.Warnings)-1].String()) {
		t.Errorf("ProfileViews(trace).Warnings = %q, want the trace's %v", ov.Warnings, tr.Trace.Warnings)
	}
	tl, err := trace.OpenProfile("../fixtures/llama-profiled/memory_timeline.json")
	if err != nil || tl.Timeline == nil {
		t.Fatalf("OpenProfile(memory_timeline.json) = %v, %v", tl, err)
	}
	ov, tv = ProfileViews("memory_timeline.json", tl, 7)
	if ov != nil || tv == nil || tv.Source != "memory_timeline.json" || tv.Timeline != tl.Timeline {
		t.Errorf("ProfileViews(timeline) = %+v, %+v; want the category chart", ov, tv)
	}
}
