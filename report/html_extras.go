// This file builds the sections of a page that are not about a snapshot
// device: a capture run directory (--run) and a profiler trace's
// operators (--trace).

package report

import (
	"fmt"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/sweep"
	"github.com/memscope/memscope/trace"
)

// RunView is a capture run directory as the page shows it (memscope report
// --run): a batch-size sweep, or a capture with one or several ranks.
// Exactly one of Sweep and Capture is set.
type RunView struct {
	Sweep   *sweep.Analysis
	Capture *sweep.RunSummary
}

// maxRunRows bounds the points of a sweep and the ranks of a capture that
// the page shows, whatever the run directory holds.
const maxRunRows = 256

// precisionColors color each precision of a sweep.
var precisionColors = []string{"#2f6fdb", "#e15759", "#59a14f", "#f28e2b", "#8e6bd8", "#76b7b2"}

func runSections(r *RunView) []extraSection {
	switch {
	case r.Sweep != nil:
		return []extraSection{sweepSection(r.Sweep)}
	case r.Capture != nil:
		return []extraSection{captureSection(r.Capture)}
	}
	return nil
}

// sweepSection is the batch-size sweep: peak allocated against batch per
// precision with the fitted line, the OOMs at the memory limit, step time
// on a second axis, and the points, fits and frontiers as tables.
func sweepSection(a *sweep.Analysis) extraSection {
	r := a.Results
	s := extraSection{ID: "run", Title: "Batch-size sweep"}
	s.Intro = fmt.Sprintf("%s: %s, %s; memory limit %s on %s. Each point is a fresh process; peaks are torch's, over %d measured steps after %d warm-up steps. "+
		"The lines are the least-squares fit peak ≈ fixed + batch × slope over the batches that fit; a triangle on the limit is a batch that ran out of memory.",
		clip(a.Dir, 120), clip(r.Workload.Name, 60), r.Mode, units.Bytes(r.MemoryLimit), clip(r.Device.Name, 60), r.Steps, r.Warmup)
	for _, w := range boundStrings(sweepWarnings(a), 8, 300) {
		s.Intro += " Warning: " + w + "."
	}
	rows := a.Rows[:min(len(a.Rows), maxRunRows)]

	c := charts.NewLine()
	c.SetGlobalOptions(append(common("run-sweep"),
		charts.WithTooltipOpts(opts.Tooltip{Trigger: "item"}),
		charts.WithLegendOpts(opts.Legend{Top: "8", Left: "0", Width: "82%", Type: "scroll"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "batch size", NameLocation: "middle", NameGap: 28, Min: 0}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "peak allocated"}),
		charts.WithGridOpts(opts.Grid{Left: "80", Right: "80", Top: "60", Bottom: "50"}),
	)...)
	c.ExtendYAxis(opts.YAxis{Type: "value", Name: "step time (ms)", SplitLine: &opts.SplitLine{Show: opts.Bool(false)}})
	limitShown := false
	for k, f := range a.Frontiers {
		prec := f.Precision
		color := precisionColors[k%len(precisionColors)]
		var fits, ooms, times []opts.LineData
		maxBatch := 0
		for _, p := range rows {
			if p.Precision != prec {
				continue
			}
			maxBatch = max(maxBatch, p.Batch)
			switch {
			case p.Fits:
				fits = append(fits, opts.LineData{Value: []any{p.Batch, p.Peak.Allocated}})
				if p.StepTimeMS != nil {
					times = append(times, opts.LineData{Value: []any{p.Batch, *p.StepTimeMS}})
				}
			case p.OOM:
				ooms = append(ooms, opts.LineData{Value: []any{p.Batch, r.MemoryLimit}})
			}
		}
		scatter := func(s *charts.SingleSeries) { s.Type = "scatter"; s.SymbolSize = 9 }
		peakOpts := []charts.SeriesOpts{charts.WithSeriesOpts(scatter), charts.WithItemStyleOpts(opts.ItemStyle{Color: color})}
		if !limitShown && r.MemoryLimit > 0 {
			limitShown = true
			peakOpts = append(peakOpts, charts.WithMarkLineNameYAxisItemOpts(opts.MarkLineNameYAxisItem{Name: "memory limit " + units.Bytes(r.MemoryLimit), YAxis: r.MemoryLimit}),
				charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Symbol: []string{"none", "none"},
					Label: &opts.Label{Show: opts.Bool(true), Formatter: "{b}", Position: "insideEndTop"}, LineStyle: &opts.LineStyle{Color: "#c0392b", Type: "dashed"}}))
		}
		c.AddSeries(prec+" peak", fits, peakOpts...)
		end := maxBatch // the line runs to the first batch that failed
		if f.FirstFail > 0 {
			end = f.FirstFail
		}
		for _, fit := range a.Fits {
			if fit.Precision == prec {
				line := []opts.LineData{{Value: []any{0, fit.Fixed}}, {Value: []any{end, fit.Fixed + float64(end)*fit.Slope}}}
				c.AddSeries(fmt.Sprintf("%s fit (R² %.3f)", prec, fit.R2), line, charts.WithLineStyleOpts(opts.LineStyle{Color: color, Width: 1.5}),
					charts.WithItemStyleOpts(opts.ItemStyle{Color: color}), charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))
			}
		}
		if len(ooms) > 0 {
			oomOpts := []charts.SeriesOpts{charts.WithSeriesOpts(func(s *charts.SingleSeries) { s.Type = "scatter"; s.Symbol = "triangle"; s.SymbolSize = 14 }),
				charts.WithItemStyleOpts(opts.ItemStyle{Color: "#fff", BorderColor: color, BorderWidth: 2})}
			if f.FirstFail > 0 {
				oomOpts = append(oomOpts, charts.WithMarkLineNameXAxisItemOpts(opts.MarkLineNameXAxisItem{Name: fmt.Sprintf("%s: first OOM at %d", prec, f.FirstFail), XAxis: f.FirstFail}),
					charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Symbol: []string{"none", "none"},
						Label:     &opts.Label{Show: opts.Bool(true), Formatter: "{b}", Position: "insideEndTop", Color: color},
						LineStyle: &opts.LineStyle{Color: color, Type: "dotted"}}))
			}
			c.AddSeries(prec+" OOM", ooms, oomOpts...)
		}
		if len(times) > 0 {
			c.AddSeries(prec+" step time", times, charts.WithLineChartOpts(opts.LineChart{YAxisIndex: 1, Symbol: "emptyCircle"}),
				charts.WithLineStyleOpts(opts.LineStyle{Color: color, Type: "dashed", Width: 1}), charts.WithItemStyleOpts(opts.ItemStyle{Color: color}))
		}
	}
	s.Charts = append(s.Charts, newChart("run-sweep", "sweep", 460, c))

	t := &table{Head: []string{"precision", "batch", "result", "peak allocated", "requested", "reserved", "device used", "step time", "alloc retries"},
		Right: []bool{false, true, false, true, true, true, true, true, true}}
	for _, p := range rows {
		res := "fits"
		switch {
		case p.OOM:
			res = "out of memory"
		case !p.Fits:
			res = "error: " + clip(p.Error, 80)
		}
		step := "–"
		if p.StepTimeMS != nil {
			step = fmt.Sprintf("%.1f ms", *p.StepTimeMS)
		}
		if !p.Fits {
			t.Rows = append(t.Rows, []string{clip(p.Precision, 20), fmt.Sprint(p.Batch), res, "", "", "", "", "", ""})
			continue
		}
		t.Rows = append(t.Rows, []string{clip(p.Precision, 20), fmt.Sprint(p.Batch), res, units.Bytes(p.Peak.Allocated), units.Bytes(p.Peak.Requested),
			units.Bytes(p.Peak.Reserved), units.Bytes(p.DeviceUsed), step, fmt.Sprint(p.NumAllocRetries)})
	}
	if len(a.Rows) > len(rows) {
		t.Rows = append(t.Rows, []string{fmt.Sprintf("(%d more points)", len(a.Rows)-len(rows)), "", "", "", "", "", "", "", ""})
	}
	s.Tables = append(s.Tables, t)

	ft := &table{Head: []string{"precision", "fixed", "per sample", "R²", "largest batch that fits", "first OOM", "fit reaches the limit at"},
		Right: []bool{false, true, true, true, true, true, true}}
	for _, f := range a.Frontiers {
		row := []string{clip(f.Precision, 20), "–", "–", "–", dash(f.LargestFit), dash(f.FirstFail), "–"}
		for _, fit := range a.Fits {
			if fit.Precision == f.Precision {
				row[1], row[2], row[3] = units.Bytes(int64(fit.Fixed)), units.Bytes(int64(fit.Slope)), fmt.Sprintf("%.4f", fit.R2)
			}
		}
		if f.Predicted > 0 {
			row[6] = fmt.Sprintf("batch %.1f", f.Predicted)
		}
		ft.Rows = append(ft.Rows, row)
	}
	s.Tables = append(s.Tables, ft)
	return s
}

