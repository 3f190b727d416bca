package serve

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/internal/testenv"
	"github.com/memscope/memscope/snapshot"
)

// The browser test opens the served page in headless Chromium (Debian's
// chromium) driven through the DevTools protocol over a pipe (cdp_test.go):
// locally it skips when chromium is missing, under CI it fails.
//
// MEMSCOPE_SCREENSHOTS=DIR keeps the screenshots (docs/ holds the ones the
// README shows); MEMSCOPE_BIG_TESTS=1 (set under CI) runs it on a generated
// 1 GB snapshot too, and MEMSCOPE_SERVE_BIG=PATH on that file instead
// (go run ./snapshot/internal/gensnap -o /tmp/big1g.pickle -size 1GiB
// -from fixtures/plain-trainer-late/snapshot.pickle), logging the first
// paint and each zoom's latency:
//
//	MEMSCOPE_SCREENSHOTS=$PWD/docs go test ./serve -run Chromium -v

// TestChromium drives the page on a harness capture (llama-bf16, whose
// screenshots docs/ keeps), on a Trainer run recorded late
// (plain-trainer-late) and on a run that ran out of memory (oom).
func TestChromium(t *testing.T) {
	for _, name := range []string{"llama-bf16", "plain-trainer-late", "oom"} {
		t.Run(name, func(t *testing.T) {
			shots := ""
			if name == "llama-bf16" {
				shots = os.Getenv("MEMSCOPE_SCREENSHOTS")
			}
			browse(t, "../fixtures/"+name+"/snapshot.pickle", shots)
		})
	}
}

// TestChromiumBig drives it on a snapshot of about 1 GB, $MEMSCOPE_SERVE_BIG
// or else one generated from plain-trainer-late by the repository's
// generator into a temporary folder, and logs the latencies (they are
// never asserted). The generated file needs 1 GB of disk and about 2 GB of
// memory, so it is made under CI (CI=true) or with MEMSCOPE_BIG_TESTS=1.
func TestChromiumBig(t *testing.T) {
	path := os.Getenv("MEMSCOPE_SERVE_BIG")
	if path == "" {
		if os.Getenv("CI") != "true" && os.Getenv("MEMSCOPE_BIG_TESTS") != "1" {
			t.Skip("serves a 1 GB snapshot: set MEMSCOPE_BIG_TESTS=1 (CI runs it) or MEMSCOPE_SERVE_BIG=PATH")
		}
		path = bigSnapshot(t, "../fixtures/plain-trainer-late/snapshot.pickle", 1<<30)
	}
	start := time.Now()
	analyzed(t, path)
	t.Logf("%s: decoded and analysed in %s", path, time.Since(start).Round(time.Millisecond))
	browse(t, path, "")
}

// bigSnapshot writes, in a temporary folder, a snapshot of at least size
// bytes repeating the traces of the snapshot at from (snapgen.Write, as
// gensnap does), and returns its path.
func bigSnapshot(t *testing.T, from string, size int64) string {
	t.Helper()
	src, err := snapshot.Open(from)
	if err != nil {
		testenv.Need(t, "fixture %s: %v", from, err)
	}
	path := filepath.Join(t.TempDir(), "big.pickle")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	st, err := snapgen.Write(w, src, size)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes < size {
		t.Fatalf("generated %d bytes, want ≥ %d", st.Bytes, size)
	}
	t.Logf("generated %s from %s: %d bytes, %d events", path, from, st.Bytes, st.Events)
	return path
}

// timedHandler records how long each /api/timeline answer took.
type timedHandler struct {
	h    http.Handler
	mu   sync.Mutex
	took []time.Duration
}

func (th *timedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	th.h.ServeHTTP(w, r)
	if r.URL.Path == "/api/timeline" {
		th.mu.Lock()
		th.took = append(th.took, time.Since(start))
		th.mu.Unlock()
	}
}

func (th *timedHandler) last() time.Duration {
	th.mu.Lock()
	defer th.mu.Unlock()
	if len(th.took) == 0 {
		return 0
	}
	return th.took[len(th.took)-1]
}

