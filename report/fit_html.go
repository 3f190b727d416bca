package report

import (
	"fmt"
	"io"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/memscope/memscope/internal/units"
)

// This file builds the page section of 'memscope fit --html': the
// predicted peaks against the batch under each setting, the cap, the
// frontiers, and the runs as a table.

// fitSection is a fit result's section: one chart (peak allocated and
// reserved of every run the search made, per setting; the cap; a line at
// each largest fit) and the frontiers and runs as tables.
func fitSection(r *Fit) extraSection {
	res := r.Result
	m := res.Model
	wd := r.words()
	s := extraSection{ID: "fit", Title: "Largest " + wd.name + " that fits"}
	s.Intro = fmt.Sprintf("The template (the recording at %s %d) drives the allocator model at each %s the search ran, its requests' sizes fitted across %s; the cap is %s%s. "+
		"Filled marks fit, hollow ones ran out of memory; the dotted lines are the largest %s that fits under each setting.",
		wd.name, m.Inputs[m.Template].Batch, wd.name, nouns(len(m.Inputs), "recording"), units.Bytes(res.Capacity), capFromText(r.CapFrom), wd.name)
	for _, w := range boundStrings(m.Warnings, 8, 300) {
		s.Intro += " Note: " + w + "."
	}
	c := charts.NewLine()
	c.SetGlobalOptions(append(common("fit-curve"),
		charts.WithTooltipOpts(opts.Tooltip{Trigger: "item"}),
		charts.WithLegendOpts(opts.Legend{Top: "8", Left: "0", Width: "82%", Type: "scroll"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: wd.name, NameLocation: "middle", NameGap: 28, Min: 0}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "peak"}),
		charts.WithGridOpts(opts.Grid{Left: "80", Right: "40", Top: "60", Bottom: "50"}),
	)...)
	capShown := false
	for k, f := range res.Frontiers[:min(len(res.Frontiers), len(precisionColors))] {
		color := precisionColors[k]
		name := f.Conf
		if name == "" {
			name = "recorded settings"
		}
		var alloc, reserved, failed []opts.LineData
		for _, p := range f.Points[:min(len(f.Points), maxRunRows)] {
			if p.Fits {
				alloc = append(alloc, opts.LineData{Value: []any{p.Batch, p.PeakAllocated}})
				reserved = append(reserved, opts.LineData{Value: []any{p.Batch, p.PeakReserved}})
			} else {
				failed = append(failed, opts.LineData{Value: []any{p.Batch, p.PeakReserved}})
			}
		}
		resOpts := []charts.SeriesOpts{charts.WithItemStyleOpts(opts.ItemStyle{Color: color}), charts.WithLineStyleOpts(opts.LineStyle{Color: color, Width: 1.5})}
		if !capShown && res.Capacity > 0 {
			capShown = true
			resOpts = append(resOpts, charts.WithMarkLineNameYAxisItemOpts(opts.MarkLineNameYAxisItem{Name: "cap " + units.Bytes(res.Capacity), YAxis: res.Capacity}),
				charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Symbol: []string{"none", "none"},
					Label: &opts.Label{Show: opts.Bool(true), Formatter: "{b}", Position: "insideEndTop"}, LineStyle: &opts.LineStyle{Color: "#c0392b", Type: "dashed"}}))
		}
		c.AddSeries(name+": reserved", reserved, resOpts...)
		c.AddSeries(name+": allocated", alloc, charts.WithItemStyleOpts(opts.ItemStyle{Color: color}),
			charts.WithLineStyleOpts(opts.LineStyle{Color: color, Width: 1, Type: "dashed"}))
		oomOpts := []charts.SeriesOpts{charts.WithSeriesOpts(func(s *charts.SingleSeries) { s.Type = "scatter"; s.Symbol = "triangle"; s.SymbolSize = 12 }),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: "#fff", BorderColor: color, BorderWidth: 2})}
		if f.LargestFit > 0 {
			oomOpts = append(oomOpts, charts.WithMarkLineNameXAxisItemOpts(opts.MarkLineNameXAxisItem{Name: fmt.Sprintf("%s: %d fits", name, f.LargestFit), XAxis: f.LargestFit}),
				charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Symbol: []string{"none", "none"},
					Label:     &opts.Label{Show: opts.Bool(true), Formatter: "{b}", Position: "insideEndTop", Color: color},
					LineStyle: &opts.LineStyle{Color: color, Type: "dotted"}}))
		}
		c.AddSeries(name+": out of memory", failed, oomOpts...)
	}
	s.Charts = append(s.Charts, newChart("fit-curve", "sweep", 420, c)) // bytes on the y axis, "batch N" in the tooltip

	ft := &table{Head: []string{"setting", "largest " + wd.name + " that fits", "peak allocated", "peak reserved", "margin", "next dies at"},
		Right: []bool{false, true, true, true, true, false}}
	for _, f := range res.Frontiers {
		name := f.Conf
		if name == "" {
			name = "recorded settings"
		}
		row := []string{clip(name, 60), dash(f.LargestFit), "–", "–", "–", "–"}
		if f.Fit != nil {
			row[2], row[3], row[4] = units.Bytes(f.Fit.PeakAllocated), units.Bytes(f.Fit.PeakReserved), units.Bytes(f.Margin)
		}
		if ff := f.FirstFail; ff != nil && ff.OOM != nil {
			row[5] = clip(fmt.Sprintf("%d: %s", ff.Batch, oomAtText(ff.OOM)), 160)
		}
		ft.Rows = append(ft.Rows, row)
	}
	s.Tables = append(s.Tables, ft)
	return s
}

func capFromText(from string) string {
	if from == "" {
		return ""
	}
	return " (" + clip(from, 120) + ")"
}

func (r *Fit) writeHTML(w io.Writer) error {
	return writeHTML(w, nil, HTMLOptions{Title: "memscope fit", Version: r.Version, Fit: r})
}
