package report

import (
	"fmt"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/trace"
)

// TimelineView is an export_memory_timeline file given as the page's
// profiler trace (memscope report --trace): live tensor bytes by torch's
// memory-profiler category over time.
type TimelineView struct {
	Source   string
	Timeline *trace.CategoryTimeline
}

// maxTimelinePoints bounds the points the category chart draws.
const maxTimelinePoints = 4000

// timelineColors color the timeline's categories, in their order.
var timelineColors = [trace.NumCategories]string{
	"#2f6fdb", "#8e6bd8", "#76b7b2", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#9c9c9c",
}

// timelineSection is the category timeline as a stacked chart (ms after its
// first point) and the table of the peak, each category's maximum and the
// end.
func timelineSection(v *TimelineView) extraSection {
	ct := v.Timeline
	sum := ct.Summary()
	s := extraSection{ID: "memory-timeline", Title: "Memory timeline (profiler)"}
	s.Intro = fmt.Sprintf("%s: an export_memory_timeline file (%s): live tensor bytes on the one device it was exported for, "+
		"by the category torch's memory profiler inferred; it has no operators.", clip(v.Source, maxLabel), timelineForm(ct))
	if sum.PeakIndex < 0 {
		s.Intro += " The timeline is empty."
		return s
	}
	s.Intro += fmt.Sprintf(" %d points over %s; the peak is %s at +%s (epoch %d µs).", sum.Points,
		units.Duration(sum.EndUS-sum.StartUS), units.Bytes(sum.AtPeak.Total()), units.Duration(sum.PeakUS-sum.StartUS), sum.PeakUS)

	names := timelineCategories[:]
	c := charts.NewLine()
	c.SetGlobalOptions(append(common("memory-timeline-stack"),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "time after the first point", NameLocation: "middle", NameGap: 28,
			Min: 0, Max: float64(sum.EndUS-sum.StartUS) / 1000}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "bytes"}),
		charts.WithTooltipOpts(opts.Tooltip{Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Top: "8", Data: names, Type: "scroll"}),
		charts.WithGridOpts(opts.Grid{Left: "80", Right: "40", Top: "60", Bottom: "80"}),
		charts.WithDataZoomOpts(opts.DataZoom{Type: "inside", Start: 0, End: 100},
			opts.DataZoom{Type: "slider", Start: 0, End: 100}),
	)...)
	keep := ct.Keep(maxTimelinePoints)
	rows := make([][]any, 0, len(keep))
	for _, i := range keep {
		row := make([]any, 0, trace.NumCategories+2)
		for _, b := range ct.Bytes[i] {
			row = append(row, b)
		}
		rows = append(rows, append(row, float64(ct.TimesUS[i]-sum.StartUS)/1000, i))
	}
	c.AddDataset(opts.Dataset{Source: rows})
	for k := range trace.NumCategories {
		c.AddSeries(names[k], nil, append(lineOpts(timelineColors[k], 1, true),
			charts.WithEncodeOpts(opts.Encode{X: int(trace.NumCategories), Y: int(k)}))...)
	}
	cv := newChart("memory-timeline-stack", "stack", 400, c)
	cv.XUnit = "ms"
	s.Charts = append(s.Charts, cv)

	t := &table{Head: []string{"category", "at peak", "max", "at end"}, Right: []bool{false, true, true, true}}
	for k := range trace.NumCategories {
		t.Rows = append(t.Rows, []string{names[k], units.Bytes(sum.AtPeak[k]), units.Bytes(sum.Max[k]), units.Bytes(sum.End[k])})
	}
	t.Rows = append(t.Rows, []string{"total", units.Bytes(sum.AtPeak.Total()), units.Bytes(sum.AtPeak.Total()), units.Bytes(sum.End.Total())})
	s.Tables = append(s.Tables, t)
	return s
}
