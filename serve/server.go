package serve

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/memscope/memscope/report"
	"io/fs"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/memscope/memscope/attribution"
)

//go:embed assets
var assets embed.FS

// Source is one analysed snapshot to serve.
type Source struct {
	Path     string // as the user gave it
	Analysis *attribution.Analysis
	// Summary is the analysis's summary, joined with a profiler trace
	// when one was given; nil: attribution.Summarize's.
	Summary *attribution.Summary
}

// Options tune a Server.
type Options struct {
	Version string // memscope's version, shown in the page
	Trace   string // the profiler trace joined, for the page's header
}

// Server answers the page and its JSON API over one or more analyses. It
// is safe for concurrent use: queries on one device take turns.
type Server struct {
	opt   Options
	views []*view
	mux   *http.ServeMux
	// settled is closed once the background work of New is done: every
	// index built and every moment's kept states.
	settled chan struct{}
}

// view is one device of one snapshot: what every API call names with v.
type view struct {
	id     int
	source string
	an     *attribution.Analysis
	d      *attribution.Device
	file   *attribution.Summary // the file's summary, sum's
	sum    *attribution.DeviceSummary
	// x is the timeline's index, built in the background from New on;
	// idx waits for it. The server listens meanwhile, so the page loads
	// while the index is built.
	x     *index
	ready chan struct{}
	ax    axis       // the axis, known at once
	mu    sync.Mutex // the device's lazily filled state and the index's marks
	// settings is /api/settings's answer, once asked for.
	settings *Settings
}

// A moment at any event is replayed from the nearest of the allocator
// states kept every momentEvents events (snapshot.Timeline.KeepStates), at
// most maxKeptStates of them: on a 1 GB recording of 11 M events, 256
// states 44 k events apart (about 1 ms of replay), each a copy of the
// blocks and segments live then.
const (
	momentEvents  = 16 << 10
	maxKeptStates = 256
)

// idx returns the view's index, waiting for it to be built.
func (v *view) idx() *index {
	<-v.ready
	return v.x
}

// New returns the server and indexes every device of the sources for the
// timeline in the background (one pass over each device's events and
// allocations, one device at a time; beside it, on the other core, a
// replay of the device records reserved bytes and keeps the allocator
// states moments start from); a query that needs an index waits for it, a
// moment asked before its states are kept replays from the first event.
// Ready reports when all of it is done.
func New(srcs []Source, opt Options) (*Server, error) {
	s := &Server{opt: opt, mux: http.NewServeMux(), settled: make(chan struct{})}
	for _, src := range srcs {
		sum := src.Summary
		if sum == nil {
			sum = attribution.Summarize(src.Analysis, 10)
		}
		for i, d := range src.Analysis.Devices {
			v := &view{id: len(s.views), source: src.Path, an: src.Analysis, d: d, file: sum, sum: &sum.Devices[i], ready: make(chan struct{}), ax: newAxis(d.Timeline)}
			s.views = append(s.views, v)
		}
	}
	if len(s.views) == 0 {
		return nil, errors.New("nothing to serve: the snapshots hold no device")
	}
	go func() {
		for _, v := range s.views {
			// With the allocator states a moment starts from, so that
			// one at any event replays at most momentEvents events.
			v.x = buildIndex(v.d, v.an.Snapshot.Stacks, v.ax, min(len(v.ax.events)/momentEvents, maxKeptStates))
			close(v.ready)
		}
		close(s.settled)
	}()
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("/", http.FileServerFS(static))
	units := report.UnitsJS()
	s.mux.HandleFunc("/units.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Write(units)
	})
	for path, h := range map[string]func(v *view, r *http.Request) (any, error){
		"summary":  s.summary,
		"timeline": s.timeline,
		"alloc":    s.alloc,
		"moment":   s.moment,
		"sites":    s.sites,
		"steps":    s.steps,
		"leaks":    s.leaks,
		"oom":      s.ooms,
		"settings": s.settings,
	} {
		s.mux.HandleFunc("GET /api/"+path, s.api(h))
	}
	s.mux.HandleFunc("GET /api/compare", s.compare)
	s.mux.HandleFunc("GET /api/views", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, r, http.StatusOK, s.viewList()) })
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, r, http.StatusNotFound, apiError{fmt.Sprintf("no such API: %s %s", r.Method, r.URL.Path)})
	})
	return s, nil
}

// ServeHTTP serves the page and the API, with the security headers
// (a Content-Security-Policy, nosniff, no framing). It answers any Host:
// a listening server puts it behind Guard.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	w.Header().Set("Cache-Control", "no-store")
	s.mux.ServeHTTP(w, r)
}

// Views says how many device views the server has (each API call picks one
// with v, from 0).
func (s *Server) Views() int { return len(s.views) }

