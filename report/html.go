package report

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
)

//go:embed html
var htmlFS embed.FS

var pageTemplate = template.Must(template.New("page.html.tmpl").Funcs(template.FuncMap{
	"bytes": units.Bytes,
	"dur":   units.Duration,
	"pct":   func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"share": func(n, total int64) string {
		if total <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(total))
	},
	"deref": func(p *int64) int64 { return *p },
	// the verdicts' words
	"fragVerdict": fragVerdictText,
	"oomVerdict":  oomVerdictText,
	"leakReason":  leakReasonText,
	"add":         func(a, b int) int { return a + b },
	"sub":         func(a, b int64) int64 { return a - b },
	"width": func(n, total int64) template.CSS { // a bar's width in a style attribute
		if total <= 0 {
			return "width:0"
		}
		return template.CSS(fmt.Sprintf("width:%.2f%%", 100*float64(n)/float64(total)))
	},
}).ParseFS(htmlFS, "html/*.tmpl"))

// HTMLOptions say how HTML builds the page.
type HTMLOptions struct {
	Title   string // the page's title; "" names the snapshots
	Version string // memscope's version, for the footer
	// Run is a capture run directory (--run): a sweep's curves and tables,
	// or a capture's per-rank table and chart; nil leaves it out.
	Run *RunView
	// Ops is the per-operator table of a profiler trace (--trace); nil
	// leaves its section out.
	Ops *OpsView
	// Timeline is an export_memory_timeline file given as the trace
	// (--trace); nil leaves its section out.
	Timeline *TimelineView
	// Fit is 'memscope fit''s result (fit --html); nil leaves it out.
	Fit *Fit
	// Extension point: another section that is not about a snapshot device
	// is added the same way as these two: a field here holding its computed
	// result, a builder in its own html_*.go file returning an extraSection
	// (charts built with go-echarts through newChart, plain tables), and an
	// entry in buildExtras (leading the page or following the snapshots).
	// The page template and the JavaScript glue need no change: every extra
	// section is linked from the navigation and its charts are initialised
	// and checked like the rest.
}

// page is what the template renders.
type page struct {
	Title          string
	Version        string
	EChartsVersion string
	Library        template.JS // the vendored echarts build, inlined
	Notice         string      // its NOTICE, for the footer
	CSS            template.CSS
	Early, Glue    template.JS
	// Lead holds the sections shown before the snapshots (a run
	// directory's overview), Extras those after (an operator table).
	Lead, Extras []extraSection
	Files        []fileSection
}

type fileSection struct {
	ID       string
	Source   string
	Format   string
	Warnings []string
	Devices  []*deviceSection
}

// extraSection is a section of the page that is not about one snapshot
// device: the per-operator table of a trace, later a capture run.
type extraSection struct {
	ID, Title string
	Intro     string
	Charts    []chartView
	Tables    []*table
}

// table is a plain table of text cells; Right marks right-aligned columns.
type table struct {
	Head  []string
	Right []bool
	Rows  [][]string
}

// maxLabel bounds every string taken from the input (file names,
// functions, annotations) so that hostile names cannot grow the page.
const maxLabel = 240

// writeHTML writes one self-contained page showing every device of every view:
// the numbers and findings, the timeline with phase bands, the stacks by
// category and by site, the peak's call tree and top sites, the step table,
// the leak staircase, fragmentation and out-of-memory post-mortems. Views
// and their lists are already bounded (attribution.ViewOptionsFor), so the
// page's size does not grow with the input's. Charts are ECharts options
// built with go-echarts and stored as JSON in the page; a small script
// initialises them with the vendored ECharts build, inlined, so that the
// page loads nothing from the network.
func writeHTML(w io.Writer, views []*attribution.View, opt HTMLOptions) error {
	p := &page{Title: opt.Title, Version: opt.Version, EChartsVersion: EChartsVersion,
		Library: template.JS(echartsLib), Notice: echartsNotice}
	for _, name := range []string{"style.css", "early.js", "units.js", "glue.js"} {
		b, err := htmlFS.ReadFile("html/" + name)
		if err != nil {
			return fmt.Errorf("invariant violation: embedded %s: %w", name, err)
		}
		switch name {
		case "style.css":
			p.CSS = template.CSS(b)
		case "early.js":
			p.Early = template.JS(b)
		case "units.js":
			p.Glue = template.JS(b) + "\n" // the glue's formatters are these
		default:
			p.Glue += template.JS(b)
		}
	}
	var names []string
	for i, v := range views {
		fs := fileSection{ID: fmt.Sprintf("f%d", i), Source: clip(v.Source, maxLabel), Format: v.Format,
			Warnings: boundStrings(warningStrings(v.Warnings), v.Options.Notes, warningRunes)}
		for _, d := range v.Devices {
			ds := buildDevice(v, d, fmt.Sprintf("f%dd%d", i, d.Device.Device))
			ds.Nav = fmt.Sprintf("device %d", ds.Device)
			if len(views) > 1 {
				ds.Nav = shortPath(v.Source) + " · " + ds.Nav
			}
			fs.Devices = append(fs.Devices, ds)
		}
		names = append(names, fs.Source)
		p.Files = append(p.Files, fs)
	}
	if len(names) == 0 && opt.Ops != nil {
		names = append(names, clip(opt.Ops.Source, maxLabel))
	}
	if len(names) == 0 && opt.Timeline != nil {
		names = append(names, clip(opt.Timeline.Source, maxLabel))
	}
	if p.Title == "" {
		p.Title = strings.Join(names, ", ")
	}
	p.Title = clip(p.Title, maxLabel)
	p.Lead, p.Extras = buildExtras(opt)
	return pageTemplate.Execute(w, p)
}

// shortPath is an input file's path for links: clipped to 48 characters
// by the rule of labels, which keeps its name.
func shortPath(p string) string { return clip(filepath.ToSlash(p), 48) }

// buildExtras builds the sections that are not about a snapshot device:
// those that lead the page and those that follow the snapshots.
func buildExtras(opt HTMLOptions) (lead, after []extraSection) {
	lead, after = []extraSection{}, []extraSection{}
	if opt.Run != nil {
		lead = append(lead, runSections(opt.Run)...)
	}
	if opt.Fit != nil {
		lead = append(lead, fitSection(opt.Fit))
	}
	if opt.Ops != nil {
		after = append(after, opsSection(opt.Ops))
	}
	if opt.Timeline != nil {
		after = append(after, timelineSection(opt.Timeline))
	}
	return lead, after
}

// UnitsJS is the page script that formats sizes and times as memscope's
// text does (report/html/units.js): the report's pages inline it, and
// memscope serve serves it to its page, so both print one rule.
func UnitsJS() []byte {
	b, err := htmlFS.ReadFile("html/units.js")
	if err != nil {
		panic("invariant violation: embedded units.js: " + err.Error())
	}
	return b
}

// Page is 'memscope report': one HTML page of several snapshots' views and
// the extras of HTMLOptions.
type Page struct {
	Views   []*attribution.View
	Options HTMLOptions
}

func (*Page) Kind() string { return "report" }

func (r *Page) writeHTML(w io.Writer) error { return writeHTML(w, r.Views, r.Options) }