// browse serves path on 127.0.0.1, opens the page and checks: no request
// leaves localhost, nothing reaches the console; the timeline draws; a
// hover over the largest band with a Python frame shows that
// allocation's stack, as the snapshot records it; a zoom asks the server
// again (its latency logged); the moment view at the peak draws as many
// segments as were reserved then.
func browse(t *testing.T, path, shots string) {
	analyzed(t, path) // decoded and analysed before the clock starts
	th := &timedHandler{}
	c, base, problems := openBrowser(t, th) // the browser is up before the analysis is ready, as a user's is
	start := time.Now()
	srv, err := New([]Source{{Path: path, Analysis: analyzed(t, path)}}, Options{Version: "test"}) // returns at once; the index is built in the background
	if err != nil {
		t.Fatal(err)
	}
	indexed := make(chan time.Duration, 1)
	go func() { srv.Ready(); indexed <- time.Since(start) }()
	th.h = srv
	c.page(t, "Page.navigate", map[string]any{"url": base})
	c.waitFor(t, "the timeline draws", `document.getElementById('tl').dataset.drawn >= 1`, 120*time.Second)
	t.Logf("first paint %s after the analysis, navigating at once (index built in %s; the first /api/timeline, the overview drawn while it was built, took %s on the server)",
		time.Since(start).Round(time.Millisecond), (<-indexed).Round(time.Millisecond), th.last())
	c.waitFor(t, "the bands draw", `memscope.partial === false && document.getElementById('tl').dataset.drawn >= 1`, 120*time.Second)

	v := srv.views[0]
	var g struct {
		Left, Top, Width, Height float64
		Data                     map[string]string
	}
	geometry := func() {
		c.eval(t, `(() => { const c = document.getElementById('tl'), r = c.getBoundingClientRect();
			return {left: r.left, top: r.top, width: r.width, height: r.height, data: Object.assign({}, c.dataset)}; })()`, &g)
	}
	geometry()
	num := func(k string) float64 {
		var f float64
		if _, err := fmt.Sscan(g.Data[k], &f); err != nil {
			t.Fatalf("canvas data-%s = %q", k, g.Data[k])
		}
		return f
	}
	if err := checkPixels(t, c); err != nil {
		t.Fatal(err)
	}
	// Hover over the largest band that has a frame that counts and room
	// for the mouse; the tooltip must show that allocation's stack. When
	// the whole recording has none (steps too short to see one by one),
	// zoom in on the peak through the page's hook first.
	an := v.an
	st := an.Snapshot.Stacks
	tab := an.Filter.For(st)
	var want []string
	var frames int
	var bx, by float64
	var id int64
	found := false
	for attempt := 0; !found; attempt++ {
		if attempt > 0 {
			if attempt > 4 {
				t.Fatal("no band with a Python frame is large enough to hover, even zoomed in on the peak")
			}
			w := v.idx().span() >> (4 * attempt)
			at := v.idx().xOf(max(v.d.Timeline.PeakAllocated.Index, 0))
			from := min(max(at-w/2, 0), v.idx().span()-w)
			c.eval(t, fmt.Sprintf("memscope.zoom(%d, %d)", from, from+w), nil)
			geometry()
		}
		// The answer the page drew, computed again here.
		v.mu.Lock()
		tl := v.idx().timeline(int64(num("from")), int64(num("to")), int(num("px")), defaultBands)
		v.mu.Unlock()
		if int(num("bands")) != len(tl.Bands) || int(num("columns")) != tl.Columns || len(tl.Bands) == 0 {
			t.Fatalf("the page drew %s bands in %s columns; the query gives %d in %d", g.Data["bands"], g.Data["columns"], len(tl.Bands), tl.Columns)
		}
		ymax, pw, ph, cols := num("ymax"), num("plotWidth"), num("plotHeight"), float64(tl.Columns)
		order := make([]int, len(tl.Bands))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(i, j int) bool { return tl.Bands[order[i]].Size > tl.Bands[order[j]].Size })
		for _, i := range order {
			b := tl.Bands[i]
			if float64(b.C1-b.C0+1)*pw/cols < 8 || float64(b.Size)/ymax*ph < 8 {
				continue
			}
			var stack snapshot.StackID
			if b.ID >= 0 {
				stack = v.idx().events[b.ID].Stack
			} else {
				stack = v.d.Timeline.Initial[-b.ID-1].Stack
			}
			var counted []string
			for _, f := range st.Stack(stack) {
				if tab.Counts(f) {
					fr := st.Frame(f)
					counted = append(counted, fmt.Sprintf("%s %s:%d", fr.Name, fr.Filename, fr.Line))
				}
			}
			if len(counted) == 0 {
				continue
			}
			mid := (b.C0 + b.C1) / 2
			var off int64
			for k := 0; k < len(b.Off) && b.Off[k] <= int64(mid); k += 2 {
				off = b.Off[k+1]
			}
			bx = g.Left + num("plotLeft") + (float64(mid)+0.5)*pw/cols
			by = g.Top + num("plotTop") + ph - (float64(off)+float64(b.Size)/2)/ymax*ph
			want, id, frames, found = counted[:min(len(counted), 10)], b.ID, len(st.Stack(stack)), true
			break
		}
	}
	c.page(t, "Input.dispatchMouseEvent", map[string]any{"type": "mouseMoved", "x": bx, "y": by})
	c.waitFor(t, "the tooltip shows the allocation", fmt.Sprintf(`document.getElementById('tip').dataset.id === '%d' && document.getElementById('tip').style.display === 'block'`, id), 30*time.Second)
	var tipText string
	c.eval(t, `document.getElementById('tip').innerText`, &tipText)
	for _, w := range []string{want[0], want[len(want)-1]} {
		if !strings.Contains(tipText, w) {
			t.Errorf("hovering allocation %d: the tooltip does not show its frame %q:\n%s", id, w, tipText)
		}
	}
	// A click pins it: the panel lists every frame, folded ones too.
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		c.page(t, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": bx, "y": by, "button": "left", "clickCount": 1})
	}
	c.waitFor(t, "the click pins the allocation", fmt.Sprintf(`document.getElementById('pin').dataset.id === '%d'`, id), 30*time.Second)
	var pinned int
	c.eval(t, `document.querySelectorAll('#pin .stack > div').length`, &pinned)
	if pinned != frames {
		t.Errorf("the pinned allocation %d lists %d frames, want its stack's %d", id, pinned, frames)
	}
	c.page(t, "Input.dispatchMouseEvent", map[string]any{"type": "mouseMoved", "x": bx + 1, "y": by}) // the tooltip again
	c.waitFor(t, "the tooltip is back", `document.getElementById('tip').style.display === 'block'`, 30*time.Second)
	if shots != "" {
		screenshot(t, c, filepath.Join(shots, "serve-timeline.png"))
	}

	// Zoom in three times at the band, and out once: each asks the server
	// for the new range.
	for k, dy := range []float64{-300, -300, -300, 300} {
		var before int
		c.eval(t, `memscope.requests`, &before)
		c.page(t, "Input.dispatchMouseEvent", map[string]any{"type": "mouseWheel", "x": bx, "y": by, "deltaX": 0, "deltaY": dy})
		c.waitFor(t, "the zoom is drawn", fmt.Sprintf(`memscope.requests > %d && document.getElementById('tl').dataset.drawn > %d`, before, before), 60*time.Second)
		var pageMs float64
		c.eval(t, `memscope.lastMs`, &pageMs)
		geometry()
		t.Logf("zoom %d (deltaY %+.0f): %s – %s of %d: /api/timeline answered in %s on the server, %.1f ms in the page (fetch and parse); %s bands",
			k+1, dy, g.Data["from"], g.Data["to"], v.idx().span(), th.last().Round(10*time.Microsecond), pageMs, g.Data["bands"])
		if k == 0 && num("to")-num("from") >= float64(v.idx().span()) {
			t.Errorf("zooming in left the window at %s – %s, the whole recording", g.Data["from"], g.Data["to"])
		}
	}

	// Drag to pan: the window keeps its width and moves earlier.
	var before0 int
	c.eval(t, `memscope.requests`, &before0)
	from0, to0 := num("from"), num("to")
	for _, ev := range []map[string]any{{"type": "mousePressed", "x": bx, "y": by, "button": "left", "clickCount": 1},
		{"type": "mouseMoved", "x": bx + 100, "y": by, "button": "left"}, {"type": "mouseMoved", "x": bx + 200, "y": by, "button": "left"},
		{"type": "mouseReleased", "x": bx + 200, "y": by, "button": "left", "clickCount": 1}} {
		c.page(t, "Input.dispatchMouseEvent", ev)
	}
	c.waitFor(t, "the pan is drawn", fmt.Sprintf(`memscope.requests > %d && Number(document.getElementById('tl').dataset.from) < %v`, before0, from0), 60*time.Second)
	geometry()
	if w0, w1 := to0-from0, num("to")-num("from"); num("from") > 0 && (w1 < w0-2 || w1 > w0+2) {
		t.Errorf("panning changed the window's width from %v to %v", w0, w1)
	}
	t.Logf("pan: %s – %s: /api/timeline answered in %s on the server", g.Data["from"], g.Data["to"], th.last().Round(10*time.Microsecond))

	// Back to the whole recording: the widest query there is.
	var before int
	c.eval(t, `memscope.requests`, &before)
	c.eval(t, `document.getElementById('reset').click()`, nil)
	c.waitFor(t, "the whole recording is drawn", fmt.Sprintf(`memscope.requests > %d`, before), 60*time.Second)
	var pageMs float64
	c.eval(t, `memscope.lastMs`, &pageMs)
	t.Logf("whole recording again: /api/timeline answered in %s on the server, %.1f ms in the page", th.last().Round(10*time.Microsecond), pageMs)

	// The moment view at the peak.
	c.eval(t, `location.hash = '#moment?at=peak'`, nil)
	took := c.waitFor(t, "the moment view draws", `document.body.dataset.page === 'moment' && document.getElementById('segs').dataset.segments !== undefined`, 60*time.Second)
	var fetchMs, segsMs float64
	c.eval(t, `memscope.momentFetchMs`, &fetchMs)
	c.eval(t, `memscope.segmentsMs`, &segsMs)
	t.Logf("the moment page at the peak drawn %s after it was asked for (%.0f ms of it fetching and parsing /api/moment, %.0f ms drawing the segments)", took.Round(time.Millisecond), fetchMs, segsMs)
	var segs string
	c.eval(t, `document.getElementById('segs').dataset.segments`, &segs)
	peak := v.d.Timeline.PeakAllocated.Index
	if want := segmentsAt(v.d.Timeline, peak); segs != fmt.Sprint(min(want, maxSegments)) {
		t.Errorf("the moment view at the peak draws %s segments; %d were reserved after event %d", segs, want, peak)
	}
	if len(v.idx().events) < 1_000_000 { // a what-if per setting: on demand, and long on a big trace
		c.eval(t, `document.getElementById('m-sim').click()`, nil)
		c.waitFor(t, "the settings are simulated", `document.getElementById('m-sim-out').innerText.includes('recorded reserved peak')`, 60*time.Second)
	}
	if shots != "" {
		screenshot(t, c, filepath.Join(shots, "serve-moment.png"))
	}
	for _, page := range []string{"sites", "steps", "leaks", "oom"} {
		c.eval(t, `location.hash = '#`+page+`'`, nil)
		took := c.waitFor(t, "the "+page+" page", `document.body.dataset.page === '`+page+`'`, 60*time.Second)
		t.Logf("the %s page drawn %s after it was asked for", page, took.Round(time.Millisecond))
	}
	for _, p := range problems() {
		t.Error(p)
	}
}

