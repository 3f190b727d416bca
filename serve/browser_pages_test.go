package serve

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memscope/memscope/internal/units"
)

// encodings records the Content-Encoding of each /api answer the page
// got, by path.
type encodings struct {
	h  http.Handler
	mu sync.Mutex
	by map[string]string
}

func (e *encodings) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.h.ServeHTTP(w, r)
	if strings.HasPrefix(r.URL.Path, "/api/") {
		e.mu.Lock()
		if e.by == nil {
			e.by = map[string]string{}
		}
		e.by[r.URL.Path] = w.Header().Get("Content-Encoding")
		e.mu.Unlock()
	}
}

// TestChromiumSteps: on a recording of many steps the Steps page shows one
// page of them, its rows the server's page of phases; next, last and "go
// to step" move through them by the address; the leaks page charts every
// steady step's floor and lists 41 rows; and the browser got the answers
// gzipped.
func TestChromiumSteps(t *testing.T) {
	path := bigSnapshot(t, "../fixtures/llama-bf16/snapshot.pickle", 24<<20)
	srv := newServer(t, path)
	all := srv.views[0].d.Phases.Steps
	if len(all) <= 3*defaultStepsPage {
		t.Fatalf("%d steps, want more than three pages", len(all))
	}
	enc := &encodings{h: srv}
	c, base, problems := openBrowser(t, enc)
	rowsOf := func(from, to int) int { // the page's rows: one per phase
		n := 0
		for _, st := range all[from:min(to, len(all))] {
			n += len(st.Phases)
		}
		return n
	}
	check := func(what string, offset int) {
		t.Helper()
		c.waitFor(t, what, fmt.Sprintf(`document.body.dataset.page === 'steps' && document.getElementById('st-body').dataset.offset === '%d'`, offset), 60*time.Second)
		var got struct {
			Rows  int
			First string
			Nav   string
		}
		c.eval(t, `(() => { const b = document.getElementById('st-body'), tr = b.querySelectorAll('table tr');
			return {rows: tr.length - 1, first: tr.length > 1 ? tr[1].cells[0].innerText : '', nav: (document.getElementById('st-nav') || {}).innerText || ''}; })()`, &got)
		if want := rowsOf(offset, offset+defaultStepsPage); got.Rows != want || got.First != fmt.Sprint(all[offset].Step) {
			t.Errorf("%s: %d rows from step %s, want %d from step %d", what, got.Rows, got.First, want, all[offset].Step)
		}
		if want := fmt.Sprintf("steps %d–%d of %d", offset+1, min(offset+defaultStepsPage, len(all)), len(all)); !strings.Contains(got.Nav, want) {
			t.Errorf("%s: the navigation reads %q, want %q in it", what, got.Nav, want)
		}
	}
	c.page(t, "Page.navigate", map[string]any{"url": base + "#steps"})
	check("the first page of steps", 0)
	c.eval(t, `[...document.querySelectorAll('#st-nav a')].find((a) => a.innerText === 'next ›').click()`, nil)
	check("the next page", defaultStepsPage)
	c.eval(t, `[...document.querySelectorAll('#st-nav a')].find((a) => a.innerText === 'last »').click()`, nil)
	last := (len(all) - 1) / defaultStepsPage * defaultStepsPage
	check("the last page", last)
	c.eval(t, `history.back()`, nil)
	check("back to the second page", defaultStepsPage)
	c.eval(t, fmt.Sprintf(`(() => { const i = document.getElementById('st-go'); i.value = '%d'; i.dispatchEvent(new Event('change')); })()`, all[len(all)-1].Step), nil)
	check("go to the last step", last)
	// The leaks page: every steady step's floor in the chart, the table
	// bounded (a long run has thousands of steps).
	c.eval(t, `location.hash = '#leaks'`, nil)
	c.waitFor(t, "the leaks page", `document.body.dataset.page === 'leaks'`, 60*time.Second)
	var lk struct{ Steps, Rows string }
	c.eval(t, `({steps: document.getElementById('lk-floors').dataset.steps, rows: document.getElementById('lk-body').dataset.rows})`, &lk)
	n := len(srv.views[0].d.Leak.Steps)
	if want := min(n, 2*20+1); n <= 2*20 || lk.Steps != fmt.Sprint(n) || lk.Rows != fmt.Sprint(want) {
		t.Errorf("the leaks page charts %s steps in %s table rows; want %d steps (more than 40) in %d rows", lk.Steps, lk.Rows, n, want)
	}
	enc.mu.Lock()
	for _, p := range []string{"/api/steps", "/api/summary"} {
		if enc.by[p] != "gzip" {
			t.Errorf("the browser got %s with Content-Encoding %q, want gzip", p, enc.by[p])
		}
	}
	enc.mu.Unlock()
	for _, p := range problems() {
		t.Error(p)
	}
}

