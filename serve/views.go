package serve

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/snapshot"
)

// Bounds of the moment, sites and steps answers.
const (
	maxSegments = 2000
	maxBlocks   = 20000
	maxSites    = 500
	maxSteps    = 5000
	treeNodes   = 400
	treeMin     = 0.002
)

// Peak is one quantity's peak and when it was reached.
type Peak struct {
	Bytes int64 `json:"bytes"`
	Event int   `json:"event"`
	X     int64 `json:"x"` // on the timeline's axis
}

func (v *view) peak(p snapshot.Peak) Peak {
	out := Peak{Bytes: p.Bytes, Event: p.Index, X: -1}
	if p.Index >= 0 && p.Index < len(v.ax.events) {
		out.X = v.ax.xOf(p.Index)
	}
	return out
}

// Summary is /api/summary: the device's summary document, the one
// `memscope summary --json` writes for it (report.SummaryDevice,
// docs/json.md), with the file's warnings, the notes the text prints
// beside the numbers, and where its moments sit on this page's axis.
type Summary struct {
	Source  string               `json:"source"`
	Summary report.SummaryDevice `json:"summary"`
	// Warnings are the file's (decoding); the device's are the summary's.
	Warnings []string `json:"warnings"`
	// Notes are what 'memscope summary' explains beside the numbers
	// (report.Notes): why there is no timeline (no allocation history,
	// or a trace of one entry), why a profiler trace joined nothing.
	Notes []string    `json:"notes"`
	View  SummaryView `json:"view"`
}

// SummaryView places the summary's moments on the page's axis.
type SummaryView struct {
	Axis   string `json:"axis"` // event or time_us
	Span   int64  `json:"span"`
	Events int    `json:"events"`
	Peaks  struct {
		Requested Peak `json:"requested"`
		Allocated Peak `json:"allocated"`
		Active    Peak `json:"active"`
		Reserved  Peak `json:"reserved"`
	} `json:"peaks"`
	// OOMAt places each OOM event on the axis.
	OOMAt  []Peak  `json:"oom_at"`
	Phases []Phase `json:"phases"`
}

