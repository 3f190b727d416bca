package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report/jsondoc"
	"github.com/memscope/memscope/trace"
)

// MemoryTimeline is 'memscope ops' of an export_memory_timeline file: live
// bytes by torch's categories.
type MemoryTimeline struct {
	Source   string
	Timeline *trace.CategoryTimeline
}

func (*MemoryTimeline) Kind() string { return "ops" }

func (r *MemoryTimeline) writeText(w io.Writer) error { return timelineText(w, r.Source, r.Timeline) }

func (r *MemoryTimeline) fileEntry() any {
	t := timelineJSON(r.Timeline)
	return OpsFileJSON{Source: r.Source, Timeline: &t}
}

// timelineCategories names torch's memory-profiler categories
// (export_memory_timeline's columns) in memscope's words.
var timelineCategories = [trace.NumCategories]string{
	"parameter", "optimizer state", "input", "temporary", "activation", "gradient", "autograd detail", "unknown",
}

func timelineForm(ct *trace.CategoryTimeline) string {
	if ct.Raw {
		return "raw events [t_ns, action, bytes, category]"
	}
	return "[times, sizes]"
}

// timelineText describes an export_memory_timeline file given where a
// profiler trace is expected ('memscope ops'): its span, the peak by
// category, each category's maximum and the end.
func timelineText(w io.Writer, name string, ct *trace.CategoryTimeline) error {
	ew := &errWriter{w: w}
	s := ct.Summary()
	ew.printf("%s: an export_memory_timeline file (%s), not a Chrome trace: live tensor bytes by torch's memory-profiler category on the one device it was exported for; no operators\n",
		name, timelineForm(ct))
	if s.PeakIndex < 0 {
		ew.printf("\nthe timeline is empty\n")
		return ew.err
	}
	ew.printf("%d points over %s (epoch %d µs to %d µs)\n\n", s.Points, units.Duration(s.EndUS-s.StartUS), s.StartUS, s.EndUS)
	ew.printf("peak %s at +%s (point %d, epoch %d µs)\n\n", units.Bytes(s.AtPeak.Total()), units.Duration(s.PeakUS-s.StartUS), s.PeakIndex, s.PeakUS)
	tw := newTable(ew, tabwriter.AlignRight)
	fprintf(tw, "  at peak\tmax\tat end\t %s\n", "category")
	for c := range trace.NumCategories {
		fprintf(tw, "  %s\t%s\t%s\t %s\n", units.Bytes(s.AtPeak[c]), units.Bytes(s.Max[c]), units.Bytes(s.End[c]), timelineCategories[c])
	}
	fprintf(tw, "  %s\t%s\t%s\t %s\n", units.Bytes(s.AtPeak.Total()), units.Bytes(s.AtPeak.Total()), units.Bytes(s.End.Total()), "total")
	tw.Flush()
	ew.printf("\nfor operators, give the Chrome trace of the same run (export_chrome_trace); to set these categories beside a snapshot's, 'memscope peak --trace %s SNAP'\n", name)
	return ew.err
}

// TimelineJSON is an export_memory_timeline file in 'memscope ops --json'
// (under files[].timeline).
type TimelineJSON struct {
	Form         string           `json:"form"` // "coalesced" ([times, sizes]) or "raw"
	Points       int              `json:"points"`
	StartEpochUS int64            `json:"start_epoch_us"`
	EndEpochUS   int64            `json:"end_epoch_us"`
	Peak         TimelinePeakJSON `json:"peak"`
	Max          map[string]int64 `json:"max"`    // each category's highest bytes
	End          map[string]int64 `json:"at_end"` // the last point
	// Curve is every point: times and, per category, its bytes.
	Curve TimelineCurveJSON `json:"curve"`
}

type TimelinePeakJSON struct {
	Index       int              `json:"index"` // -1 for an empty timeline
	TimeEpochUS int64            `json:"time_epoch_us"`
	Total       int64            `json:"total"`
	Categories  map[string]int64 `json:"categories"`
}

type TimelineCurveJSON struct {
	TimesEpochUS []int64            `json:"times_epoch_us"`
	Categories   map[string][]int64 `json:"categories"`
}

func sizesJSON(s trace.Sizes) map[string]int64 {
	m := make(map[string]int64, len(s))
	for c, v := range s {
		m[timelineCategories[c]] = v
	}
	return m
}

// timelineJSON converts a category timeline.
func timelineJSON(ct *trace.CategoryTimeline) TimelineJSON {
	s := ct.Summary()
	j := TimelineJSON{Form: "coalesced", Points: s.Points, StartEpochUS: s.StartUS, EndEpochUS: s.EndUS,
		Peak: TimelinePeakJSON{Index: s.PeakIndex, TimeEpochUS: s.PeakUS, Total: s.AtPeak.Total(), Categories: sizesJSON(s.AtPeak)},
		Max:  sizesJSON(s.Max), End: sizesJSON(s.End),
		Curve: TimelineCurveJSON{TimesEpochUS: append([]int64{}, ct.TimesUS...), Categories: map[string][]int64{}}}
	if ct.Raw {
		j.Form = "raw"
	}
	for c := range trace.NumCategories {
		col := make([]int64, len(ct.Bytes))
		for i, b := range ct.Bytes {
			col[i] = b[c]
		}
		j.Curve.Categories[timelineCategories[c]] = col
	}
	return j
}

// TimelineSampleJSON is jsondoc.TimelineSampleJSON.
type TimelineSampleJSON = jsondoc.TimelineSampleJSON

// timelineSampleJSON converts a sample; source names the timeline file.
func timelineSampleJSON(source string, s trace.Sample) *TimelineSampleJSON {
	j := &TimelineSampleJSON{Source: source, TimeEpochUS: s.TimeUS, Covered: s.Covered, Categories: map[string]int64{}}
	if s.Covered {
		j.Total, j.Categories = s.Bytes.Total(), sizesJSON(s.Bytes)
	}
	return j
}

// timelineSampleText writes what the profiler's memory timeline (source)
// held at a snapshot's moment (when: "at this moment", "at the peak"), by
// category, or that it does not cover it.
func timelineSampleText(w io.Writer, source, when string, s trace.Sample) error {
	ew := &errWriter{w: w}
	if !s.Covered {
		ew.printf("\nprofiler memory timeline %s: nothing %s (epoch %d µs): it runs from %d to %d µs\n",
			source, when, s.TimeUS, s.FirstUS, s.LastUS)
		return ew.err
	}
	var cats []string
	for c, v := range s.Bytes {
		if v != 0 {
			cats = append(cats, fmt.Sprintf("%s %s", timelineCategories[c], units.Bytes(v)))
		}
	}
	ew.printf("\n%s\n", wrap(fmt.Sprintf("profiler memory timeline %s %s: %s of live tensors by torch's categories: %s",
		source, when, units.Bytes(s.Bytes.Total()), strings.Join(cats, ", ")), 98, "  "))
	return ew.err
}
