package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	sg "github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/internal/units"
)

const (
	mib = int64(1) << 20
	seg = int64(0x7f0000000000)
)

// synthAnalysis decodes and analyses a hand-built snapshot.
func synthAnalysis(t *testing.T, s *sg.Synth) *attribution.Analysis {
	t.Helper()
	snap, err := s.Decode("synth.pickle")
	if err != nil {
		t.Fatal(err)
	}
	return attribution.Analyze(snap, attribution.Options{Device: -1})
}

// renderings returns the summary as text, JSON and HTML.
func renderings(t *testing.T, an *attribution.Analysis) (text string, doc SummaryDoc, page string) {
	t.Helper()
	sum := attribution.Summarize(an, 5)
	var b bytes.Buffer
	if err := Write(&b, Text, &Summary{Sum: sum}); err != nil {
		t.Fatal(err)
	}
	text = b.String()
	b.Reset()
	if err := Write(&b, JSON, &Summary{Sum: sum}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	page = html.UnescapeString(renderHTML(t, []*attribution.View{attribution.NewView(an, attribution.ViewOptionsFor(1))}, HTMLOptions{}))
	return text, doc, page
}

// TestUntimedText: a trace without time_us (older torch, torch_npu) reads
// "time not recorded" in the summary, the peak, the OOM post-mortem and the
// report, never "+0 µs of 0 µs"; its JSON says times_recorded false.
func TestUntimedText(t *testing.T) {
	an := synthAnalysis(t, &sg.Synth{
		Segments: []map[string]any{sg.Seg(seg, sg.Blk(4*mib, 4*mib, "active_allocated"), sg.Blk(16*mib, 0, "inactive"))},
		Traces: [][]map[string]any{{
			sg.Ev("segment_alloc", seg, 20*mib, -1),
			sg.Ev("alloc", seg, 4*mib, -1),
			sg.Ev("alloc", seg+4*mib, 2*mib, -1),
			sg.Ev("free_requested", seg+4*mib, 2*mib, -1),
			sg.Ev("free_completed", seg+4*mib, 2*mib, -1),
			sg.Ev("oom", 1<<30, 64*mib, -1),
		}},
	})
	text, doc, page := renderings(t, an)
	d := an.Devices[0]
	var peak, oom bytes.Buffer
	if err := momentText(&peak, an, d, d.Peak, 5, false); err != nil {
		t.Fatal(err)
	}
	if err := oomText(&oom, an, d, 5); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]struct{ out, says string }{
		"summary": {text, "peak allocated 6.00 MiB at event 2 of 6 (time not recorded)"},
		"peak":    {peak.String(), "device 0 at peak (event 2, time not recorded)"},
		"oom":     {oom.String(), "device 0, out of memory 1 at event 5 (time not recorded)"},
		"html":    {page, "happened at event 2 of 6 (time not recorded)"},
	} {
		if !strings.Contains(want.out, want.says) {
			t.Errorf("%s does not say %q:\n%s", name, want.says, want.out)
		}
		if strings.Contains(want.out, "µs of") || strings.Contains(want.out, "+0 µs") {
			t.Errorf("%s prints a time that was not recorded", name)
		}
	}
	if dj := doc.Files[0].Devices[0]; dj.TimesRecorded || len(dj.Warnings) != 1 || !strings.Contains(dj.Warnings[0], "records no times") {
		t.Errorf("JSON times_recorded %v, warnings %q; want false and the untimed warning", dj.TimesRecorded, dj.Warnings)
	}
}

// TestNoHistoryText: a state-only snapshot says "no history recorded" in
// every rendering, and nowhere that anything was allocated before recording.
func TestNoHistoryText(t *testing.T) {
	an := synthAnalysis(t, &sg.Synth{
		Segments: []map[string]any{sg.Seg(seg, sg.Blk(4*mib, 4*mib, "active_allocated"), sg.Blk(16*mib, 0, "inactive"))},
		Traces:   [][]map[string]any{{}},
	})
	text, doc, page := renderings(t, an)
	for name, out := range map[string]string{"summary": text, "html": page} {
		if !strings.Contains(out, "(no history recorded)") || strings.Contains(out, "before recording") {
			t.Errorf("%s: want \"(no history recorded)\" and no \"before recording\":\n%s", name, out)
		}
	}
	if s := doc.Files[0].Devices[0].TopSites; len(s) != 1 || s[0].Kind != "unrecorded" || s[0].Label != "(no history recorded)" {
		t.Errorf("JSON top sites %+v, want one of kind unrecorded", s)
	}
}