// lab is an sRGB colour drawn with alpha a over white, in CIE L*a*b*
// (D65).
func lab(r, g, b, a float64) [3]float64 {
	lin := func(c float64) float64 {
		c = (a*c + (1-a)*255) / 255
		if c <= 0.04045 {
			return c / 12.92
		}
		return math.Pow((c+0.055)/1.055, 2.4)
	}
	R, G, B := lin(r), lin(g), lin(b)
	x := (0.4124*R + 0.3576*G + 0.1805*B) / 0.95047
	y := 0.2126*R + 0.7152*G + 0.0722*B
	z := (0.0193*R + 0.1192*G + 0.9505*B) / 1.08883
	f := func(t float64) float64 {
		if t > 0.008856 {
			return math.Cbrt(t)
		}
		return 7.787*t + 16.0/116
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

// TestChromiumTimelineDetails, on a long generated run: the legend's site
// colours are told apart (every pair at least 20 ΔE apart as drawn, where
// the old palette's closest pair was 2); reserved is drawn, the plot's
// scale reaching the window's most reserved; zoomed in, the overview
// strip shows the whole recording with the window on it, and a click on
// it moves the window there.
func TestChromiumTimelineDetails(t *testing.T) {
	path := bigSnapshot(t, "../fixtures/llama-bf16/snapshot.pickle", 24<<20)
	srv := newServer(t, path)
	v := srv.views[0]
	c, base, problems := openBrowser(t, srv)
	c.page(t, "Page.navigate", map[string]any{"url": base})
	c.waitFor(t, "the bands draw", `memscope.partial === false && document.getElementById('tl').dataset.drawn >= 1`, 120*time.Second)

	var legend []struct{ R, G, B, A float64 }
	c.eval(t, `[...document.querySelectorAll('#legend span.site i')].map((i) => {
		const m = getComputedStyle(i).backgroundColor.match(/[\d.]+/g).map(Number);
		return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; })`, &legend)
	var data map[string]string
	c.eval(t, `Object.assign({}, document.getElementById('tl').dataset)`, &data)
	from, _ := strconv.ParseInt(data["from"], 10, 64)
	to, _ := strconv.ParseInt(data["to"], 10, 64)
	px, _ := strconv.Atoi(data["px"])
	v.mu.Lock()
	tl := v.idx().timeline(from, to, px, defaultBands)
	v.mu.Unlock()
	if len(legend) != len(tl.Rest) || len(tl.Rest) < 8 {
		t.Fatalf("the legend has %d sites, the answer %d rest rows (want several)", len(legend), len(tl.Rest))
	}
	for i := range legend {
		for j := range i {
			a, b := legend[i], legend[j]
			la, lb := lab(a.R, a.G, a.B, a.A), lab(b.R, b.G, b.B, b.A)
			if d := math.Hypot(math.Hypot(la[0]-lb[0], la[1]-lb[1]), la[2]-lb[2]); d < 20 {
				t.Errorf("legend colours %d %v and %d %v are %.1f ΔE apart, want at least 20", i, a, j, b, d)
			}
		}
	}
	if top := slices.Max(tl.ReservedMax); data["reservedShown"] != "true" || data["reservedTop"] != fmt.Sprint(top) {
		t.Errorf("reserved shown %s, its top %s; the window's most reserved is %d", data["reservedShown"], data["reservedTop"], top)
	}
	if ymax, _ := strconv.ParseFloat(data["ymax"], 64); ymax < float64(slices.Max(tl.ReservedMax)) {
		t.Errorf("the plot's scale tops at %v, below the most reserved %d", ymax, slices.Max(tl.ReservedMax))
	}
	var purple int
	c.eval(t, `(() => { const cv = document.getElementById('tl'), d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
		let n = 0; for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i]-106) < 30 && Math.abs(d[i+1]-27) < 30 && Math.abs(d[i+2]-154) < 30 && d[i+3] > 200) n++;
		return n; })()`, &purple)
	if purple < 100 {
		t.Errorf("%d pixels of the reserved line's colour, want it drawn across the plot", purple)
	}

	var hidden bool
	c.eval(t, `document.getElementById('ov').hidden`, &hidden)
	if !hidden {
		t.Errorf("the overview strip shows at the whole recording")
	}
	span := v.idx().span()
	c.eval(t, fmt.Sprintf("memscope.zoom(%d, %d)", span/2, span/2+span/20), nil)
	c.waitFor(t, "the strip shows the window", fmt.Sprintf(`document.getElementById('ov').dataset.from === '%d'`, span/2), 60*time.Second)
	var ov struct {
		Hidden         bool
		Left, Top, Y   float64
		From, To, Span string
		X0             string
	}
	c.eval(t, `(() => { const o = document.getElementById('ov'), r = o.getBoundingClientRect();
		return {hidden: o.hidden, left: r.left, top: r.top, y: r.top + r.height / 2, from: o.dataset.from, to: o.dataset.to, span: o.dataset.span, x0: o.dataset.x0}; })()`, &ov)
	if ov.Hidden || ov.To != fmt.Sprint(span/2+span/20) || ov.Span != fmt.Sprint(span) {
		t.Fatalf("zoomed to %d–%d of %d: the strip hidden %v, shows %s–%s of %s", span/2, span/2+span/20, span, ov.Hidden, ov.From, ov.To, ov.Span)
	}
	// A click a quarter of the way along the plot centres the window there.
	left, _ := strconv.ParseFloat(data["plotLeft"], 64)
	width, _ := strconv.ParseFloat(data["plotWidth"], 64)
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		c.page(t, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": ov.Left + left + width/4, "y": ov.Y, "button": "left", "clickCount": 1})
	}
	c.waitFor(t, "the click moves the window", fmt.Sprintf(`Number(document.getElementById('tl').dataset.from) < %d`, span/2), 60*time.Second)
	c.eval(t, `Object.assign({}, document.getElementById('tl').dataset)`, &data)
	f, _ := strconv.ParseFloat(data["from"], 64)
	e, _ := strconv.ParseFloat(data["to"], 64)
	if mid := (f + e) / 2; math.Abs(mid-float64(span)/4) > float64(span)/100 {
		t.Errorf("after a click at a quarter of the strip the window is %v–%v, centred at %.0f, want about %d", f, e, mid, span/4)
	}
	for _, p := range problems() {
		t.Error(p)
	}
}

// TestChromiumNotes: the page says what 'memscope summary' says of a
// state-only capture (no timeline: the end state alone), above the
// timeline, with the warning that tells how to record the history.
func TestChromiumNotes(t *testing.T) {
	path := "../fixtures/quirks/state-only/snapshot.pickle"
	srv := newServer(t, path)
	var s Summary
	get(t, srv, "/api/summary", &s)
	warnings := append(append([]string{}, s.Warnings...), s.Summary.Warnings...)
	if len(s.Notes) == 0 || len(warnings) == 0 {
		t.Fatalf("the summary of %s has notes %q and warnings %q, want both", path, s.Notes, warnings)
	}
	c, base, problems := openBrowser(t, srv)
	c.page(t, "Page.navigate", map[string]any{"url": base})
	c.waitFor(t, "the notes show", `!document.getElementById('notes').hidden && document.getElementById('notes').innerText.length > 0`, 60*time.Second)
	var text string
	c.eval(t, `document.getElementById('notes').innerText`, &text)
	for _, want := range append(append([]string{}, s.Notes...), warnings[0]) {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("the page's notes do not say %q:\n%s", want, text)
		}
	}
	for _, p := range problems() {
		t.Error(p)
	}
}

// TestChromiumMomentHover: the moment page draws only the segment rows in
// view and draws the others as the page scrolls; a row far down the page
// (scrolled to) answers a hover with its own block (size, site) and its
// free hole, as /api/moment gives them.
func TestChromiumMomentHover(t *testing.T) {
	srv := newServer(t, "../fixtures/sweep-llama/points/bf16-b20-largest-fit/snapshot.pickle")
	v := srv.views[0]
	req, _ := http.NewRequest("GET", "/api/moment?at=peak", nil)
	ans, err := srv.moment(v, req)
	if err != nil {
		t.Fatal(err)
	}
	m := ans.(*Moment)
	c, base, problems := openBrowser(t, srv)
	c.page(t, "Page.navigate", map[string]any{"url": base + "#moment?at=peak"})
	c.waitFor(t, "the moment view draws", `document.body.dataset.page === 'moment' && document.getElementById('segs').dataset.segments !== undefined`, 60*time.Second)
	var view struct{ Height, Inner float64 }
	c.eval(t, `({height: document.getElementById('segs').height, inner: window.innerHeight})`, &view)
	if rows := float64(len(m.Segments)*16 + 10); rows <= view.Inner || view.Height > view.Inner {
		t.Fatalf("%d segments (%.0f px) in a window %.0f px tall; the canvas is %.0f px: want more rows than fit, a canvas no taller than the window", len(m.Segments), rows, view.Inner, view.Height)
	}
	// The lowest row with a block at least 4 px wide and a hole as wide.
	const left, right, row = 150, 10, 16
	var big int64 = 1
	for _, s := range m.Segments {
		big = max(big, s.Size)
	}
	var width float64
	c.eval(t, `document.getElementById('segs').clientWidth`, &width)
	px := func(n int64) float64 { return float64(n) / float64(big) * (width - left - right) }
	k, bi, hi := -1, -1, -1
	for i := len(m.Segments) - 1; i >= 0 && k < 0; i-- {
		s := m.Segments[i]
		b, h := -1, -1
		for j, blk := range s.Blocks {
			if px(blk.Size) >= 4 {
				b = j
				break
			}
		}
		for j, hole := range s.Holes {
			if px(hole.Size) >= 4 {
				h = j
				break
			}
		}
		if b >= 0 && h >= 0 && float64(5+i*row) > view.Inner {
			k, bi, hi = i, b, h
		}
	}
	if k < 0 {
		t.Fatal("no segment below the first window with a block and a hole 4 px wide")
	}
	seg := m.Segments[k]
	c.eval(t, fmt.Sprintf(`window.scrollTo(0, document.getElementById('segs-wrap').getBoundingClientRect().top + window.scrollY + %d - 200)`, 5+k*row), nil)
	c.waitFor(t, "the rows in view are drawn", fmt.Sprintf(`(() => { const [a, b] = document.getElementById('segs').dataset.drawn.split('-').map(Number); return a <= %d && %d < b; })()`, k, k), 30*time.Second)
	var canvas struct{ Left, Top, ViewTop float64 }
	c.eval(t, `(() => { const r = document.getElementById('segs').getBoundingClientRect(); return {left: r.left, top: r.top, viewTop: memscope.segViewTop()}; })()`, &canvas)
	y := canvas.Top + float64(5+k*row) - canvas.ViewTop + 6
	hover := func(offset, size int64, want ...string) {
		t.Helper()
		x := canvas.Left + left + px(offset) + px(size)/2
		c.page(t, "Input.dispatchMouseEvent", map[string]any{"type": "mouseMoved", "x": x, "y": y})
		c.waitFor(t, "the tooltip", `document.getElementById('tip').style.display === 'block'`, 30*time.Second)
		var tip string
		c.eval(t, `document.getElementById('tip').innerText`, &tip)
		for _, w := range want {
			if !strings.Contains(tip, w) {
				t.Errorf("hovering offset %d of segment %d (%s): the tooltip does not say %q:\n%s", offset+size/2, k, seg.Addr, w, tip)
			}
		}
		c.page(t, "Input.dispatchMouseEvent", map[string]any{"type": "mouseMoved", "x": 1, "y": 1})
	}
	b := seg.Blocks[bi]
	hover(b.Offset, b.Size, "segment "+seg.Addr, m.Sites[b.Site])
	h := seg.Holes[hi]
	hover(h.Offset, h.Size, "segment "+seg.Addr, "free hole")
	for _, p := range problems() {
		t.Error(p)
	}
}

// TestChromiumUnits: the page formats sizes and times with report's
// units.js (served as /units.js), which prints what the text output
// prints: every value here, edges of each unit and rounding included,
// equals internal/units' to the character.
func TestChromiumUnits(t *testing.T) {
	srv := newServer(t, "../fixtures/llama-bf16/snapshot.pickle")
	c, base, problems := openBrowser(t, srv)
	c.page(t, "Page.navigate", map[string]any{"url": base})
	c.waitFor(t, "the page's scripts", `typeof memscopeUnits === 'object'`, 60*time.Second)
	sizes := []int64{0, 1, 512, 1023, 1024, 1025, 1535, 1536, 10239, 1<<20 - 1, 1 << 20, 1<<20 + 5242, 37 << 20,
		1<<30 - 1, 1<<30 - 5368709, 12_884_901_888, 5_694_898_176, 1 << 40, 1<<50 + 12345, -1, -1536, -(37 << 20), math.MaxInt64, math.MinInt64 + 1}
	times := []int64{0, 1, 999, 1000, 1004, 1005, 9994, 9995, 99949, 99950, 999499, 999500, 4_560_000, 12_345_678,
		999_499_999, 999_500_000, 3_600_000_000, -850, -1_234_567}
	var got struct{ Bytes, Times []string }
	c.eval(t, fmt.Sprintf(`({bytes: %s.map((n) => memscopeUnits.bytes(BigInt(n))), times: %s.map((n) => memscopeUnits.duration(BigInt(n)))})`,
		jsBigInts(sizes), jsBigInts(times)), &got)
	for i, n := range sizes {
		if want := units.Bytes(n); i >= len(got.Bytes) || got.Bytes[i] != want {
			t.Errorf("memscopeUnits.bytes(%d) = %q, want %q", n, at(got.Bytes, i), want)
		}
	}
	for i, n := range times {
		if want := units.Duration(n); i >= len(got.Times) || got.Times[i] != want {
			t.Errorf("memscopeUnits.duration(%d) = %q, want %q", n, at(got.Times, i), want)
		}
	}
	for _, p := range problems() {
		t.Error(p)
	}
}

// jsBigInts writes ns as a JavaScript array of strings (BigInt takes
// them exactly, past 2^53).
func jsBigInts(ns []int64) string {
	var b strings.Builder
	b.WriteString("[")
	for i, n := range ns {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q", strconv.FormatInt(n, 10))
	}
	b.WriteString("]")
	return b.String()
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(none)"
}

// TestChromiumOOMPage: the OOM page, drawn from oom --json's document,
// says what the post-mortem says: each OOM's event, request, verdict and
// its request's pool's largest free block (units.Bytes, as the text
// prints it), the request's site, and the sites live then; the leaks page
// of a leaking run names the leak's sites.
func TestChromiumOOMPage(t *testing.T) {
	for _, c := range []struct{ path, page, body string }{
		{"../fixtures/oom/snapshot.pickle", "oom", "oom-body"},
		{"../fixtures/leak/snapshot.pickle", "leaks", "lk-body"},
	} {
		srv := newServer(t, c.path)
		b, base, problems := openBrowser(t, srv)
		b.page(t, "Page.navigate", map[string]any{"url": base + "#" + c.page})
		b.waitFor(t, "the "+c.page+" page", `document.body.dataset.page === '`+c.page+`'`, 60*time.Second)
		var text string
		b.eval(t, `document.getElementById('`+c.body+`').innerText`, &text)
		text = strings.Join(strings.Fields(text), " ")
		var want []string
		d := srv.views[0].d
		for _, o := range d.OOMs {
			want = append(want, fmt.Sprintf("OOM %d at event %d: %s requested", o.N, o.Index, units.Bytes(o.Request)),
				units.Bytes(o.Verdict.Largest), strings.Join(strings.Fields(o.SiteLabel), " "))
			if len(o.At.Sites) > 0 {
				want = append(want, strings.Join(strings.Fields(o.At.Sites[0].Label), " "))
			}
		}
		if c.page == "leaks" {
			if !d.Leak.Found || len(d.Leak.Sites) == 0 {
				t.Fatalf("%s: no leak found", c.path)
			}
			want = append(want, "leak: the floor grows "+units.Bytes(d.Leak.GrowthPerStep)+" per step", strings.Join(strings.Fields(d.Leak.Sites[0].Label), " "))
		} else if len(d.OOMs) == 0 {
			t.Fatalf("%s: no OOM", c.path)
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s page of %s does not say %q:\n%s", c.page, c.path, w, text)
			}
		}
		for _, p := range problems() {
			t.Error(p)
		}
	}
}