// openBrowser serves h on 127.0.0.1 and starts Chromium on a blank page
// with the network, console and log watched; problems returns what must
// not happen: a request off localhost, a console error or warning, an
// uncaught exception, an error in the log.
func openBrowser(t *testing.T, h http.Handler) (c *cdp, base string, problems func() []string) {
	bin := testenv.Chromium(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The guard serve puts in front: the page works under its Host check
	// and headers (a refused style or script would be a console error).
	access, err := NewAccess(ln.Addr(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: Guard(h, access)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	base = "http://" + ln.Addr().String() + "/"
	var mu sync.Mutex
	var seen []string
	onEvent := func(m cdpMessage) {
		var p struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
			Type string `json:"type"`
			Args []struct {
				Value       any    `json:"value"`
				Description string `json:"description"`
			} `json:"args"`
			ExceptionDetails struct {
				Text      string `json:"text"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
			Entry struct {
				Level, Text, URL string
			} `json:"entry"`
		}
		json.Unmarshal(m.Params, &p)
		var bad string
		switch m.Method {
		case "Network.requestWillBeSent":
			u, err := url.Parse(p.Request.URL)
			if err != nil || (u.Scheme != "data" && u.Host != ln.Addr().String()) {
				bad = "a request off localhost: " + p.Request.URL
			}
		case "Runtime.consoleAPICalled":
			if p.Type == "error" || p.Type == "warning" || p.Type == "assert" {
				bad = fmt.Sprintf("console.%s: %v", p.Type, p.Args)
			}
		case "Runtime.exceptionThrown":
			bad = "exception: " + p.ExceptionDetails.Text + " " + p.ExceptionDetails.Exception.Description
		case "Log.entryAdded":
			if p.Entry.Level == "error" {
				bad = "log: " + p.Entry.Text + " " + p.Entry.URL
			}
		}
		if bad != "" {
			mu.Lock()
			seen = append(seen, bad)
			mu.Unlock()
		}
	}
	c = startChromium(t, bin, onEvent)
	for _, m := range []string{"Page.enable", "Runtime.enable", "Network.enable", "Log.enable"} {
		c.page(t, m, nil)
	}
	c.page(t, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false})
	return c, base, func() []string {
		time.Sleep(100 * time.Millisecond) // let late events arrive
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// TestChromiumCompare opens the compare page of two fixtures: it draws one
// slot per step and phase of either run, with nothing on the console.
func TestChromiumCompare(t *testing.T) {
	a, b := "../fixtures/llama-bf16/snapshot.pickle", "../fixtures/llama-ckpt/snapshot.pickle"
	srv := newServer(t, a, b)
	c, base, problems := openBrowser(t, srv)
	c.page(t, "Page.navigate", map[string]any{"url": base + "#compare"})
	c.waitFor(t, "the compare page draws", `document.getElementById('cmp').dataset.slots !== undefined`, 60*time.Second)
	var slots string
	c.eval(t, `document.getElementById('cmp').dataset.slots`, &slots)
	if want := len(compareViews(srv.views[0], srv.views[1]).Aligned); slots != fmt.Sprint(want) {
		t.Errorf("the compare page draws %s slots, want %d", slots, want)
	}
	if shots := os.Getenv("MEMSCOPE_SCREENSHOTS"); shots != "" {
		screenshot(t, c, filepath.Join(shots, "serve-compare.png"))
	}
	for _, p := range problems() {
		t.Error(p)
	}
}

// checkPixels fails unless the timeline's canvas holds drawn pixels: more
// than a tenth of the plot not white.
func checkPixels(t *testing.T, c *cdp) error {
	var share float64
	c.eval(t, `(() => { const cv = document.getElementById('tl'), d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
		let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i+3] > 0 && (d[i] < 240 || d[i+1] < 240 || d[i+2] < 240)) n++;
		return n / (d.length / 4); })()`, &share)
	if share < 0.1 {
		return fmt.Errorf("the timeline canvas is %.1f%% drawn, want more than 10%%", 100*share)
	}
	return nil
}

func screenshot(t *testing.T, c *cdp, file string) {
	t.Helper()
	var shot struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(c.page(t, "Page.captureScreenshot", map[string]any{"format": "png"}), &shot); err != nil {
		t.Fatal(err)
	}
	b, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", file)
}