// TestOOMPanel: the report's OOM post-mortem shows where the failing
// request was made, with its stack, and the per-process cap's bracket.
func TestOOMPanel(t *testing.T) {
	an, v := fixtureView(t, "oom")
	o := an.Devices[0].OOMs[0]
	page := html.UnescapeString(renderHTML(t, []*attribution.View{v}, HTMLOptions{}))
	for _, want := range []string{
		`The request came from <details><summary class="site user" title="` + o.SiteLabel + `">` + o.SiteLabel + `</summary>`,
		`<li class="user"><code>&lt;repo&gt;/capture/harness.py:430</code> scenario_oom</li>`,
		"<th>per-process cap, at least</th><td class=\"num\">" + units.Bytes(o.Cap.Low) + "</td><th>and below</th><td class=\"num\">" + units.Bytes(o.Cap.High),
	} {
		want = strings.ReplaceAll(want, "&lt;", "<")
		want = strings.ReplaceAll(want, "&gt;", ">")
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestLostText: a wrapped ring buffer's warning says, in the summary's
// text, JSON and report, what the steps' annotations tell of the entries it
// lost (attribution's TestLostHistory checks the estimate). Five harness
// steps of 6 entries; the buffer kept the last 22.
func TestLostText(t *testing.T) {
	var trace, annots []map[string]any
	a, b := seg, seg+4*mib
	for s := range 5 {
		base := int64(1_000_000 + 1000*s)
		for _, ph := range []struct {
			name  string
			start int64
		}{{"forward", 0}, {"backward", 500}} {
			name := fmt.Sprintf("memscope/step/%d/%s", s, ph.name)
			annots = append(annots, map[string]any{"stage": "START", "name": name, "device": 0, "time_us": base + ph.start},
				map[string]any{"stage": "END", "name": name, "device": 0, "time_us": base + ph.start + 400})
		}
		trace = append(trace,
			sg.Ev("alloc", a, 4*mib, base+100), sg.Ev("alloc", b, 2*mib, base+200),
			sg.Ev("free_requested", b, 2*mib, base+600), sg.Ev("free_completed", b, 2*mib, base+601),
			sg.Ev("free_requested", a, 4*mib, base+700), sg.Ev("free_completed", a, 4*mib, base+701))
	}
	an := synthAnalysis(t, &sg.Synth{
		Segments:    []map[string]any{sg.Seg(seg, sg.Blk(20*mib, 0, "inactive"))},
		Traces:      [][]map[string]any{trace[8:]},
		Settings:    map[string]any{"trace_alloc_overflowed": true, "trace_alloc_max_entries": 22},
		Annotations: annots,
	})
	want := "device 0: the trace ring buffer wrapped (allocator_settings says trace_alloc_overflowed): only its last 22 entries survive; 6.00 MiB in 2 blocks was live before the first of them, and whatever was allocated and freed earlier is lost; peaks are over the surviving entries only; by the steps' annotations, which outlive their entries, about 8 entries were lost: 1 whole step and the start of step 1, at the median 6 entries of the 3 steps recorded whole"
	text, doc, page := renderings(t, an)
	if got := strings.Join(strings.Fields(text), " "); !strings.Contains(got, want) {
		t.Errorf("summary text lacks the wrapped warning with its estimate:\n%s", text)
	}
	if ws := doc.Files[0].Devices[0].Warnings; len(ws) == 0 || ws[0] != want {
		t.Errorf("JSON warnings = %q, want %q first", ws, want)
	}
	if !strings.Contains(page, want) { // whole: the page's bound on a warning is above it
		t.Errorf("report lacks the wrapped warning %q", want)
	}

	for _, tt := range []struct {
		l    attribution.Lost
		want string
	}{
		{attribution.Lost{Entries: 12, Steps: 2, CutStep: -1, PerStep: 6, Complete: 3},
			"by the steps' annotations, which outlive their entries, about 12 entries were lost: 2 whole steps, at the median 6 entries of the 3 steps recorded whole"},
		{attribution.Lost{Entries: 4, CutStep: 0, PerStep: 6, Complete: 4},
			"by the steps' annotations, which outlive their entries, about 4 entries were lost: the start of step 0, at the median 6 entries of the 4 steps recorded whole"},
	} {
		if got := lostText(&tt.l); got != tt.want {
			t.Errorf("lostText(%+v) =\n %s\nwant\n %s", tt.l, got, tt.want)
		}
	}
}
