package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report"
)

const legacyTrace = "../../trace/testdata/kineto-1.10.json"

// TestOpsLegacyTrace: a trace of torch 1.9–1.12 (Bytes only, category
// Operator, quoted op tids) gives the per-op table whose figures follow
// from its events (trace/testdata/README.md): the peak of the running sum
// of Bytes and each op's self bytes; the live-at-peak column is left out,
// as the trace has no addresses to pair frees with.
func TestOpsLegacyTrace(t *testing.T) {
	r := runMemscope("ops", "--json", "--top", "-1", "--no-backward-labels", legacyTrace)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var doc struct {
		Kind  string `json:"kind"`
		Files []struct {
			Table report.OpsJSON `json:"table"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Files) != 1 {
		t.Fatalf("ops --json: %d tables, want 1 (cuda:0; CPU memory left out)", len(doc.Files))
	}
	tb := doc.Files[0].Table
	if tb.Device != "cuda:0" || tb.PeakBytes != 19456 || tb.PeakEpochUS != 1650000000001550 || tb.Events != 13 ||
		tb.AllocatedFrom != "sum_of_bytes" || tb.LiveAtPeakKnown {
		t.Errorf("ops --json: %s peak %d at %.0f µs, %d events, from %q, live known %v; want cuda:0 19456 at 1650000000001550, 13, sum_of_bytes, false",
			tb.Device, tb.PeakBytes, tb.PeakEpochUS, tb.Events, tb.AllocatedFrom, tb.LiveAtPeakKnown)
	}
	self := map[string]int64{}
	for _, row := range tb.Rows {
		self[row.Name] = row.SelfAlloc
	}
	for name, want := range map[string]int64{"aten::mm": 10240, "aten::addmm": 4096, "aten::relu": 4096,
		"aten::threshold_backward": 4096, "aten::sum": 512, "aten::ones_like": 512, "ProfilerStep#1": 0} {
		if self[name] != want {
			t.Errorf("ops --json: %s self alloc = %d, want %d", name, self[name], want)
		}
	}
	if !strings.Contains(r.stderr, "no Total Allocated") {
		t.Errorf("ops stderr = %q, want the warning that allocated is the running sum of Bytes", r.stderr)
	}

	r = runMemscope("ops", legacyTrace)
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, want := range []string{"peak allocated 19.00 KiB (running sum of Bytes", "live at the peak are not known"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("ops text lacks %q:\n%s", want, r.stdout)
		}
	}
	// Columns: self alloc, total alloc, self net, total net, allocs. The
	// step range allocates nothing itself, frees 17408 bytes (net −17 KiB)
	// and holds 9216 allocated, −8192 net in total (README.md).
	for _, want := range []string{`\s10\.00 KiB\s+10\.00 KiB\s+10\.00 KiB\s+10\.00 KiB\s+2 aten::mm \(backward of aten::addmm\)\n`,
		`\s0 B\s+9\.00 KiB\s+-17\.00 KiB\s+-8\.00 KiB\s+0 ProfilerStep#1\n`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("ops text has no row matching %s:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "live at peak") {
		t.Errorf("ops text has a live-at-peak column for a trace without addresses:\n%s", r.stdout)
	}
}

const (
	timelineJSON = "../../fixtures/llama-profiled/memory_timeline.json"
	timelineRaw  = "../../fixtures/llama-profiled/memory_timeline.raw.json.gz"
	profiledSnap = "../../fixtures/llama-profiled/snapshot.pickle"
)

// timelineNames are export_memory_timeline's columns 1..8 as memscope names them.
var timelineNames = []string{"parameter", "optimizer state", "input", "temporary", "activation", "gradient", "autograd detail", "unknown"}

// timelineFile reads memory_timeline.json with encoding/json: [times,
// sizes], sizes[i] = [baseline, one column per category].
func timelineFile(t *testing.T) (times []int64, sizes [][]int64) {
	t.Helper()
	b, err := os.ReadFile(timelineJSON)
	if err != nil {
		t.Fatal(err)
	}
	var doc []json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil || len(doc) != 2 {
		t.Fatalf("%s: %v (%d elements)", timelineJSON, err, len(doc))
	}
	if err := json.Unmarshal(doc[0], &times); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(doc[1], &sizes); err != nil {
		t.Fatal(err)
	}
	return times, sizes
}

func rowTotal(row []int64) (n int64) {
	for _, v := range row[1:] {
		n += v
	}
	return n
}

// timelineAt is the row of the last point at or before us (the file's
// value at that moment).
func timelineAt(times []int64, sizes [][]int64, us int64) map[string]int64 {
	at := -1
	for i, ts := range times {
		if ts <= us {
			at = i
		}
	}
	m := map[string]int64{}
	for k, name := range timelineNames {
		if at >= 0 {
			m[name] = sizes[at][k+1]
		}
	}
	return m
}

// TestOpsMemoryTimeline: an export_memory_timeline file given to ops,
// .json or .raw.json.gz, gives its peak by category, each category's
// maximum and the end, as the .json file's rows have them.
func TestOpsMemoryTimeline(t *testing.T) {
	times, sizes := timelineFile(t)
	peak := 0
	max := map[string]int64{}
	for i, row := range sizes {
		if rowTotal(row) > rowTotal(sizes[peak]) {
			peak = i
		}
		for k, name := range timelineNames {
			if i == 0 || row[k+1] > max[name] {
				max[name] = row[k+1]
			}
		}
	}
	last := len(times) - 1
	for _, path := range []string{timelineJSON, timelineRaw} {
		t.Run(path, func(t *testing.T) {
			r := runMemscope("ops", "--json", path)
			if r.err != nil {
				t.Fatal(r.err)
			}
			var doc struct {
				Kind  string `json:"kind"`
				Files []struct {
					Source   string              `json:"source"`
					Timeline report.TimelineJSON `json:"timeline"`
				} `json:"files"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Kind != "ops" || len(doc.Files) != 1 {
				t.Fatalf("ops --json: kind %q, %d files; want ops, 1", doc.Kind, len(doc.Files))
			}
			tl := doc.Files[0].Timeline
			if tl.Points != len(times) || tl.StartEpochUS != times[0] || tl.EndEpochUS != times[last] {
				t.Errorf("timeline: %d points from %d to %d, want %d from %d to %d", tl.Points, tl.StartEpochUS, tl.EndEpochUS, len(times), times[0], times[last])
			}
			if tl.Peak.Index != peak || tl.Peak.TimeEpochUS != times[peak] || tl.Peak.Total != rowTotal(sizes[peak]) {
				t.Errorf("peak: point %d at %d, %d bytes; want %d at %d, %d", tl.Peak.Index, tl.Peak.TimeEpochUS, tl.Peak.Total, peak, times[peak], rowTotal(sizes[peak]))
			}
			for k, name := range timelineNames {
				if tl.Peak.Categories[name] != sizes[peak][k+1] || tl.Max[name] != max[name] || tl.End[name] != sizes[last][k+1] {
					t.Errorf("%s: at peak %d, max %d, at end %d; want %d, %d, %d", name, tl.Peak.Categories[name], tl.Max[name], tl.End[name],
						sizes[peak][k+1], max[name], sizes[last][k+1])
				}
				if col := tl.Curve.Categories[name]; len(col) != len(times) || col[peak] != sizes[peak][k+1] {
					t.Errorf("curve of %s: %d points, want %d with the peak's value", name, len(col), len(times))
				}
			}
			r = runMemscope("ops", path)
			if r.err != nil {
				t.Fatal(r.err)
			}
			for _, want := range []string{"export_memory_timeline file", fmt.Sprintf("%d points", len(times)),
				"peak " + units.Bytes(rowTotal(sizes[peak])), units.Bytes(sizes[peak][2]) + " " /* optimizer state */} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("ops text lacks %q:\n%s", want, r.stdout)
				}
			}
		})
	}
}

// TestTraceFlagMemoryTimeline: peak, summary and report take the file as
// --trace and set its categories beside the snapshot's moment.
func TestTraceFlagMemoryTimeline(t *testing.T) {
	times, sizes := timelineFile(t)
	r := runMemscope("peak", "--json", "--trace", timelineJSON, profiledSnap)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var pk struct {
		Files []struct {
			Devices []report.MomentJSON `json:"devices"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &pk); err != nil {
		t.Fatal(err)
	}
	m := pk.Files[0].Devices[0]
	if m.Timeline == nil || !m.Timeline.Covered || m.Timeline.TimeEpochUS != m.TimeEpochUS {
		t.Fatalf("peak --trace timeline: %+v; want the timeline covering the peak at %d", m.Timeline, m.TimeEpochUS)
	}
	want := timelineAt(times, sizes, m.TimeEpochUS)
	if fmt.Sprint(m.Timeline.Categories) != fmt.Sprint(want) {
		t.Errorf("peak --trace timeline categories = %v, want %v (the file's row at %d µs)", m.Timeline.Categories, want, m.TimeEpochUS)
	}
	if r := runMemscope("peak", "--trace", timelineRaw, profiledSnap); r.err != nil ||
		!strings.Contains(r.stdout, "profiler memory timeline "+timelineRaw+" at this moment:") {
		t.Errorf("peak --trace raw timeline: %v\n%s", r.err, r.stdout)
	}

	r = runMemscope("summary", "--json", "--trace", timelineRaw, profiledSnap)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var sum report.SummaryDoc
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatal(err)
	}
	d := sum.Files[0].Devices[0]
	at := d.Peaks["allocated"].TimeEpochUS
	if d.TimelineAtPeak == nil || !d.TimelineAtPeak.Covered || d.TimelineAtPeak.TimeEpochUS != at ||
		fmt.Sprint(d.TimelineAtPeak.Categories) != fmt.Sprint(timelineAt(times, sizes, at)) {
		t.Errorf("summary --trace timeline_at_peak = %+v, want the file's row at the peak (%d µs): %v", d.TimelineAtPeak, at, timelineAt(times, sizes, at))
	}

	// A snapshot of another run: the timeline does not cover its moment.
	r = runMemscope("peak", "--json", "--trace", timelineJSON, mlpSnap)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var other struct {
		Files []struct {
			Devices []report.MomentJSON `json:"devices"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &other); err != nil {
		t.Fatal(err)
	}
	if tl := other.Files[0].Devices[0].Timeline; tl == nil || tl.Covered || len(tl.Categories) != 0 {
		t.Errorf("peak --trace of another run's timeline = %+v, want not covered and no categories", tl)
	}

	out := filepath.Join(t.TempDir(), "r.html")
	r = runMemscope("report", "-o", out, "--trace", timelineJSON, profiledSnap)
	if r.err != nil {
		t.Fatal(r.err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	_, opt, ok := strings.Cut(page, `<script type="application/json" id="memory-timeline-stack-option">`)
	if !strings.Contains(page, "Memory timeline (profiler)") || !ok {
		t.Fatalf("report --trace timeline: no memory-timeline section with a chart")
	}
	opt, _, _ = strings.Cut(opt, "</script>")
	var chart struct {
		Dataset []struct {
			Source [][]float64 `json:"source"`
		} `json:"dataset"`
	}
	if err := json.Unmarshal([]byte(opt), &chart); err != nil || len(chart.Dataset) != 1 {
		t.Fatalf("chart option: %v (%d datasets)", err, len(chart.Dataset))
	}
	var best float64
	for _, row := range chart.Dataset[0].Source {
		var n float64
		for _, v := range row[:len(timelineNames)] {
			n += v
		}
		best = math.Max(best, n)
	}
	peak := int64(0)
	for _, row := range sizes {
		peak = max(peak, rowTotal(row))
	}
	if rows := len(chart.Dataset[0].Source); rows != len(times) || int64(best) != peak {
		t.Errorf("chart: %d rows, highest stack %v; want %d rows and the file's peak %d", rows, best, len(times), peak)
	}
}
