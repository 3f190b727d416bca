package report

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/render"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// chartView is one chart of the page: its ECharts option as JSON (built
// with go-echarts) and what the glue script needs to show it. Kind picks
// the glue's formatters: "timeline" and "stack" (x: time or event, y:
// bytes), "tree" (treemap of bytes), "bars" (category x, bytes y),
// "hbars" (bytes x, category y).
type chartView struct {
	ID     string
	Kind   string
	XUnit  string // "ms" or "event" for timeline and stack charts
	Height int    // px
	Group  string // charts that zoom and point together
	Option template.JS
}

// snippetter is what every go-echarts chart is.
type snippetter interface {
	RenderSnippet() render.ChartSnippet
	Validate()
	JSONNotEscaped() template.HTML
}

// optionOf is c's option as go-echarts' RenderSnippet gives it (its
// Option), without the element and script RenderSnippet also renders
// and the regular expression it runs over all three: the JSON of the
// options with the markers of JavaScript functions taken out. (Its HTML
// escaping and unescaping give back the JSON, which holds no NUL.)
// TestOptionOf holds it to RenderSnippet.
func optionOf(c snippetter) string {
	c.Validate()
	o := string(c.JSONNotEscaped())
	if strings.Contains(o, "__f__") {
		o = strings.NewReplacer(`"__f__`, "", `__f__"`, "", "__f__", "").Replace(o)
	}
	return strings.TrimSpace(o)
}

// optionMade, when set (tests), is called with every chart and its option.
var optionMade func(c snippetter, option string)

