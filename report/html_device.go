package report

import (
	"fmt"
	"html/template"
	"sync"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/srcpath"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// deviceSection is one device's part of the page, ready for the template.
type deviceSection struct {
	ID     string
	Nav    string // the navigation link's text
	Device int
	S      *attribution.DeviceSummary
	// PeakWhen says when the peak happened, in words.
	PeakWhen string
	CatBar   catBar
	Findings []findingRow
	// Fixes are advise's first fixes of a training peak (the summary's),
	// cheapest first; none outside one.
	Fixes    []fixRow
	Warnings []string
	Events   int

	Timeline, ByCategory, BySite chartView
	// SeriesNote says how the timeline was sampled; Focused that it opens
	// on the steps.
	SeriesNote string
	Focused    bool
	Tree       chartView
	Sites      []siteRow
	SiteTable  siteTable
	SitesTotal int // sites live at the peak, shown or not

	PhaseSource string
	PhaseNames  []string
	Steps       []stepRow
	PeakStep    string

	Leak      *attribution.Leak
	LeakChart *chartView
	LeakTable siteTable

	Frag []fragPanel
	// PrivatePools lists the private pools (CUDA graphs', MemPools') of
	// every moment shown, at most maxPoolRows a moment.
	PrivatePools []poolRow
	// Histogram is the free-hole histogram at every fragmentation moment.
	Histogram *chartView
	OOMs      []oomPanel
	OOMsLeft  int // OOMs not shown
}

type categoryShare struct {
	Name  string
	Color template.CSS
	Bytes int64
	Count int
}

// catBar is a bar of allocated bytes split by category, with its legend.
type catBar struct {
	Total int64
	Cats  []categoryShare
}

func newCatBar(total int64, cats [attribution.NumCategories]attribution.Bytes) catBar {
	b := catBar{Total: total}
	for c := range attribution.NumCategories {
		if cats[c].Count > 0 {
			b.Cats = append(b.Cats, categoryShare{c.String(), template.CSS(categoryColors[c]), cats[c].Bytes, cats[c].Count})
		}
	}
	return b
}

// siteTable is a top-sites table; Leak adds the per-step columns.
type siteTable struct {
	Rows []siteRow
	Leak bool
}

// siteRow is one row of a top-sites table, with the stack of its largest
// block.
type siteRow struct {
	Label     string // siteText: the site's files shortened
	Full      string // the site's label as the text output prints it
	Kind      string
	Bytes     int64
	Requested int64
	Blocks    int
	Share     float64
	PerStep   int64 // leak tables: bytes per step
	Steps     int
	Frames    []frameRow
	More      int  // frames left out
	FreeStack bool // the stack is where the block was freed
}

type frameRow struct {
	Where string // file:line
	Func  string
	User  bool
}

// fixRow is one of advise's fixes, in budget's words.
type fixRow struct {
	Name, Term, Cost string
	Removes, NewPeak int64
	Change           string // the new peak against the old, "−66.4%"
}

// newFixRows words a summary's fixes against its allocated peak.
func newFixRows(fixes []attribution.AdviceFix, peak int64) []fixRow {
	var out []fixRow
	for _, f := range fixes {
		fw := adviceFixWords(f)
		out = append(out, fixRow{Name: fw.name, Term: adviseTermName(f.Term), Cost: fw.cost, Removes: f.Removes,
			NewPeak: f.NewPeak, Change: signedPercent(f.NewPeak-peak, peak)})
	}
	return out
}

// poolRow is one private pool at a moment, or (More > 0) the count of
// the moment's pools left out.
type poolRow struct {
	Moment string
	attribution.PrivatePool
	More int
}

// maxPoolRows bounds the private pools the page lists at one moment.
const maxPoolRows = 20

func newPoolRows(moment string, pools []attribution.PrivatePool) []poolRow {
	var out []poolRow
	for i, p := range pools {
		if i == maxPoolRows {
			out = append(out, poolRow{Moment: moment, More: len(pools) - i})
			break
		}
		out = append(out, poolRow{Moment: moment, PrivatePool: p})
	}
	return out
}

type stepRow struct {
	Gap           bool // a run of steps left out
	Step          int
	Floor, After  int64
	Peaks         []string // per PhaseNames, formatted; "–" when absent
	PeakIn        string
	HoldsPeak     bool
	StepPeak      int64
	StepPeakPhase string
}

// categoryColors are the fixed colors of the categories, in Category order,
// shared by the header bar and the stacked chart.
var categoryColors = [attribution.NumCategories]string{
	attribution.Unknown:         "#bab0ac",
	attribution.Parameter:       "#4e79a7",
	attribution.OptimizerState:  "#f28e2b",
	attribution.Gradient:        "#e15759",
	attribution.Activation:      "#76b7b2",
	attribution.Input:           "#59a14f",
	attribution.Temporary:       "#edc948",
	attribution.BeforeRecording: "#9c755f",
	attribution.KVCache:         "#b07aa1",
}

func buildDevice(v *attribution.View, dv *attribution.DeviceView, id string) *deviceSection {
	d := dv.Device
	s := &dv.Summary
	notes := v.Options.Notes
	ds := &deviceSection{ID: id, Device: d.Device, S: s, Findings: boundFindings(s.Findings, notes),
		Warnings: boundStrings(deviceWarnings(s), notes, warningRunes), Events: s.Events, Leak: d.Leak}
	ds.PeakWhen = peakWhen(s)
	ds.Fixes = newFixRows(s.Fixes, s.AtPeak.Allocated)
	ds.CatBar = newCatBar(s.AtPeak.Allocated, s.Categories)
	x := newTimeAxis(dv)
	// The three timeline charts are the page's largest: rendered on two
	// cores (each reads the view only).
	var wg sync.WaitGroup
	wg.Go(func() { ds.Timeline = timelineChart(id, dv, x) })
	wg.Go(func() { ds.ByCategory = categoryChart(id, x, dv.Series) })
	ds.BySite = siteChart(id, x, v.Stacks, dv.Series)
	wg.Wait()
	ds.Focused = x.focus > 0
	ds.SeriesNote = seriesNote(dv.Series)
	ds.Tree = treeChart(id, dv.PeakTree)
	for _, site := range s.TopSites {
		ds.Sites = append(ds.Sites, newSiteRow(v, site))
	}
	ds.SiteTable = siteTable{Rows: ds.Sites}
	ds.SitesTotal = len(d.Peak.Sites)
	ds.stepTable(d, dv.StepRows)
	if len(dv.LeakSteps) > 0 {
		c := leakChart(id, dv.LeakSteps, dv.LeakFloors)
		ds.LeakChart = &c
	}
	for _, ls := range dv.LeakSites {
		r := newSiteRow(v, ls.SiteBytes)
		r.PerStep, r.Steps = ls.BytesPerStep, ls.Steps
		ds.LeakTable.Rows = append(ds.LeakTable.Rows, r)
	}
	ds.LeakTable.Leak = true
	for k, f := range dv.Frag {
		ds.Frag = append(ds.Frag, fragPanel{Frag: f.Fragmentation, Segments: segmentChart(fmt.Sprintf("%s-seg%d", id, k), f),
			RestCount: f.Segments.RestCount, Rest: f.Segments.Rest})
		ds.PrivatePools = append(ds.PrivatePools, newPoolRows(f.Label, f.Private)...)
	}
	if h := histogramChart(id, dv.Frag); h != nil {
		ds.Histogram = h
	}
	for _, o := range dv.OOMs {
		ds.OOMs = append(ds.OOMs, newOOMPanel(v, dv, o))
	}
	ds.OOMsLeft = len(d.OOMs) - len(dv.OOMs)
	return ds
}

func peakWhen(s *attribution.DeviceSummary) string {
	switch {
	case s.Events == 0:
		return "in the snapshot's end state (no history recorded)"
	case oneEntry(s.Warnings):
		return "in the snapshot's end state (the trace holds one entry: no history recorded)"
	case s.PeakAllocated.Index < 0:
		return "before the first recorded event"
	}
	w := fmt.Sprintf("at +%s of %s (event %d)", units.Duration(s.PeakOffsetUS), units.Duration(s.DurationUS), s.PeakAllocated.Index)
	if !s.Timed {
		w = fmt.Sprintf("at event %d of %d (time not recorded)", s.PeakAllocated.Index, s.Events)
	}
	if s.PeakStep != nil {
		w += fmt.Sprintf(", step %d %s", *s.PeakStep, s.PeakPhase)
	} else if s.PeakPhase != "" {
		w += ", in " + clip(s.PeakPhase, 80)
	}
	return w
}

func newSiteRow(v *attribution.View, site attribution.SiteBytes) siteRow {
	r := siteRow{Label: siteText(site), Full: clip(site.Label, 400), Kind: site.Site.Kind, Bytes: site.Bytes, Requested: site.Requested,
		Blocks: site.Count, Share: site.Share, FreeStack: site.FreeStack}
	frames := v.Stacks.Stack(site.Stack)
	tab := v.Filter.For(v.Stacks)
	limit := v.Options.StackFrames
	for i, fid := range frames {
		if i == limit {
			r.More = len(frames) - limit
			break
		}
		r.Frames = append(r.Frames, frameText(v.Stacks.Frame(fid), tab.Counts(fid)))
	}
	return r
}

// frameText is one frame of a site's stack; counts marks the frames the
// filter keeps (user and library code).
func frameText(fr *snapshot.Frame, counts bool) frameRow {
	where := clip(srcpath.Show(fr.Filename), 120)
	if fr.Line > 0 {
		where += fmt.Sprintf(":%d", fr.Line)
	}
	return frameRow{Where: where, Func: clip(fr.Name, 60), User: counts}
}

// siteText is a site's label for the page's tables: "file:line function",
// with "(called from file:line function)" for a library site, clipped by
// the rule of labels; the full label is its tooltip and the stack is one
// click away.
func siteText(s attribution.SiteBytes) string { return clip(s.Label, 160) }

// shortSite is a site's label for legends: "file:line function", and
// "← file:line" naming the caller of a library site, clipped by the rule
// of labels (directories go first).
func shortSite(st *snapshot.Stacks, s attribution.SiteBytes) string {
	switch s.Site.Kind {
	case attribution.SiteUser, attribution.SiteLibrary, attribution.SitePython:
	default:
		return clip(s.Label, 60)
	}
	name := attribution.FrameLabel(st.Frame(s.Site.Frame))
	if s.Site.HasCaller {
		c := st.Frame(s.Site.Caller)
		name += fmt.Sprintf(" ← %s:%d", srcpath.Show(c.Filename), c.Line)
	}
	return clip(name, 72)
}

func (ds *deviceSection) stepTable(d *attribution.Device, rows []int) {
	p := d.Phases
	ds.PhaseSource = phasesFrom(d)
	t := p.Table(rows, 8)
	for _, n := range t.Phases {
		ds.PhaseNames = append(ds.PhaseNames, clip(n, 24))
	}
	if t.PeakStep >= 0 {
		ds.PeakStep = fmt.Sprintf("step %d %s", t.PeakStep, clip(t.PeakPhase, 40))
	}
	for _, tr := range t.Rows {
		if tr.Gap {
			ds.Steps = append(ds.Steps, stepRow{Gap: true})
			continue
		}
		r := stepRow{Step: tr.Step, Floor: tr.Floor, After: tr.After, PeakIn: clip(tr.PeakIn, 24),
			StepPeak: tr.Peak, HoldsPeak: tr.HoldsPeak}
		for _, v := range tr.Peaks {
			if v >= 0 {
				r.Peaks = append(r.Peaks, units.Bytes(v))
			} else {
				r.Peaks = append(r.Peaks, "–")
			}
		}
		ds.Steps = append(ds.Steps, r)
	}
}

// boundStrings keeps at most n strings of at most runes runes each, each
// cut at its end: a warning or a note says what it is about first.
func boundStrings(in []string, n, runes int) []string {
	out := []string{}
	for i, s := range in {
		if i == n {
			out = append(out, fmt.Sprintf("(%d more)", len(in)-i))
			break
		}
		out = append(out, clipTail(s, runes))
	}
	return out
}

// warningRunes bounds each warning of a page: the longest the replay
// writes (a one-entry trace, frees waiting on another stream, a wrapped
// ring buffer with its estimate) fit whole.
const warningRunes = 800

// findingRow is one finding in words, for the template.
type findingRow struct {
	Kind    string
	Problem bool
	Text    string
}

// boundFindings words at most n findings of at most 900 runes each.
func boundFindings(in []attribution.Finding, n int) []findingRow {
	out := []findingRow{}
	for i, f := range in {
		if i == n {
			out = append(out, findingRow{Kind: "more", Text: fmt.Sprintf("(%d more findings, not shown)", len(in)-i)})
			break
		}
		out = append(out, findingRow{Kind: f.Kind.String(), Problem: f.Problem(), Text: clip(findingText(f), 900)})
	}
	return out
}