// Phase is one phase with its event and axis ranges.
type Phase struct {
	Name   string `json:"name"`
	Step   int    `json:"step"`
	First  int    `json:"first"`
	Last   int    `json:"last"`
	X0     int64  `json:"x0"`
	X1     int64  `json:"x1"`
	Peak   int64  `json:"peak"` // allocated
	PeakAt int    `json:"peak_event"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
}

// stack is stack id as the documents write it (report.StackJSONOf).
func (v *view) stack(id snapshot.StackID) []report.FrameJSON {
	return report.StackJSONOf(v.an.Sites(), id)
}

// siteRows are the first limit sites whose label holds q (any case), as
// the documents write them (report.SiteJSONOf).
func (v *view) siteRows(sites []attribution.SiteBytes, limit int, q string) []report.SiteJSON {
	out := []report.SiteJSON{}
	tab := v.an.Sites()
	q = strings.ToLower(q)
	for _, s := range sites {
		if len(out) == limit {
			break
		}
		if q != "" && !strings.Contains(strings.ToLower(s.Label), q) {
			continue
		}
		out = append(out, report.SiteJSONOf(tab, s))
	}
	return out
}

func (s *Server) summary(v *view, r *http.Request) (any, error) {
	ds := v.sum
	out := &Summary{Source: v.source, Summary: report.SummaryDeviceJSON(v.file, ds), Warnings: []string{}, Notes: report.Notes(ds)}
	w := &out.View
	w.Axis, w.Span, w.Events, w.OOMAt, w.Phases = "event", v.ax.span(), len(v.ax.events), []Peak{}, []Phase{}
	if v.ax.timed {
		w.Axis = "time_us"
	}
	w.Peaks.Requested, w.Peaks.Allocated = v.peak(ds.PeakRequested), v.peak(ds.PeakAllocated)
	w.Peaks.Active, w.Peaks.Reserved = v.peak(ds.PeakActive), v.peak(ds.PeakReserved)
	for _, o := range v.d.OOMs {
		w.OOMAt = append(w.OOMAt, v.peak(snapshot.Peak{Bytes: o.Request, Index: o.Index}))
	}
	for _, wn := range v.an.Snapshot.Warnings {
		out.Warnings = append(out.Warnings, wn.Message)
	}
	for i, ph := range v.d.Phases.List {
		if i == maxSteps {
			break
		}
		w.Phases = append(w.Phases, v.phase(&ph))
	}
	return out, nil
}

func (v *view) phase(ph *attribution.Phase) Phase {
	p := Phase{Name: ph.Name, Step: ph.Step, First: ph.First, Last: ph.Last, X0: int64(ph.First), X1: int64(ph.Last),
		Peak: ph.Peak.Allocated, PeakAt: ph.PeakIndex, Start: ph.Start.Allocated, End: ph.End.Allocated}
	if v.ax.timed {
		p.X0, p.X1 = ph.StartUS-v.ax.t0, ph.EndUS-v.ax.t0
	}
	return p
}

// Alloc is /api/alloc: one allocation with its stack and lifetime.
type Alloc struct {
	ID        int64              `json:"id"`
	Addr      string             `json:"addr"`
	Size      int64              `json:"size"`
	Requested int64              `json:"requested"`
	Stream    int64              `json:"stream"`
	Category  string             `json:"category"`
	Phase     string             `json:"phase"`
	Step      int                `json:"step"`
	Site      string             `json:"site"`
	Stack     []report.FrameJSON `json:"stack"`
	// FreeStack: the stack is where it was freed (it predates the
	// recording and only its free was recorded).
	FreeStack bool `json:"free_stack"`
	// Start is the alloc event (-1: before the first); End the event that
	// ended it, -1 when it lives to the end; X0 and X1 on the axis.
	Start      int    `json:"start"`
	End        int    `json:"end"`
	X0         int64  `json:"x0"`
	X1         int64  `json:"x1"`
	EndPhase   string `json:"end_phase"`
	EndStep    int    `json:"end_step"`
	Events     int    `json:"events"` // events it lived through
	DurationUS *int64 `json:"duration_us"`
}

func (s *Server) alloc(v *view, r *http.Request) (any, error) {
	q := r.URL.Query().Get("id")
	if q == "" {
		return nil, badf("id: missing: give an allocation's id from /api/timeline")
	}
	id, err := intParam(r, "id", 0, -int64(v.idx().nInit), int64(len(v.ax.events)-1))
	if err != nil {
		return nil, err
	}
	rn := v.idx().recOf(id)
	if rn < 0 {
		return nil, badf("id=%d: event %d is not an allocation", id, id)
	}
	rc := &v.idx().recs[rn]
	b := v.idx().block(rn)
	n := len(v.ax.events)
	out := &Alloc{ID: id, Addr: fmt.Sprintf("0x%x", b.Addr), Size: rc.size, Requested: b.Requested, Stream: b.Stream,
		Category: v.d.CategoryOf(&b).String(), Step: -1, Site: v.idx().siteLabels[rc.site], Stack: v.stack(b.Stack),
		FreeStack: b.FreeStack, Start: int(rc.start), End: int(rc.end), EndStep: -1, X0: 0, X1: v.ax.span()}
	if rc.start >= 0 {
		out.Phase, out.Step = v.d.PhaseOf(int(rc.start))
		out.X0 = v.ax.xOf(int(rc.start))
	}
	if int(rc.end) >= n {
		out.End = -1
		out.Events = n - 1 - int(rc.start)
	} else {
		out.EndPhase, out.EndStep = v.d.PhaseOf(int(rc.end))
		out.X1 = v.ax.xOf(int(rc.end))
		out.Events = int(rc.end) - int(rc.start)
	}
	if v.ax.timed && rc.start >= 0 {
		d := v.ax.events[min(int(rc.end), n-1)].TimeUS - v.ax.events[rc.start].TimeUS
		out.DurationUS = &d
	}
	return out, nil
}