// newChart renders c's option. The option is JSON; '<', '>' and '&' are
// escaped as \u003c, \u003e and \u0026 (the same string to a JSON reader)
// so that no file or function name can end the <script> element holding
// it.
func newChart(id, kind string, height int, c snippetter) chartView {
	o := optionOf(c)
	if optionMade != nil {
		optionMade(c, o)
	}
	o = strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`,
		"\u2028", `\u2028`, "\u2029", `\u2029`).Replace(o)
	return chartView{ID: id, Kind: kind, Height: height, Option: template.JS(o)}
}

// common are the options every chart shares.
func common(id string) []charts.GlobalOpts {
	return []charts.GlobalOpts{
		charts.WithInitializationOpts(opts.Initialization{ChartID: id}),
		charts.WithToolboxOpts(opts.Toolbox{Show: opts.Bool(true), Right: "20", Feature: &opts.ToolBoxFeature{
			SaveAsImage: &opts.ToolBoxFeatureSaveAsImage{Show: opts.Bool(true), Title: "save as PNG"},
			Restore:     &opts.ToolBoxFeatureRestore{Show: opts.Bool(true), Title: "reset zoom"},
		}}),
	}
}

// quantityColors are the four numbers' colors: requested, allocated,
// active, reserved.
var quantityColors = [4]string{"#8c96a3", "#2f6fdb", "#8e6bd8", "#e07b00"}

// bandColors shade the phases on the timeline.
var bandColors = map[string]string{
	"data":      "rgba(120,120,120,0.10)",
	"forward":   "rgba(47,111,219,0.08)",
	"backward":  "rgba(225,87,89,0.08)",
	"optimizer": "rgba(89,161,79,0.12)",
	"setup":     "rgba(0,0,0,0.04)",
	"prefill":   "rgba(47,111,219,0.08)",
	"decode":    "rgba(176,122,161,0.10)",
	"generate":  "rgba(47,111,219,0.08)",
}

// xOf is a point's x: ms after the first event when times were recorded,
// else the event index.
func xOf(timed bool, p *attribution.SeriesPoint) any {
	if timed {
		return float64(p.TimeUS) / 1000
	}
	return p.Index
}

func xAxis(timed bool) opts.XAxis {
	name := "event"
	if timed {
		name = "time after the first event"
	}
	return opts.XAxis{Type: "value", Name: name, NameLocation: "middle", NameGap: 28}
}

// timeChart is a chart over the device's recording; it opens zoomed on
// the stretch from focus (a percentage of the x range) to the end.
func timeChart(id string, x timeAxis, legend opts.Legend) *charts.Line {
	c := charts.NewLine()
	xa := xAxis(x.timed)
	xa.Min, xa.Max = 0, x.max
	if !x.timed {
		xa.Min = -1 // the state before the first event is at event -1
	}
	c.SetGlobalOptions(append(common(id),
		charts.WithXAxisOpts(xa),
		// No axis name: the ticks say their unit, and a legend that wraps
		// on a narrow page would run into it.
		charts.WithYAxisOpts(opts.YAxis{Type: "value"}),
		charts.WithTooltipOpts(opts.Tooltip{Trigger: "axis"}),
		charts.WithLegendOpts(legend),
		charts.WithGridOpts(opts.Grid{Left: "80", Right: "40", Top: "60", Bottom: "80"}),
		charts.WithDataZoomOpts(opts.DataZoom{Type: "inside", Start: x.focus, End: 100},
			opts.DataZoom{Type: "slider", Start: x.focus, End: 100}),
	)...)
	return c
}

func lineOpts(color string, width float32, stack bool) []charts.SeriesOpts {
	o := []charts.SeriesOpts{
		charts.WithLineChartOpts(opts.LineChart{Step: "end", ShowSymbol: opts.Bool(false)}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: color}),
		charts.WithLineStyleOpts(opts.LineStyle{Width: width, Color: color}),
		charts.WithSeriesOpts(func(s *charts.SingleSeries) { s.Data = nil }), // from the dataset
	}
	if stack {
		o = append(o, charts.WithLineChartOpts(opts.LineChart{Step: "end", ShowSymbol: opts.Bool(false), Stack: "total"}),
			charts.WithAreaStyleOpts(opts.AreaStyle{Opacity: opts.Float(0.85), Color: color}))
	}
	return o
}

// Every chart over time has one dataset whose rows are a point's bytes,
// then x, then the event index. The bytes come first because ECharts stacks
// along the first numeric dimension a series uses.

// timelineChart is the four numbers over time: rows [requested, allocated,
// active, reserved, x, event], phase bands on allocated, the peak marked and
// each OOM a vertical line.
func timelineChart(prefix string, dv *attribution.DeviceView, x timeAxis) chartView {
	d, s, timed := dv.Device, dv.Series, x.timed
	names := [4]string{"requested", "allocated", "active", "reserved"}
	c := timeChart(prefix+"-timeline", x, opts.Legend{Top: "8", Data: names[:], Selected: map[string]bool{"requested": false}})
	rows := make([][]any, 0, len(s.Points))
	for i := range s.Points {
		p := &s.Points[i]
		rows = append(rows, []any{p.Requested, p.Allocated, p.Active, p.Reserved, xOf(timed, p), p.Index})
	}
	c.AddDataset(opts.Dataset{Source: rows})
	// Drawn in this order, so that allocated is on top; the legend keeps
	// the usual order.
	for _, k := range []int{3, 2, 0, 1} {
		name := names[k]
		o := append(lineOpts(quantityColors[k], 1.6, false), charts.WithEncodeOpts(opts.Encode{X: 4, Y: k}))
		if k == 0 {
			o = append(o, charts.WithLineStyleOpts(opts.LineStyle{Width: 1.2, Color: quantityColors[k], Type: "dashed"}))
		}
		if k == 1 {
			o = append(o, bandOpts(dv.Bands, timed)...)
			o = append(o, peakMark(d, timed))
		}
		if k == 3 {
			o = append(o, oomMarks(d, timed)...)
		}
		c.AddSeries(name, nil, o...)
	}
	cv := newChart(prefix+"-timeline", "timeline", 420, c)
	cv.XUnit, cv.Group = xUnit(timed), prefix
	return cv
}

// timeAxis is the x axis every chart over time shares.
type timeAxis struct {
	timed bool    // x is ms after the first event, else the event index
	max   float64 // the last x
	focus float32 // where the chart opens, in % of the x range
}

func newTimeAxis(dv *attribution.DeviceView) timeAxis {
	d := dv.Device
	ev := d.Timeline.Events
	x := timeAxis{timed: isTimed(d)}
	if len(ev) == 0 {
		return x
	}
	at := func(i int) float64 {
		if x.timed {
			return float64(ev[i].TimeUS-ev[0].TimeUS) / 1000
		}
		return float64(i)
	}
	x.max = at(len(ev) - 1)
	if dv.FocusFrom > 0 && x.max > 0 {
		x.focus = float32(100 * at(dv.FocusFrom) / x.max)
	}
	return x
}

func isTimed(d *attribution.Device) bool {
	ev := d.Timeline.Events
	return len(ev) > 1 && ev[len(ev)-1].TimeUS > ev[0].TimeUS
}

func xUnit(timed bool) string {
	if timed {
		return "ms"
	}
	return "event"
}

// bandOpts shades the phase bands. Each is labelled with its phase; the
// glue shows a label only where it fits in its band, clear of the others.
func bandOpts(bands []attribution.Band, timed bool) []charts.SeriesOpts {
	if len(bands) == 0 || !timed {
		return nil
	}
	var data [][]opts.MarkAreaData
	for i, b := range bands {
		color, ok := bandColors[b.Phase]
		if !ok {
			color = "rgba(0,0,0,0.03)"
			if i%2 == 1 {
				color = "rgba(0,0,0,0.07)"
			}
		}
		name := b.Phase
		if name == "" {
			name = b.Name
		}
		data = append(data, []opts.MarkAreaData{
			{Name: clip(name, 40), XAxis: float64(b.StartUS) / 1000, MarkAreaStyle: opts.MarkAreaStyle{ItemStyle: &opts.ItemStyle{Color: color}}},
			{XAxis: float64(b.EndUS) / 1000},
		})
	}
	return []charts.SeriesOpts{
		charts.WithMarkAreaData(data...),
		charts.WithMarkAreaStyleOpts(opts.MarkAreaStyle{Label: &opts.Label{Show: opts.Bool(true),
			Position: "insideTop", Color: "#667", FontSize: 10}}),
	}
}

func peakMark(d *attribution.Device, timed bool) charts.SeriesOpts {
	pk := d.Timeline.PeakAllocated
	var x any = pk.Index
	if timed && pk.Index >= 0 {
		x = float64(pk.TimeUS-d.Timeline.Events[0].TimeUS) / 1000
	}
	return charts.WithMarkPointNameCoordItemOpts(opts.MarkPointNameCoordItem{Name: "peak " + units.Bytes(pk.Bytes),
		Coordinate: []any{x, pk.Bytes}, Value: "peak",
		Label: &opts.Label{Show: opts.Bool(true), Formatter: "{c}", Color: "#fff", FontSize: 10}})
}

func oomMarks(d *attribution.Device, timed bool) []charts.SeriesOpts {
	if len(d.OOMs) == 0 {
		return nil
	}
	var items []opts.MarkLineNameXAxisItem
	for _, o := range d.OOMs {
		var x any = o.Index
		if timed {
			x = float64(o.TimeUS-d.Timeline.Events[0].TimeUS) / 1000
		}
		items = append(items, opts.MarkLineNameXAxisItem{Name: fmt.Sprintf("OOM %d: %s requested", o.N, units.Bytes(o.Request)), XAxis: x})
		if len(items) == 20 {
			break
		}
	}
	return []charts.SeriesOpts{
		charts.WithMarkLineNameXAxisItemOpts(items...),
		charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Symbol: []string{"none", "none"},
			// Along the line from its foot, inside the plot: above the
			// line, the label of an OOM near either end would run off the
			// chart, and at its top it would cover the peak's pin (an OOM
			// is often at the peak).
			Label:     &opts.Label{Show: opts.Bool(len(items) <= 3), Formatter: "{b}", Color: "#c0392b", Position: "insideStartTop"},
			LineStyle: &opts.LineStyle{Color: "#c0392b", Width: 2, Type: "solid"}}),
	}
}

// categoryChart stacks allocated bytes by category over the same points;
// categories that are never non-zero are left out.
func categoryChart(prefix string, x timeAxis, s *attribution.Series) chartView {
	timed := x.timed
	c := timeChart(prefix+"-cat", x, opts.Legend{Top: "8"})
	var cats []attribution.Category
	for k := range attribution.NumCategories {
		for i := range s.Points {
			if s.Points[i].Categories[k] != 0 {
				cats = append(cats, k)
				break
			}
		}
	}
	if len(cats) == 0 {
		cats = []attribution.Category{attribution.Unknown} // nothing allocated: a line at zero
	}
	rows := make([][]any, 0, len(s.Points))
	for i := range s.Points {
		p := &s.Points[i]
		var r []any
		for _, k := range cats {
			r = append(r, p.Categories[k])
		}
		rows = append(rows, append(r, xOf(timed, p), p.Index))
	}
	c.AddDataset(opts.Dataset{Source: rows})
	for j, k := range cats {
		c.AddSeries(k.String(), nil, append(lineOpts(categoryColors[k], 0, true), charts.WithEncodeOpts(opts.Encode{X: len(cats), Y: j}))...)
	}
	cv := newChart(prefix+"-cat", "stack", 340, c)
	cv.XUnit, cv.Group = xUnit(timed), prefix
	return cv
}

// siteColors color the top sites' series; "other sites" is grey.
var siteColors = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
	"#ff9da7", "#9c755f", "#2f4b7c", "#a05195", "#d45087", "#665191", "#ffa600", "#003f5c"}

// siteChart stacks allocated bytes by the peak's top sites over the same
// points, every other site in one series.
func siteChart(prefix string, x timeAxis, st *snapshot.Stacks, s *attribution.Series) chartView {
	timed := x.timed
	// Site names are long: the legend is a column on the right.
	c := timeChart(prefix+"-site", x, opts.Legend{Type: "scroll", Orient: "vertical", Right: "10", Top: "40", Bottom: "20", Width: "340"})
	c.GridList = []opts.Grid{{Left: "80", Right: "380", Top: "40", Bottom: "80"}}
	rows := make([][]any, 0, len(s.Points))
	for i := range s.Points {
		p := &s.Points[i]
		var r []any
		for _, b := range p.Sites {
			r = append(r, b)
		}
		rows = append(rows, append(r, xOf(timed, p), p.Index))
	}
	c.AddDataset(opts.Dataset{Source: rows})
	for j, site := range s.Sites {
		c.AddSeries(fmt.Sprintf("%d. %s", j+1, shortSite(st, site)), nil,
			append(lineOpts(siteColors[j%len(siteColors)], 0, true), charts.WithEncodeOpts(opts.Encode{X: len(s.Sites) + 1, Y: j}))...)
	}
	c.AddSeries("other sites", nil, append(lineOpts("#c8ccd2", 0, true), charts.WithEncodeOpts(opts.Encode{X: len(s.Sites) + 1, Y: len(s.Sites)}))...)
	cv := newChart(prefix+"-site", "stack", 340, c)
	cv.XUnit, cv.Group = xUnit(timed), prefix
	return cv
}

func seriesNote(s *attribution.Series) string {
	if s.EventsPerBucket <= 1 {
		return fmt.Sprintf("all %d events shown", s.Events)
	}
	return fmt.Sprintf("%d of %d events shown: each run of %d events keeps its first and last state and the lowest and highest of each number, so every peak and valley is exact",
		len(s.Points), s.Events, s.EventsPerBucket)
}