// Ready waits until every view's index is built and the states moments
// start from are kept.
func (s *Server) Ready() { <-s.settled }

// badRequest is a query the API refuses: 400 with its message.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func badf(format string, args ...any) error { return &badRequest{fmt.Sprintf(format, args...)} }

type apiError struct {
	Error string `json:"error"`
}

// api wraps a handler: it picks the view, serialises the device's queries
// and writes the result or the error as JSON.
func (s *Server) api(h func(v *view, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n, err := intParam(r, "v", 0, 0, int64(len(s.views)-1))
		if err != nil {
			writeJSON(w, r, http.StatusBadRequest, apiError{err.Error()})
			return
		}
		v := s.views[n]
		v.mu.Lock()
		res, err := h(v, r)
		v.mu.Unlock()
		if err != nil {
			code := http.StatusInternalServerError
			if _, ok := errors.AsType[*badRequest](err); ok {
				code = http.StatusBadRequest
			}
			writeJSON(w, r, code, apiError{err.Error()})
			return
		}
		writeJSON(w, r, http.StatusOK, res)
	}
}

// writeJSON writes v as the answer to r, gzipped when r accepts it
// (writeBody).
func writeJSON(w http.ResponseWriter, r *http.Request, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(apiError{"encoding the answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	writeBody(w, r, code, b)
}

// intParam reads the integer parameter name of r, def when absent, and
// refuses one outside [lo, hi].
func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// Accept an integral float ("1.5e6" from a page's arithmetic).
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
			return 0, badf("%s=%q: want an integer", name, s)
		}
		n = int64(f)
	}
	if n < lo || n > hi {
		return 0, badf("%s=%d: want %d to %d", name, n, lo, hi)
	}
	return n, nil
}

// viewInfo names one view for the page's picker.
type viewInfo struct {
	ID     int    `json:"id"`
	Source string `json:"source"`
	Device int    `json:"device"`
	Events int    `json:"events"`
	Axis   string `json:"axis"`
}

type viewList struct {
	Version string     `json:"version"`
	Trace   string     `json:"trace,omitempty"`
	Views   []viewInfo `json:"views"`
}

func (s *Server) viewList() viewList {
	out := viewList{Version: s.opt.Version, Trace: s.opt.Trace, Views: []viewInfo{}}
	for _, v := range s.views {
		axis := "event"
		if v.ax.timed {
			axis = "time_us"
		}
		out.Views = append(out.Views, viewInfo{ID: v.id, Source: v.source, Device: v.d.Device, Events: len(v.ax.events), Axis: axis})
	}
	return out
}

// timeline answers /api/timeline?from=&to=&px=&bands=: see index.timeline.
func (s *Server) timeline(v *view, r *http.Request) (any, error) {
	span := v.ax.span()
	from, err := intParam(r, "from", 0, math.MinInt64/4, math.MaxInt64/4)
	if err != nil {
		return nil, err
	}
	to, err := intParam(r, "to", span, math.MinInt64/4, math.MaxInt64/4)
	if err != nil {
		return nil, err
	}
	px, err := intParam(r, "px", defaultPx, 1, maxColumns)
	if err != nil {
		return nil, err
	}
	bands, err := intParam(r, "bands", defaultBands, 0, maxBands)
	if err != nil {
		return nil, err
	}
	from, to = max(from, 0), min(to, span)
	if from > to {
		return nil, badf("from=%d, to=%d: want from ≤ to within the recording, 0 to %d", from, to, span)
	}
	wait, err := intParam(r, "wait", 0, 0, 1)
	if err != nil {
		return nil, err
	}
	if wait == 0 {
		select {
		case <-v.ready:
		default:
			// The index is still being built: an overview now, the page
			// asks again with wait=1 for the bands.
			if pts := v.d.Overview(); pts != nil {
				return overview(v.d, &v.ax, pts, from, to, int(px)), nil
			}
		}
	}
	return v.idx().timeline(from, to, int(px), int(bands)), nil
}

// momentOf resolves the at parameter: peak (default), end, oom, oomN or
// oom:N, an event number N or event:N, step:N:PHASE, or a time such as
// 1.5s (attribution.Device.ParseMoment).
func momentOf(v *view, r *http.Request) (*attribution.Moment, error) {
	at := strings.TrimSpace(r.URL.Query().Get("at"))
	switch {
	case strings.HasPrefix(at, "oom") && len(at) > 3 && at[3] >= '0' && at[3] <= '9':
		at = "oom:" + at[3:]
	case at != "" && strings.Trim(at, "-0123456789") == "":
		at = "event:" + at
	}
	m, err := v.d.ParseMoment(at)
	if err != nil {
		return nil, badf("at=%q: %v", r.URL.Query().Get("at"), err)
	}
	return m, nil
}
