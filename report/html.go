package report

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
)

// EChartsVersion is the npm echarts build the report is made for: the one
// go-echarts v2.7.2 targets (its README and docs name v5.4.3). A local copy
// is found by 'memscope report' (--echarts, MEMSCOPE_ECHARTS, the cache
// EChartsCacheDir, or EChartsFile in a node_modules nearby) and inlined;
// without one the page loads exactly this version from EChartsURL.
const EChartsVersion = "5.4.3"

// EChartsFile is where the build lies under an npm prefix (the directory
// holding node_modules).
const EChartsFile = "node_modules/echarts/dist/echarts.min.js"

// EChartsCacheDir is the npm prefix, under the user's cache directory
// (${XDG_CACHE_HOME:-$HOME/.cache} on Linux), that .ci/run fills and
// EChartsInstallAt's command fills: one install serves every directory.
const EChartsCacheDir = "memscope/echarts-" + EChartsVersion

// EChartsCacheInstall is the npm command that fills the usual cache, for
// docs and pages (messages name the user's own).
const EChartsCacheInstall = "npm install --prefix ~/.cache/" + EChartsCacheDir + EChartsInstallArgs

// EChartsInstallArgs follow the prefix in the npm command, as in .ci/run:
// no package.json written, no audit.
const EChartsInstallArgs = " --no-save --no-audit --no-fund echarts@" + EChartsVersion

// EChartsInstallAt is the npm command that puts the pinned build under
// the prefix dir, where it is dir/EChartsFile.
func EChartsInstallAt(dir string) string {
	return "npm install --prefix " + dir + EChartsInstallArgs
}

// EChartsURL is where a page without an inlined library loads it from.
const EChartsURL = "https://cdn.jsdelivr.net/npm/echarts@" + EChartsVersion + "/dist/echarts.min.js"

// EChartsInstall is the command that puts the pinned build in the
// node_modules of the directory it runs in, where 'memscope report' run
// from there or below looks for it.
const EChartsInstall = "npm install --no-save echarts@" + EChartsVersion

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
	// ECharts is the echarts.min.js build to inline (see CheckECharts);
	// nil makes the page load EChartsURL and say that it needs network.
	ECharts []byte
	// EChartsFrom says where ECharts was read from, for the footer.
	EChartsFrom string

	// Run is a capture run directory (--run): a sweep's curves and tables,
	// or a capture's per-rank table and chart; nil leaves it out.
	Run *RunView
	// Ops is the per-operator table of a profiler trace (--trace); nil
	// leaves its section out.
	Ops *OpsView
	// Timeline is an export_memory_timeline file given as the trace
	// (--trace); nil leaves its section out.
	Timeline *TimelineView
	// Extension point: another section that is not about a snapshot device
	// is added the same way as these two: a field here holding its computed
	// result, a builder in its own html_*.go file returning an extraSection
	// (charts built with go-echarts through newChart, plain tables), and an
	// entry in buildExtras (leading the page or following the snapshots).
	// The page template and the JavaScript glue need no change: every extra
	// section is linked from the navigation and its charts are initialised
	// and checked like the rest.
}

// CheckECharts reports whether lib looks like the pinned echarts build and
// can be inlined in a <script> element.
func CheckECharts(lib []byte) error {
	if !bytes.Contains(lib, []byte(`version="`+EChartsVersion+`"`)) {
		return fmt.Errorf("not echarts %s (npm echarts/dist/echarts.min.js; install it with %s)", EChartsVersion, EChartsCacheInstall)
	}
	low := bytes.ToLower(lib)
	if bytes.Contains(low, []byte("</script")) || bytes.Contains(low, []byte("<!--")) {
		return fmt.Errorf("it holds </script or <!--, so it cannot be inlined in a page")
	}
	return nil
}

// page is what the template renders.
type page struct {
	Title          string
	Version        string
	EChartsVersion string
	EChartsURL     string
	EChartsInstall string
	CacheInstall   string // EChartsCacheInstall
	EChartsFrom    string
	Library        template.JS // the inlined echarts build; "" to load EChartsURL
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
// initialises them.
func writeHTML(w io.Writer, views []*attribution.View, opt HTMLOptions) error {
	p := &page{Title: opt.Title, Version: opt.Version, EChartsVersion: EChartsVersion,
		EChartsURL: EChartsURL, EChartsInstall: EChartsInstall, CacheInstall: EChartsCacheInstall,
		EChartsFrom: clip(opt.EChartsFrom, maxLabel)}
	if opt.ECharts != nil {
		if err := CheckECharts(opt.ECharts); err != nil {
			return fmt.Errorf("inlining echarts: %w", err)
		}
		p.Library = template.JS(opt.ECharts)
	}
	for _, name := range []string{"style.css", "early.js", "glue.js"} {
		b, err := htmlFS.ReadFile("html/" + name)
		if err != nil {
			return fmt.Errorf("invariant violation: embedded %s: %w", name, err)
		}
		switch name {
		case "style.css":
			p.CSS = template.CSS(b)
		case "early.js":
			p.Early = template.JS(b)
		default:
			p.Glue = template.JS(b)
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

// shortPath is the last two elements of a file's path, for links.
func shortPath(p string) string {
	p = filepath.ToSlash(p)
	dir, file := path.Split(p)
	if d := path.Base(dir); dir != "" && d != "." && d != "/" {
		file = d + "/" + file
	}
	return clip(file, 48)
}

// buildExtras builds the sections that are not about a snapshot device:
// those that lead the page and those that follow the snapshots.
func buildExtras(opt HTMLOptions) (lead, after []extraSection) {
	lead, after = []extraSection{}, []extraSection{}
	if opt.Run != nil {
		lead = append(lead, runSections(opt.Run)...)
	}
	if opt.Ops != nil {
		after = append(after, opsSection(opt.Ops))
	}
	if opt.Timeline != nil {
		after = append(after, timelineSection(opt.Timeline))
	}
	return lead, after
}