func dash(n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprint(n)
}

// captureSection is a capture run: one row per rank with its peaks, the
// driver's view and how it ended, a chart of the ranks side by side, and
// the phases' highest peaks.
func captureSection(a *sweep.RunSummary) extraSection {
	s := extraSection{ID: "run", Title: "Capture run"}
	s.Intro = fmt.Sprintf("%s: %s reported.", clip(a.Dir, 120), nouns(len(a.Ranks), "rank"))
	if a.Run != nil {
		s.Intro += fmt.Sprintf(" Command: %s; exit status %d after %.1f s.", clip(strings.Join(a.Run.Command, " "), 200), a.Run.ExitCode, a.Run.WallS)
	}
	if sp := a.Spread; sp != nil {
		s.Intro += fmt.Sprintf(" Rank %d has the highest peak, %s: %s (%+.1f%%) above the median of %d ranks.",
			sp.Rank, units.Bytes(sp.Peak), units.Bytes(sp.Excess), 100*sp.ExcessFrac, sp.Ranks)
	}
	for _, w := range boundStrings(runWarnings(a.Warnings), 8, 300) {
		s.Intro += " Warning: " + w + "."
	}
	ranks := a.Ranks[:min(len(a.Ranks), maxRunRows)]
	c := charts.NewBar()
	c.SetGlobalOptions(append(common("run-ranks"),
		charts.WithTooltipOpts(opts.Tooltip{Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Top: "4"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category"}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "bytes"}),
		charts.WithGridOpts(opts.Grid{Left: "80", Right: "40", Top: "50", Bottom: "40"}),
	)...)
	var x []string
	var alloc, reserved, used []opts.BarData
	t := &table{Head: []string{"rank", "device", "exit", "peak allocated", "requested", "reserved", "device used", "OOMs", "steps", "wall"},
		Right: []bool{true, false, false, true, true, true, true, true, true, true}}
	for _, r := range ranks {
		x = append(x, fmt.Sprintf("rank %d", r.Rank))
		alloc = append(alloc, opts.BarData{Value: r.Peak.Allocated})
		reserved = append(reserved, opts.BarData{Value: r.Peak.Reserved})
		used = append(used, opts.BarData{Value: r.DeviceUsed})
		exit := fmt.Sprint(r.ExitCode)
		if r.Exception != nil {
			exit += " (" + clip(r.Exception.Type, 40) + ")"
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(r.Rank), fmt.Sprintf("%d: %s", r.Device, clip(r.DeviceName, 40)), exit,
			units.Bytes(r.Peak.Allocated), units.Bytes(r.Peak.Requested), units.Bytes(r.Peak.Reserved), units.Bytes(r.DeviceUsed),
			fmt.Sprint(len(r.OOM)), fmt.Sprint(r.Steps), fmt.Sprintf("%.1f s", r.WallS)})
	}
	if len(a.Ranks) > len(ranks) {
		t.Rows = append(t.Rows, []string{fmt.Sprintf("(%d more ranks)", len(a.Ranks)-len(ranks)), "", "", "", "", "", "", "", "", ""})
	}
	for _, m := range a.Missing[:min(len(a.Missing), maxRunRows)] {
		t.Rows = append(t.Rows, []string{fmt.Sprint(m), "", "wrote nothing", "", "", "", "", "", "", ""})
	}
	c.SetXAxis(x).
		AddSeries("peak allocated", alloc, charts.WithItemStyleOpts(opts.ItemStyle{Color: quantityColors[1]})).
		AddSeries("peak reserved", reserved, charts.WithItemStyleOpts(opts.ItemStyle{Color: quantityColors[3]})).
		AddSeries("device used (driver)", used, charts.WithItemStyleOpts(opts.ItemStyle{Color: "#6b7280"}))
	if len(ranks) > 0 {
		s.Charts = append(s.Charts, newChart("run-ranks", "bars", 340, c))
	}
	s.Tables = append(s.Tables, t)
	pt := &table{Head: []string{"phase", "measured steps", "peak allocated", "requested", "reserved", "active"},
		Right: []bool{false, true, true, true, true, true}}
	for _, p := range a.Phases[:min(len(a.Phases), 32)] {
		pt.Rows = append(pt.Rows, []string{clip(p.Phase, 40), fmt.Sprint(p.Steps), units.Bytes(p.Peak.Allocated),
			units.Bytes(p.Peak.Requested), units.Bytes(p.Peak.Reserved), units.Bytes(p.Peak.Active)})
	}
	if len(pt.Rows) > 0 {
		s.Tables = append(s.Tables, pt)
	}
	return s
}

// OpsView is the per-operator memory table of one profiler trace, as the
// page shows it (memscope report --trace).
type OpsView struct {
	Source string
	Table  *trace.Table // sorted as it should be shown
	Top    int          // rows shown; the rest are counted
	// Warnings are the trace's own, about what could not be read.
	Warnings []string
}

// ProfileViews are a page's sections for a profiler output named source:
// for a trace, its operators on the device with the highest allocated peak
// (Trace.PeakDevice), Top of them shown, with the trace's warnings; for an
// export_memory_timeline file, the category chart.
func ProfileViews(source string, p trace.Profile, top int) (*OpsView, *TimelineView) {
	if p.Timeline != nil {
		return nil, &TimelineView{Source: source, Timeline: p.Timeline}
	}
	t := p.Trace
	ov := &OpsView{Source: source, Table: t.OpTable(t.PeakDevice(), false), Top: top}
	for _, w := range t.Warnings {
		ov.Warnings = append(ov.Warnings, w.String())
	}
	return ov, nil
}

// maxOpsRows bounds the operator table whatever Top asks.
const maxOpsRows = 100

// opsSection renders the operator table: allocation and live-at-peak bytes
// per operator, self and total (with the ops nested in it).
func opsSection(o *OpsView) extraSection {
	tb := o.Table
	s := extraSection{ID: "ops", Title: "Operators (profiler trace)"}
	reserved := fmt.Sprintf(" (reserved %s then)", units.Bytes(tb.Peak.Reserved))
	if !tb.Recorded.TotalReserved {
		reserved = " (reserved not recorded)"
	}
	if !tb.Recorded.TotalAllocated {
		reserved += ", the running sum of the events' bytes from the start of the trace (it records no Total Allocated)"
	}
	s.Intro = fmt.Sprintf("%s, %s: %d memory events; allocated peak %s%s. "+
		"Self counts allocations made by the operator itself, total adds the operators nested in it; "+
		"net is allocated less freed, as key_averages' memory columns (negative for an operator that freed more, as backward operators free saved tensors)",
		clip(o.Source, maxLabel), tb.Device, tb.Events, units.Bytes(tb.Peak.Allocated), reserved)
	if tb.Recorded.Addr {
		s.Intro += fmt.Sprintf("; live at peak is what the operator allocated that was still held at the peak (%s of the peak was allocated before the trace began).",
			units.Bytes(max(tb.Peak.Allocated-tb.LiveAtPeak, 0)))
	} else {
		s.Intro += "; the trace records no block addresses, so what each operator still held at the peak is not known."
	}
	for _, w := range boundStrings(o.Warnings, 8, 300) {
		s.Intro += " Warning: " + w + "."
	}
	t := &table{
		Head:  []string{"operator", "kind", "calls", "allocs", "self alloc", "total alloc", "self net", "total net", "self live at peak", "total live at peak"},
		Right: []bool{false, false, true, true, true, true, true, true, true, true},
	}
	top := min(max(o.Top, 1), maxOpsRows)
	for i, r := range tb.Rows {
		if i == top {
			t.Rows = append(t.Rows, []string{fmt.Sprintf("(%d more operators)", len(tb.Rows)-i), "", "", "", "", "", "", "", "", ""})
			break
		}
		selfLive, totalLive := units.Bytes(r.SelfPeakLive), units.Bytes(r.TotalPeakLive)
		if !tb.Recorded.Addr {
			selfLive, totalLive = "not known", "not known"
		}
		t.Rows = append(t.Rows, []string{clip(r.Name, 120), r.Kind, fmt.Sprint(r.Calls), fmt.Sprint(r.Allocs),
			units.Bytes(r.SelfAlloc), units.Bytes(r.TotalAlloc), units.Bytes(r.SelfNet), units.Bytes(r.TotalNet), selfLive, totalLive})
	}
	s.Tables = append(s.Tables, t)
	return s
}
