package attribution

import "github.com/memscope/memscope/snapshot"

// Page gathers the analyses of snapshots that share one page (report's
// HTML): the device sections of all of them split the page's bounds
// (ViewOptionsFor). Each snapshot is analysed as it is added, its
// timeline's points as the page will split them if no later snapshot adds
// devices, so the analysis keeps them from its own replay.
type Page struct {
	analyses []*Analysis
	sections int
}

// Add analyses s under opt (SeriesPoints set here) for the page.
func (p *Page) Add(s *snapshot.Snapshot, opt Options) *Analysis {
	devs := len(s.Devices())
	if opt.Device >= 0 {
		devs = 1
	}
	opt.SeriesPoints = ViewOptionsFor(p.sections + devs).Series.MaxPoints
	an := Analyze(s, opt)
	p.sections += len(an.Devices)
	p.analyses = append(p.analyses, an)
	return an
}

// Sections is how many device sections the page holds so far; more than
// MaxViewSections is more than a page shows.
func (p *Page) Sections() int { return p.sections }

// Views returns the view of every analysis added, under the bounds of the
// page's sections.
func (p *Page) Views() []*View {
	vo := ViewOptionsFor(p.sections)
	var views []*View
	for _, an := range p.analyses {
		views = append(views, NewView(an, vo))
	}
	return views
}
