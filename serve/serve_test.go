package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/testenv"
	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/snapshot"
)

var (
	analysesMu sync.Mutex
	analyses   = map[string]*attribution.Analysis{}
)

// analyzed decodes and analyses a fixture's snapshot once per test binary,
// as the serve command does.
func analyzed(t testing.TB, path string) *attribution.Analysis {
	t.Helper()
	analysesMu.Lock()
	defer analysesMu.Unlock()
	if an := analyses[path]; an != nil {
		return an
	}
	s, err := snapshot.Open(path)
	if err != nil {
		testenv.Need(t, "fixture %s: %v", path, err)
	}
	an := attribution.Analyze(s, attribution.Options{Device: -1, AllocSizes: true, SeriesPoints: OverviewPoints})
	analyses[path] = an
	return an
}

func newServer(t testing.TB, paths ...string) *Server {
	t.Helper()
	var srcs []Source
	for _, p := range paths {
		srcs = append(srcs, Source{Path: p, Analysis: analyzed(t, p)})
	}
	s, err := New(srcs, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s.Ready() // the answers of a built index (TestOverview and the browser test see the overview)
	return s
}

// get asks the server for url and decodes the JSON answer into v.
func get(t testing.TB, h http.Handler, url string, v any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
	if v != nil && rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("GET %s: %v\n%s", url, err, rec.Body.String())
		}
	}
	if rec.Code != http.StatusOK && v != nil {
		t.Fatalf("GET %s = %d: %s", url, rec.Code, rec.Body.String())
	}
	return rec.Code
}

// fixtureSnapshots lists every fixture snapshot (each rank's, each
// point's).
func fixtureSnapshots(t *testing.T) []string {
	var out []string
	filepath.WalkDir("../fixtures", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "snapshot") && strings.HasSuffix(d.Name(), ".pickle") {
			out = append(out, p)
		}
		return nil
	})
	if len(out) < 20 {
		testenv.Need(t, "only %d fixture snapshots under ../fixtures", len(out))
	}
	return out
}

// TestIndexAllocated: the index's allocated bytes after every event are
// the replay's: at the peak (the event and the bytes torch's
// max_memory_allocated names), at the end, and at events across the
// trace, computed by snapshot.Timeline.StateAt, which replays on its own.
func TestIndexAllocated(t *testing.T) {
	for _, path := range fixtureSnapshots(t) {
		an := analyzed(t, path)
		for _, d := range an.Devices {
			x := newIndex(d, an.Snapshot.Stacks, newAxis(d.Timeline))
			if err := x.checkValid(); err != nil {
				t.Errorf("%s device %d: %v", path, d.Device, err)
			}
			tl := d.Timeline
			n := len(tl.Events)
			if got := x.allocatedAt(-1); got != tl.Start.Allocated {
				t.Errorf("%s device %d: allocated before the first event = %d, want %d", path, d.Device, got, tl.Start.Allocated)
			}
			if n == 0 {
				continue
			}
			if got, want := x.allocatedAt(tl.PeakAllocated.Index), tl.PeakAllocated.Bytes; got != want {
				t.Errorf("%s device %d: allocated at the peak (event %d) = %d, want %d", path, d.Device, tl.PeakAllocated.Index, got, want)
			}
			if got := x.allocatedAt(n - 1); got != tl.End.Allocated {
				t.Errorf("%s device %d: allocated at the end = %d, want %d", path, d.Device, got, tl.End.Allocated)
			}
			for k := 0; k < 5; k++ {
				i := k * (n - 1) / 4
				if got, want := x.allocatedAt(i), tl.StateAt(i).Allocated; got != want {
					t.Errorf("%s device %d: allocated after event %d = %d, want %d", path, d.Device, i, got, want)
				}
			}
		}
	}
}

// TestTimelineStacks: in every window asked for, each column's bands and
// rest add up to allocated bytes at its sample, the sample is the
// column's highest event, the bands are the largest allocations live at
// a sample (checked by brute force over every allocation), and the
// answer stays within its bounds.
func TestTimelineStacks(t *testing.T) {
	for _, name := range []string{"llama-bf16", "plain-trainer-late", "oom", "leak", "expandable", "plain-inference"} {
		path := "../fixtures/" + name + "/snapshot.pickle"
		an := analyzed(t, path)
		d := an.Devices[0]
		x := newIndex(d, an.Snapshot.Stacks, newAxis(d.Timeline))
		span := x.span()
		for _, w := range []struct {
			from, to  int64
			px, bands int
		}{{0, span, 800, 300}, {0, span, 37, 5}, {span / 3, span / 2, 400, 50}, {span / 2, span/2 + 3, 100, 10}, {0, span, 1, 0}} {
			t.Run(fmt.Sprintf("%s/%d-%d/%dpx/%dbands", name, w.from, w.to, w.px, w.bands), func(t *testing.T) {
				tl := x.timeline(w.from, w.to, w.px, w.bands)
				if len(tl.Bands) > w.bands || tl.Columns > w.px || len(tl.Rest) > restSites+1 {
					t.Fatalf("%d bands, %d columns, %d rest rows: over the bounds %d, %d, %d", len(tl.Bands), tl.Columns, len(tl.Rest), w.bands, w.px, restSites+1)
				}
				for c := 0; c < tl.Columns; c++ {
					sum := tl.BandsAt[c]
					for _, r := range tl.Rest {
						sum += r.Bytes[c]
						if r.Bytes[c] < 0 {
							t.Fatalf("column %d: rest of site %d is %d bytes", c, r.Site, r.Bytes[c])
						}
					}
					if want := d.Timeline.StateAt(tl.Sample[c]).Allocated; sum != want || tl.At[c] != want {
						t.Fatalf("column %d (event %d): bands %d + rest = %d, at %d; want allocated %d", c, tl.Sample[c], tl.BandsAt[c], sum, tl.At[c], want)
					}
					if tl.Max[c] != tl.At[c] || tl.Min[c] > tl.Max[c] {
						t.Fatalf("column %d: min %d max %d at %d", c, tl.Min[c], tl.Max[c], tl.At[c])
					}
				}
				// Brute force: each top site's rest is its allocations live at
				// the sample that are not bands.
				band := map[int64]bool{}
				for _, b := range tl.Bands {
					band[b.ID] = true
				}
				for _, c := range []int{0, tl.Columns / 3, tl.Columns - 1} {
					s := tl.Sample[c]
					want := map[string]int64{}
					for r := range x.recs {
						if rc := &x.recs[r]; int(rc.start) <= s && s < int(rc.end) && !band[x.id(r)] {
							want[x.siteLabels[rc.site]] += rc.size
						}
					}
					for _, rr := range tl.Rest {
						if rr.Site >= 0 && rr.Bytes[c] != want[tl.Sites[rr.Site]] {
							t.Errorf("column %d (event %d): rest of %s = %d, want %d", c, s, tl.Sites[rr.Site], rr.Bytes[c], want[tl.Sites[rr.Site]])
						}
					}
				}
				// Brute force: every allocation live at some sample.
				live := func(start, end int) bool {
					for _, s := range tl.Sample {
						if start <= s && s < end {
							return true
						}
					}
					return false
				}
				var sizes []int64
				for r := range x.recs {
					if live(int(x.recs[r].start), int(x.recs[r].end)) {
						sizes = append(sizes, x.recs[r].size)
					}
				}
				if tl.Candidates != len(sizes) {
					t.Errorf("candidates = %d, want %d", tl.Candidates, len(sizes))
				}
				inBand := map[int64]bool{}
				minBand := int64(1 << 62)
				for _, b := range tl.Bands {
					inBand[b.ID] = true
					minBand = min(minBand, b.Size)
					if !live(b.Start, b.End) || b.C0 > b.C1 || len(b.Off) == 0 || b.Off[0] != int64(b.C0) {
						t.Errorf("band %d: start %d end %d columns %d–%d off %v", b.ID, b.Start, b.End, b.C0, b.C1, b.Off)
					}
				}
				if len(tl.Bands) != min(w.bands, len(sizes)) {
					t.Errorf("%d bands, want %d (of %d candidates)", len(tl.Bands), min(w.bands, len(sizes)), len(sizes))
				}
				for r := range x.recs {
					if !inBand[x.id(r)] && live(int(x.recs[r].start), int(x.recs[r].end)) && x.recs[r].size > minBand {
						t.Errorf("allocation %d (%d bytes) is live at a sample and larger than the smallest band (%d bytes), but is not a band", x.id(r), x.recs[r].size, minBand)
						break
					}
				}
			})
		}
	}
}

// TestAPI: the endpoints answer from the snapshot: the allocation's stack
// is its event's, the moment's segments are the reserved ranges at the
// peak, the summary's numbers the replay's.
func TestAPI(t *testing.T) {
	path := "../fixtures/llama-bf16/snapshot.pickle"
	srv := newServer(t, path)
	an := analyzed(t, path)
	d := an.Devices[0]
	st := an.Snapshot.Stacks

	var sum Summary
	get(t, srv, "/api/summary", &sum)
	if sum.Summary.AtPeak.Allocated != d.Timeline.PeakAllocated.Bytes || sum.Summary.Peaks["reserved"].Bytes != d.Timeline.PeakReserved.Bytes ||
		sum.View.Peaks.Reserved.Bytes != d.Timeline.PeakReserved.Bytes || sum.View.Events != len(d.Timeline.Events) || sum.Summary.Events != len(d.Timeline.Events) {
		t.Errorf("summary: at peak %d, reserved peak %d (on the axis %d), %d events (on the axis %d); want %d, %d, %d", sum.Summary.AtPeak.Allocated,
			sum.Summary.Peaks["reserved"].Bytes, sum.View.Peaks.Reserved.Bytes, sum.Summary.Events, sum.View.Events,
			d.Timeline.PeakAllocated.Bytes, d.Timeline.PeakReserved.Bytes, len(d.Timeline.Events))
	}
	if len(sum.View.Phases) != len(d.Phases.List) {
		t.Errorf("summary: %d phases, want %d", len(sum.View.Phases), len(d.Phases.List))
	}
	// The summary is the document `summary --json` writes for the device.
	var b bytes.Buffer
	if err := report.Write(&b, report.JSON, &report.Summary{Sum: attribution.Summarize(an, 10)}); err != nil {
		t.Fatal(err)
	}
	var doc report.SummaryDoc
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(doc.Files[0].Devices[0], sum.Summary) {
		t.Errorf("/api/summary's summary differs from summary --json's device:\n%+v\n%+v", sum.Summary, doc.Files[0].Devices[0])
	}

	var tl Timeline
	get(t, srv, "/api/timeline?px=500", &tl)
	if len(tl.Bands) == 0 {
		t.Fatal("the timeline has no bands")
	}
	for _, b := range tl.Bands[:min(len(tl.Bands), 20)] {
		var a Alloc
		get(t, srv, fmt.Sprintf("/api/alloc?id=%d", b.ID), &a)
		var want snapshot.StackID
		var size int64
		if b.ID >= 0 {
			ev := d.Timeline.Events[b.ID]
			want, size = ev.Stack, d.AllocSizes()[b.ID]
			if ev.Action != snapshot.ActionAlloc || a.Requested != ev.Size {
				t.Errorf("alloc %d: event %s, requested %d; want an alloc of %d", b.ID, ev.Action, a.Requested, ev.Size)
			}
		} else {
			ib := d.Timeline.Initial[-b.ID-1]
			want, size = ib.Stack, ib.Size
		}
		frames := st.Stack(want)
		if a.Size != size || len(a.Stack) != len(frames) {
			t.Fatalf("alloc %d: size %d, %d frames; want %d, %d", b.ID, a.Size, len(a.Stack), size, len(frames))
		}
		for i, f := range frames {
			fr := st.Frame(f)
			if a.Stack[i].Filename != fr.Filename || a.Stack[i].Line != fr.Line || a.Stack[i].Name != fr.Name {
				t.Errorf("alloc %d frame %d = %+v, want %s:%d %s", b.ID, i, a.Stack[i], fr.Filename, fr.Line, fr.Name)
			}
		}
		if b.End < len(d.Timeline.Events) && a.End != b.End {
			t.Errorf("alloc %d ends at %d, the band at %d", b.ID, a.End, b.End)
		}
	}

	var m Moment
	get(t, srv, "/api/moment?at=peak", &m)
	if want := segmentsAt(d.Timeline, d.Timeline.PeakAllocated.Index); m.SegmentsTotal != want || len(m.Segments) != want {
		t.Errorf("moment at the peak: %d segments (%d drawn), want %d", m.SegmentsTotal, len(m.Segments), want)
	}
	var total, free int64
	for _, s := range m.Segments {
		total += s.Size
		free += s.Free
	}
	if total != m.Moment.Numbers.Reserved || m.Moment.Numbers.Allocated != d.Timeline.PeakAllocated.Bytes || free != m.Frag.Free {
		t.Errorf("moment at the peak: segments sum to %d (free %d), allocated %d; want reserved %d (free %d), allocated %d",
			total, free, m.Moment.Numbers.Allocated, m.Moment.Numbers.Reserved, m.Frag.Free, d.Timeline.PeakAllocated.Bytes)
	}
	var end Moment
	get(t, srv, fmt.Sprintf("/api/moment?at=%d", len(d.Timeline.Events)-1), &end)
	if end.Moment.Numbers.Reserved != d.Timeline.End.Reserved {
		t.Errorf("moment at the last event: reserved %d, want %d", end.Moment.Numbers.Reserved, d.Timeline.End.Reserved)
	}

	var sites SitesAnswer
	get(t, srv, "/api/sites?at=peak&q=modeling_llama", &sites)
	if sites.Match == 0 || sites.Match > sites.Total || len(sites.Sites) != sites.Match {
		t.Errorf("sites matching modeling_llama: %d of %d, %d listed", sites.Match, sites.Total, len(sites.Sites))
	}
	for _, s := range sites.Sites {
		if !strings.Contains(s.Label, "modeling_llama") {
			t.Errorf("site %q listed for q=modeling_llama", s.Label)
		}
	}
	var steps Steps
	get(t, srv, "/api/steps", &steps)
	if steps.Total != len(d.Phases.Steps) || steps.PeakPhase == nil || steps.PeakPhase.PeakAt != d.Phases.List[d.Phases.PeakPhase].PeakIndex {
		t.Errorf("steps: %d, peak phase %+v; want %d steps", steps.Total, steps.PeakPhase, len(d.Phases.Steps))
	}
	get(t, srv, "/api/leaks", &Leaks{})
	var ooms []OOM
	get(t, srv, "/api/oom", &ooms)
	if len(ooms) != len(d.OOMs) {
		t.Errorf("%d OOMs, want %d", len(ooms), len(d.OOMs))
	}
}

// segmentsAt counts the reserved segments after event i, adjacent mapped
// ranges of an expandable segment as one.
func segmentsAt(t *snapshot.Timeline, i int) int {
	_, _, ranges := t.At(i)
	n := 0
	for k, r := range ranges {
		if k > 0 && r.Expandable && ranges[k-1].Expandable && ranges[k-1].End == r.Addr {
			continue
		}
		n++
	}
	return n
}

// TestBadQueries: every malformed query is a 400 with a message, never a
// panic or a 500.
func TestBadQueries(t *testing.T) {
	path := "../fixtures/llama-bf16/snapshot.pickle"
	srv := newServer(t, path)
	notAlloc := -1
	for i, ev := range analyzed(t, path).Devices[0].Timeline.Events {
		if ev.Action != snapshot.ActionAlloc {
			notAlloc = i
			break
		}
	}
	for _, url := range []string{
		"/api/summary?v=1", "/api/summary?v=-1", "/api/summary?v=x",
		"/api/timeline?px=0", "/api/timeline?px=100000", "/api/timeline?px=abc", "/api/timeline?from=10&to=5",
		"/api/timeline?from=1e400", "/api/timeline?from=NaN", "/api/timeline?bands=-1", "/api/timeline?to=-5",
		"/api/alloc", fmt.Sprintf("/api/alloc?id=%d", notAlloc), "/api/alloc?id=99999999", "/api/alloc?id=-99999999", "/api/alloc?id=1.5",
		"/api/moment?at=bogus", "/api/moment?at=oom:3", "/api/moment?at=999999", "/api/moment?at=event:-7", "/api/moment?at=step:99:forward",
		"/api/sites?at=oom2",
	} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
		var e apiError
		if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == "" {
			t.Errorf("GET %s = %d %s, want 400 with a message", url, rec.Code, rec.Body.String())
		}
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/api/nothing", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET /api/nothing = %d, want 404", rec.Code)
	}
}

// TestEveryFixture: every endpoint answers on every fixture snapshot, for
// every device.
func TestEveryFixture(t *testing.T) {
	for _, path := range fixtureSnapshots(t) {
		srv := newServer(t, path)
		for v := 0; v < srv.Views(); v++ {
			for _, api := range []string{"summary", "timeline?px=300", "moment?at=peak", "moment?at=end", "sites?at=end&q=a", "steps", "leaks", "oom"} {
				sep := "?"
				if strings.Contains(api, "?") {
					sep = "&"
				}
				url := fmt.Sprintf("/api/%s%sv=%d", api, sep, v)
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
				if rec.Code != http.StatusOK || !json.Valid(rec.Body.Bytes()) {
					t.Errorf("%s: GET %s = %d %.300s", path, url, rec.Code, rec.Body.String())
				}
			}
		}
	}
}

// TestPageOffline: the page and its assets come from the binary, name no
// other host, and stay small.
func TestPageOffline(t *testing.T) {
	srv := newServer(t, "../fixtures/llama-bf16/snapshot.pickle")
	total := 0
	for _, p := range []string{"/", "/app.js", "/style.css"} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != http.StatusOK || len(body) == 0 {
			t.Fatalf("GET %s = %d, %d bytes", p, rec.Code, len(body))
		}
		if s := string(body); strings.Contains(s, "http://") || strings.Contains(s, "https://") || strings.Contains(s, "//cdn") {
			t.Errorf("%s names another host", p)
		}
		total += len(body)
	}
	if total > 64<<10 {
		t.Errorf("the page is %d bytes, want under 64 KiB", total)
	}
}

// TestCompare: the compare answer is attribution's diff of the two
// devices, and each run's phases land in their (step, phase) slots.
func TestCompare(t *testing.T) {
	a, b := "../fixtures/llama-bf16/snapshot.pickle", "../fixtures/llama-ckpt/snapshot.pickle"
	srv := newServer(t, a, b)
	var c Compare
	get(t, srv, "/api/compare?a=0&b=1", &c)
	da, db := analyzed(t, a).Devices[0], analyzed(t, b).Devices[0]
	dd := attribution.Compare(analyzed(t, a), analyzed(t, b)).Devices[0]
	if c.Diff.PeakA.Allocated != da.Timeline.PeakAllocated.Bytes || c.Diff.PeakB.Allocated != db.Timeline.PeakAllocated.Bytes {
		t.Errorf("peaks %d, %d; want %d, %d", c.Diff.PeakA.Allocated, c.Diff.PeakB.Allocated, da.Timeline.PeakAllocated.Bytes, db.Timeline.PeakAllocated.Bytes)
	}
	if len(c.Diff.Sites) != min(len(dd.Sites), maxCompareRows) || (len(c.Diff.Sites) > 0 && c.Diff.Sites[0] != dd.Sites[0]) {
		t.Errorf("%d site rows, first %+v; want %d, %+v", len(c.Diff.Sites), c.Diff.Sites[0], len(dd.Sites), dd.Sites[0])
	}
	// The diff is the device pair `diff --json` writes, its lists cut.
	want := report.DeviceDiffJSONOf(&dd)
	want.Sites, want.Categories, want.Phases = want.Sites[:len(c.Diff.Sites)], want.Categories[:len(c.Diff.Categories)], want.Phases[:len(c.Diff.Phases)]
	if !reflect.DeepEqual(c.Diff, want) {
		t.Errorf("/api/compare's diff differs from diff --json's:\n%+v\n%+v", c.Diff, want)
	}
	slot := map[[2]any]Slot{}
	for _, s := range c.Aligned {
		slot[[2]any{s.Step, s.Phase}] = s
	}
	for _, run := range []struct {
		d   *attribution.Device
		get func(Slot) *PhaseBytes
	}{{da, func(s Slot) *PhaseBytes { return s.A }}, {db, func(s Slot) *PhaseBytes { return s.B }}} {
		for _, ph := range run.d.Phases.List {
			p := run.get(slot[[2]any{ph.Step, ph.Name}])
			if p == nil || p.Peak != ph.Peak.Allocated {
				t.Errorf("step %d %s: slot %+v, want peak %d", ph.Step, ph.Name, p, ph.Peak.Allocated)
			}
		}
	}
	for _, url := range []string{"/api/compare?a=2", "/api/compare?b=x"} {
		if code := get(t, srv, url, nil); code != http.StatusBadRequest {
			t.Errorf("GET %s = %d, want 400", url, code)
		}
	}
	if code := get(t, newServer(t, a), "/api/compare", nil); code != http.StatusBadRequest {
		t.Errorf("compare with one view = %d, want 400", code)
	}
}

// TestCompareFix: serve's Compare pairs sites by the frame that allocated,
// as diff does: the chunked-loss run calls the model from another line of
// the script (train.py:115, not :113), and its forward frames are still one
// row each, both callers named, with no row naming a caller.
func TestCompareFix(t *testing.T) {
	a, b := "../fixtures/advise/train-none/snapshot.pickle", "../fixtures/advise/train-chunked-loss/snapshot.pickle"
	var c Compare
	get(t, newServer(t, a, b), "/api/compare?a=0&b=1", &c)
	const script = "<repo>/capture/advise/train.py:"
	var paired int
	for _, r := range c.Diff.Sites {
		if strings.Contains(r.Name, "called from") {
			t.Errorf("site row %q names its caller", r.Name)
		}
		if r.CallerA == script+"113 main" && r.CallerB == script+"115 main" && r.A > 0 && r.B > 0 {
			paired++
		}
	}
	if paired < 4 {
		t.Errorf("%d site rows pair the forward's frames called from train.py:113 in A and :115 in B, want at least 4: %+v", paired, c.Diff.Sites)
	}
}

// TestSettings: /api/settings on the variable-length what-if workload
// says expandable segments lower the reserved peak to what torch reserved
// when the same run was made with them (within the 1% the model's
// reserved peaks are held to elsewhere), and the recorded peak is torch's.
func TestSettings(t *testing.T) {
	rec, err := truth.Read("../fixtures/whatif-varlen/default/truth.json")
	if err != nil {
		testenv.Need(t, "%v", err)
	}
	exp, err := truth.Read("../fixtures/whatif-varlen/expandable/truth.json")
	if err != nil {
		testenv.Need(t, "%v", err)
	}
	srv := newServer(t, "../fixtures/whatif-varlen/default/snapshot.pickle")
	var s Settings
	get(t, srv, "/api/settings", &s)
	if want := rec.MemoryStatsEnd["reserved_bytes.all.peak"]; s.RecordedPeak != want {
		t.Errorf("recorded reserved peak %d, want torch's %d", s.RecordedPeak, want)
	}
	want := exp.MemoryStatsEnd["reserved_bytes.all.peak"]
	found := false
	for _, r := range s.Lower {
		if r.Conf == "expandable_segments:True" {
			found = true
			if d := r.PeakReserved - want; d < -want/100 || d > want/100 {
				t.Errorf("expandable_segments:True: reserved peak %d, torch's run with it %d", r.PeakReserved, want)
			}
		}
	}
	if !found {
		t.Errorf("no expandable_segments:True row in %+v", s.Lower)
	}
}

// TestConcurrentQueries: queries on one view and on two views of the same
// snapshot's devices at once answer as they do one at a time (run with
// -race to check that nothing the devices fill lazily is shared
// unguarded).
func TestConcurrentQueries(t *testing.T) {
	srv := newServer(t, "../fixtures/capture-ddp/snapshot.rank0.pickle", "../fixtures/capture-ddp/snapshot.rank1.pickle")
	urls := []string{"/api/timeline?px=300", "/api/moment?at=peak", "/api/moment?at=end", "/api/sites?q=a", "/api/steps", "/api/compare"}
	want := map[string]string{}
	for v := 0; v < srv.Views(); v++ {
		for _, u := range urls {
			u := fmt.Sprintf("%s&v=%d", strings.Replace(u, "?", "?x=1&", 1), v)
			if !strings.Contains(u, "?") {
				u = strings.Replace(u, "&v=", "?v=", 1)
			}
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest("GET", u, nil))
			want[u] = rec.Body.String()
		}
	}
	var wg sync.WaitGroup
	for k := 0; k < 4; k++ {
		for u, body := range want {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, httptest.NewRequest("GET", u, nil))
				if rec.Body.String() != body {
					t.Errorf("GET %s at once with others differs from alone", u)
				}
			}()
		}
	}
	wg.Wait()
}

// FuzzQuery: no query of the timeline, alloc or moment endpoints panics
// or fails: each is answered (valid JSON) or refused with a 400.
func FuzzQuery(f *testing.F) {
	srv := newServer(f, "../fixtures/llama-bf16/snapshot.pickle")
	span := srv.views[0].idx().span()
	f.Add(int64(0), span, int64(800), int64(300), "peak", int64(1))
	f.Add(span/2, span/2+1, int64(1), int64(0), "oom1", int64(-1))
	f.Add(int64(-5), int64(1)<<60, int64(4000), int64(400), "event:3", int64(3075))
	f.Add(span, span, int64(7), int64(9), "1.5ms", int64(-999))
	f.Fuzz(func(t *testing.T, from, to, px, bands int64, at string, id int64) {
		for _, u := range []string{
			fmt.Sprintf("/api/timeline?from=%d&to=%d&px=%d&bands=%d", from, to, px, bands),
			fmt.Sprintf("/api/alloc?id=%d", id),
			"/api/moment?at=" + url.QueryEscape(at),
			"/api/sites?q=" + url.QueryEscape(at),
		} {
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest("GET", u, nil))
			if (rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest) || !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("GET %s = %d %.300s", u, rec.Code, rec.Body.String())
			}
		}
	})
}

// TestUntimed: a trace with no time_us (torch before 2.2) is drawn in
// event order: the axis is events, the span the last event, and the
// columns still add up to allocated bytes after their events.
func TestUntimed(t *testing.T) {
	s, err := snapshot.Open("../fixtures/llama-bf16/snapshot.pickle")
	if err != nil {
		testenv.Need(t, "%v", err)
	}
	for d := range s.Traces {
		for i := range s.Traces[d] {
			s.Traces[d][i].TimeUS = 0
		}
	}
	an := attribution.Analyze(s, attribution.Options{Device: -1, AllocSizes: true})
	srv, err := New([]Source{{Path: "untimed", Analysis: an}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := an.Devices[0]
	n := len(d.Timeline.Events)
	var tl Timeline
	get(t, srv, "/api/timeline?px=500", &tl)
	if tl.Axis != "event" || tl.Span != int64(n-1) || tl.Columns != 500 || tl.X[tl.Columns] != int64(n) {
		t.Fatalf("untimed: axis %q, span %d, %d columns ending at %d; want event, %d, 500, %d", tl.Axis, tl.Span, tl.Columns, tl.X[tl.Columns], n-1, n)
	}
	for c := 0; c < tl.Columns; c++ {
		sum := tl.BandsAt[c]
		for _, r := range tl.Rest {
			sum += r.Bytes[c]
		}
		if want := d.Timeline.StateAt(tl.Sample[c]).Allocated; sum != want {
			t.Fatalf("column %d (event %d): %d bytes drawn, want %d", c, tl.Sample[c], sum, want)
		}
	}
	var few Timeline
	get(t, srv, "/api/timeline?from=100&to=109&px=500", &few)
	if few.Columns != 10 || few.Events != 10 || few.Sample[0] != 100 || few.Sample[9] != 109 {
		t.Errorf("events 100–109 at 500 px: %d columns, %d events, samples %v; want one column per event", few.Columns, few.Events, few.Sample)
	}
	var sum Summary
	get(t, srv, "/api/summary", &sum)
	if sum.Summary.TimesRecorded || sum.View.Axis != "event" || sum.View.Peaks.Allocated.X != int64(d.Timeline.PeakAllocated.Index) {
		t.Errorf("untimed summary: timed %v, axis %q, peak at %d; want false, event, %d", sum.Summary.TimesRecorded, sum.View.Axis, sum.View.Peaks.Allocated.X, d.Timeline.PeakAllocated.Index)
	}
}

// TestNothingToServe: an analysis with no device (--device of another
// one) is an error, not an empty page.
func TestNothingToServe(t *testing.T) {
	s, err := snapshot.Open("../fixtures/llama-bf16/snapshot.pickle")
	if err != nil {
		testenv.Need(t, "%v", err)
	}
	an := attribution.Analyze(s, attribution.Options{Device: 5})
	if _, err := New([]Source{{Path: "llama-bf16", Analysis: an}}, Options{}); err == nil || !strings.Contains(err.Error(), "no device") {
		t.Errorf("New of an analysis with no device: %v, want an error saying so", err)
	}
}

// TestOverview: the timeline drawn before the index is built (from the
// states the analysis sampled) reaches the device's allocated peak, and
// each column holding a sampled state lies within the index's own least
// and most for the same column, since the samples are some of the
// column's states.
func TestOverview(t *testing.T) {
	for _, path := range []string{"../fixtures/llama-bf16/snapshot.pickle", "../fixtures/plain-trainer-late/snapshot.pickle", "../fixtures/oom/snapshot.pickle"} {
		an := analyzed(t, path)
		d := an.Primary()
		ax := newAxis(d.Timeline)
		x := newIndex(d, an.Snapshot.Stacks, ax)
		pts := d.Overview()
		if len(pts) == 0 {
			t.Fatalf("%s: no overview sampled", path)
		}
		for _, px := range []int{50, 800} {
			ov := overview(d, &ax, pts, 0, ax.span(), px)
			full := x.timeline(0, ax.span(), px, defaultBands)
			if !ov.Partial || ov.Columns != full.Columns || len(ov.Max) != ov.Columns {
				t.Fatalf("%s px %d: overview of %d columns (partial %v), index %d", path, px, ov.Columns, ov.Partial, full.Columns)
			}
			sampled := map[int]bool{}
			for _, p := range pts {
				if p.Index >= 0 {
					x := ax.xOf(p.Index)
					sampled[min(max(sort.Search(len(ov.X), func(k int) bool { return ov.X[k] > x })-1, 0), ov.Columns-1)] = true
				}
			}
			var top int64
			bad := 0
			for c := range ov.Max {
				top = max(top, ov.Max[c])
				if sampled[c] && (ov.Max[c] > full.Max[c] || ov.Min[c] < full.Min[c]) {
					if bad++; bad <= 3 {
						t.Errorf("%s px %d column %d: overview %d–%d outside the index's %d–%d", path, px, c, ov.Min[c], ov.Max[c], full.Min[c], full.Max[c])
					}
				}
			}
			if want := d.Timeline.PeakAllocated.Bytes; top != want {
				t.Errorf("%s px %d: overview's highest %d, want the allocated peak %d", path, px, top, want)
			}
		}
	}
}

// TestAPIDocs: docs/serve-api.md lists exactly the endpoints the server
// answers, and each answers a fixture's view with 200.
func TestAPIDocs(t *testing.T) {
	b, err := os.ReadFile("../docs/serve-api.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("\\| `/api/([a-z]+)` \\|").FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = true
	}
	srv := newServer(t, "../fixtures/oom/snapshot.pickle", "../fixtures/mlp-adamw/snapshot.pickle")
	var tl Timeline
	if code := get(t, srv, "/api/timeline", &tl); code != http.StatusOK || len(tl.Bands) == 0 {
		t.Fatalf("/api/timeline: status %d, %d bands", code, len(tl.Bands))
	}
	for name := range documented {
		url := "/api/" + name
		if name == "alloc" {
			url += fmt.Sprintf("?id=%d", tl.Bands[0].ID)
		}
		var out any
		if code := get(t, srv, url, &out); code != http.StatusOK {
			t.Errorf("%s: status %d", url, code)
		}
	}
	for _, name := range []string{"summary", "timeline", "alloc", "moment", "sites", "steps", "leaks", "oom", "settings", "compare", "views"} {
		if !documented[name] {
			t.Errorf("docs/serve-api.md does not list /api/%s", name)
		}
	}
}

// TestMomentPrivatePools: /api/moment's frag holds each private pool's
// totals: at the end, torch's memory_snapshot() per pool (truth.json's
// private_pools: reserved, allocated, segments, to the byte); at every
// moment asked, the same totals as the moment's own segments of that pool
// add up to; and a run with no CUDA graph has none.
func TestMomentPrivatePools(t *testing.T) {
	for _, name := range []string{"workloads/reduce-overhead", "workloads/cuda-graph", "mlp-adamw"} {
		t.Run(name, func(t *testing.T) {
			tr, err := truth.Read("../fixtures/" + name + "/truth.json")
			if err != nil {
				t.Fatal(err)
			}
			path := "../fixtures/" + name + "/snapshot.pickle"
			srv := newServer(t, path)
			middle := strconv.Itoa(len(analyzed(t, path).Devices[0].Timeline.Events) / 2)
			for _, at := range []string{"end", "peak", middle} {
				var m Moment
				get(t, srv, "/api/moment?at="+url.QueryEscape(at), &m)
				if m.SegmentsTotal > len(m.Segments) {
					t.Fatalf("at %s: %d of %d segments shown; the test needs them all", at, len(m.Segments), m.SegmentsTotal)
				}
				type sum struct {
					reserved, allocated int64
					segments            int
				}
				bySegments := map[[2]int64]sum{}
				for _, s := range m.Segments {
					if s.PoolID != [2]int64{} {
						x := bySegments[s.PoolID]
						x.reserved += s.Size
						x.allocated += s.Allocated
						x.segments++
						bySegments[s.PoolID] = x
					}
				}
				if len(m.Frag.PrivatePools) != len(bySegments) {
					t.Errorf("at %s: %d private pools, the segments name %d", at, len(m.Frag.PrivatePools), len(bySegments))
				}
				for _, p := range m.Frag.PrivatePools {
					if got, want := (sum{p.Reserved, p.Allocated, p.Segments}), bySegments[p.Pool]; got != want {
						t.Errorf("at %s pool %v: %+v, its segments add up to %+v", at, p.Pool, got, want)
					}
					if p.Free != p.Reserved-p.Allocated {
						t.Errorf("at %s pool %v: free %d, want reserved − allocated %d", at, p.Pool, p.Free, p.Reserved-p.Allocated)
					}
				}
				if at != "end" {
					continue
				}
				if len(m.Frag.PrivatePools) != len(tr.PrivatePools) {
					t.Errorf("at the end: %d private pools, torch held %d", len(m.Frag.PrivatePools), len(tr.PrivatePools))
				}
				for _, p := range m.Frag.PrivatePools {
					w, ok := tr.PrivatePools[fmt.Sprintf("(%d, %d)", p.Pool[0], p.Pool[1])]
					if !ok || p.Reserved != w.Reserved || p.Allocated != w.Allocated || p.Segments != w.Segments {
						t.Errorf("at the end pool %v: %d reserved, %d allocated in %d segments; torch: %+v (held: %v)",
							p.Pool, p.Reserved, p.Allocated, p.Segments, w, ok)
					}
				}
			}
		})
	}
}

// TestStepsPaged: /api/steps answers one page at a time; the pages, read
// in turn, are every step of the analysis in order with its floors, peak
// and phases, and peak_offset names the page holding the peak's phase. A
// generated recording of many steps (llama-bf16's repeated).
func TestStepsPaged(t *testing.T) {
	path := bigSnapshot(t, "../fixtures/llama-bf16/snapshot.pickle", 10<<20)
	srv := newServer(t, path)
	d := analyzed(t, path).Devices[0]
	all := d.Phases.Steps
	if len(all) <= defaultStepsPage {
		t.Fatalf("the generated recording has %d steps, want many", len(all))
	}
	var first Steps
	get(t, srv, "/api/steps", &first)
	if first.Total != len(all) || first.Offset != 0 || first.Limit != defaultStepsPage || len(first.Steps) != min(len(all), defaultStepsPage) {
		t.Fatalf("/api/steps: total %d, offset %d, limit %d, %d rows; want %d, 0, %d, %d", first.Total, first.Offset, first.Limit,
			len(first.Steps), len(all), defaultStepsPage, min(len(all), defaultStepsPage))
	}
	const limit = 7
	seen := 0
	for off := 0; off < len(all); off += limit {
		var page Steps
		get(t, srv, fmt.Sprintf("/api/steps?offset=%d&limit=%d", off, limit), &page)
		if len(page.Steps) != min(limit, len(all)-off) {
			t.Fatalf("offset %d: %d rows, want %d", off, len(page.Steps), min(limit, len(all)-off))
		}
		for k, row := range page.Steps {
			st := &all[off+k]
			if row.Step != st.Step || row.FloorStart != st.FloorStart || row.FloorEnd != st.FloorEnd || row.Peak != st.Peak || len(row.Phases) != len(st.Phases) {
				t.Fatalf("offset %d row %d = step %d (%d, %d, peak %d, %d phases), want step %d (%d, %d, peak %d, %d phases)", off, k,
					row.Step, row.FloorStart, row.FloorEnd, row.Peak, len(row.Phases), st.Step, st.FloorStart, st.FloorEnd, st.Peak, len(st.Phases))
			}
			for j, ph := range row.Phases {
				if want := d.Phases.List[st.Phases[j]]; ph.PeakAt != want.PeakIndex || ph.Name != want.Name {
					t.Fatalf("step %d phase %d = %s peak at %d, want %s at %d", st.Step, j, ph.Name, ph.PeakAt, want.Name, want.PeakIndex)
				}
			}
			seen++
		}
	}
	if seen != len(all) {
		t.Fatalf("the pages held %d steps, want %d", seen, len(all))
	}
	if first.PeakPhase == nil || first.PeakOffset < 0 || !slices.Contains(all[first.PeakOffset].Phases, d.Phases.PeakPhase) {
		t.Fatalf("peak_offset %d does not hold the peak's phase %d", first.PeakOffset, d.Phases.PeakPhase)
	}
	last := all[len(all)-1].Step
	var byStep Steps
	get(t, srv, fmt.Sprintf("/api/steps?step=%d&limit=%d", last, limit), &byStep)
	if want := (len(all) - 1) / limit * limit; byStep.Offset != want || byStep.Steps[len(byStep.Steps)-1].Step != last {
		t.Errorf("/api/steps?step=%d&limit=%d: offset %d, last row step %d; want offset %d ending at step %d", last, limit, byStep.Offset,
			byStep.Steps[len(byStep.Steps)-1].Step, want, last)
	}
	for _, q := range []string{fmt.Sprintf("step=%d", last+1), "offset=-1", fmt.Sprintf("offset=%d", len(all)), "limit=0", fmt.Sprintf("limit=%d", maxStepsPage+1), "offset=x"} {
		if code := get(t, srv, "/api/steps?"+q, nil); code != http.StatusBadRequest {
			t.Errorf("/api/steps?%s: status %d, want 400", q, code)
		}
	}
}

// TestBandsSpread: at the whole-recording zoom of a long run, where the
// steps repeat the same sizes, the bands (still the largest allocations
// live at a sample) are spread over the recording: in every tenth of the
// columns some band is first drawn, not all in the first steps.
func TestBandsSpread(t *testing.T) {
	path := bigSnapshot(t, "../fixtures/llama-bf16/snapshot.pickle", 24<<20)
	an := analyzed(t, path)
	d := an.Devices[0]
	x := newIndex(d, an.Snapshot.Stacks, newAxis(d.Timeline))
	tl := x.timeline(0, x.span(), 1400, defaultBands)
	if len(tl.Bands) != defaultBands {
		t.Fatalf("%d bands, want %d", len(tl.Bands), defaultBands)
	}
	var tenths [10]int
	for _, b := range tl.Bands {
		tenths[b.C0*10/tl.Columns]++
	}
	for k, n := range tenths {
		if n == 0 {
			t.Errorf("no band is first drawn in tenth %d of the columns: bands first drawn per tenth %v", k+1, tenths)
			break
		}
	}
}

// TestTimelineReserved: the timeline's reserved series is the replay's:
// at each column's sample reserved after it, the most after any event of
// the column, and the column's events that raised and lowered it, checked
// event by event against a replay keeping every state (fixtures that free
// segments, map expandable ones, start late and run out of memory).
func TestTimelineReserved(t *testing.T) {
	for _, name := range []string{"llama-bf16/snapshot.pickle", "plain-trainer-late/snapshot.pickle", "oom/snapshot.pickle",
		"expandable/snapshot.pickle", "whatif-servewrap/default/snapshot.pickle.gz", "plain-oom/snapshot.pickle"} {
		path := "../fixtures/" + name
		an := analyzed(t, path)
		d := an.Devices[0]
		pts := snapshot.Replay(an.Snapshot, d.Device, snapshot.ReplayOptions{Series: true}).Points
		after := func(i int) int64 {
			if i < 0 {
				return d.Timeline.Start.Reserved
			}
			return pts[i].Reserved
		}
		ax := newAxis(d.Timeline)
		x := newIndex(d, an.Snapshot.Stacks, ax)
		span := x.span()
		moved := 0
		for _, w := range [][3]int64{{0, span, 800}, {0, span, 13}, {span / 3, span / 2, 400}, {span / 2, span/2 + 3, 100}} {
			tl := x.timeline(w[0], w[1], int(w[2]), 20)
			_, bound := ax.columns(w[0], w[1], int(w[2]))
			for c := 0; c < tl.Columns; c++ {
				a, b := bound[c], bound[c+1]
				hi, up, down := after(tl.Sample[c]), 0, 0
				for i := a; i < b; i++ {
					if i == a {
						hi = after(i)
					}
					hi = max(hi, after(i))
					switch {
					case after(i) > after(i-1):
						up++
					case after(i) < after(i-1):
						down++
					}
				}
				if tl.Reserved[c] != after(tl.Sample[c]) || tl.ReservedMax[c] != hi || tl.ReservedUp[c] != up || tl.ReservedDown[c] != down {
					t.Fatalf("%s window %v column %d (events %d–%d, sample %d): reserved %d, most %d, up %d, down %d; the replay says %d, %d, %d, %d",
						name, w, c, a, b, tl.Sample[c], tl.Reserved[c], tl.ReservedMax[c], tl.ReservedUp[c], tl.ReservedDown[c], after(tl.Sample[c]), hi, up, down)
				}
				moved += up + down
			}
			if w[2] == 800 && slices.Max(tl.ReservedMax) != d.Timeline.PeakReserved.Bytes {
				t.Errorf("%s: the whole recording's most reserved %d, want the reserved peak %d", name, slices.Max(tl.ReservedMax), d.Timeline.PeakReserved.Bytes)
			}
		}
		if moved == 0 && d.Timeline.Churn.SegmentAllocs+d.Timeline.Churn.SegmentFrees+d.Timeline.Churn.Maps > 0 {
			t.Errorf("%s: no column counts a change of reserved, though the trace has segment events", name)
		}
	}
}

// TestDocumentsAreReports: /api/leaks and /api/oom answer the documents
// `memscope leaks --json` and `memscope oom --json` write for the device
// (report.LeakJSON, report.OOMJSON, with oom's top 10 sites): on a
// recording with a leak and one that ran out of memory, each answer equals
// the CLI's device entry.
func TestDocumentsAreReports(t *testing.T) {
	for _, path := range []string{"../fixtures/leak/snapshot.pickle", "../fixtures/oom/snapshot.pickle"} {
		an := analyzed(t, path)
		srv := newServer(t, path)
		var leaks Leaks
		get(t, srv, "/api/leaks", &leaks)
		var ld report.FilesDoc[report.LeaksFileJSON]
		writeDoc(t, &report.Leaks{Source: path, Analysis: an}, &ld)
		want := ld.Files[0].Devices[0]
		want.Sites = want.Sites[:min(len(want.Sites), maxSites)]
		if !reflect.DeepEqual(leaks, want) {
			t.Errorf("%s: /api/leaks differs from leaks --json's device:\n%+v\n%+v", path, leaks, want)
		}
		if strings.Contains(path, "leak/") && (!leaks.Found || len(leaks.Sites) == 0) {
			t.Errorf("%s: /api/leaks found %v with %d sites; want the leak", path, leaks.Found, len(leaks.Sites))
		}
		// The moment at the peak: peak --json's (top 20 sites) and frag
		// --json's peak moment.
		var m Moment
		get(t, srv, "/api/moment?at=peak", &m)
		at, err := an.At("peak", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var pd report.FilesDoc[report.PeakFileJSON]
		writeDoc(t, &report.Peak{Source: path, Analysis: an, Devices: at, Top: 20}, &pd)
		if !reflect.DeepEqual(m.Moment, pd.Files[0].Devices[0].MomentJSON) {
			t.Errorf("%s: /api/moment's moment differs from peak --json's:\n%+v\n%+v", path, m.Moment, pd.Files[0].Devices[0].MomentJSON)
		}
		var fd report.FilesDoc[report.FragFileJSON]
		writeDoc(t, &report.Frag{Source: path, Analysis: an}, &fd)
		if fm := fd.Files[0].Devices[0].Moments[0]; fm.Label != "peak" || !reflect.DeepEqual(m.Frag, fm) {
			t.Errorf("%s: /api/moment's frag differs from frag --json's peak:\n%+v\n%+v", path, m.Frag, fm)
		}
		var ooms []OOM
		get(t, srv, "/api/oom", &ooms)
		var od report.FilesDoc[report.OOMFileJSON]
		writeDoc(t, &report.OOMs{Source: path, Analysis: an, Top: 10}, &od)
		if !reflect.DeepEqual(ooms, od.Files[0].Devices) {
			t.Errorf("%s: /api/oom differs from oom --json's:\n%+v\n%+v", path, ooms, od.Files[0].Devices)
		}
		if strings.Contains(path, "oom/") && (len(ooms) != len(an.Devices[0].OOMs) || len(ooms) == 0) {
			t.Errorf("%s: %d OOMs answered, the analysis has %d", path, len(ooms), len(an.Devices[0].OOMs))
		}
	}
}

// writeDoc writes r as JSON and decodes it into doc.
func writeDoc(t *testing.T, r report.Result, doc any) {
	t.Helper()
	var b bytes.Buffer
	if err := report.Write(&b, report.JSON, r); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.Bytes(), doc); err != nil {
		t.Fatal(err)
	}
}

// TestSettingsLateBound: /api/settings on a server recorded after its
// model was cast (fixtures/whatif-servelate) answers what frag --simulate
// --json says, each setting's peak with its bound (never a bare number
// for a late start), and torch's reserved peak under expandable segments
// in a fresh process lies inside that row's bound.
func TestSettingsLateBound(t *testing.T) {
	const path = "../fixtures/whatif-servelate/default/snapshot.pickle.gz"
	exp, err := truth.Read("../fixtures/whatif-servelate/expandable/truth.json")
	if err != nil {
		testenv.Need(t, "%v", err)
	}
	an := analyzed(t, path)
	var s Settings
	get(t, newServer(t, path), "/api/settings", &s)
	d := an.Devices[0]
	var fd report.FilesDoc[report.FragFileJSON]
	writeDoc(t, &report.Frag{Source: path, Analysis: an, Settings: [][]attribution.SettingAdvice{d.SimulateSettings()}, SettingsWhy: []string{d.SimulateSettingsWhy()}}, &fd)
	if want := fd.Files[0].Devices[0]; !reflect.DeepEqual(s.Lower, want.Simulated) || s.Why != want.SimulatedWhy {
		t.Errorf("/api/settings differs from frag --simulate --json:\n%+v %q\n%+v %q", s.Lower, s.Why, want.Simulated, want.SimulatedWhy)
	}
	found := false
	for _, r := range s.Lower {
		if r.High == 0 || r.Low > r.PeakReserved || r.PeakReserved > r.High {
			t.Errorf("%s: %d [%d, %d]; want a point inside its bound", r.Conf, r.PeakReserved, r.Low, r.High)
		}
		if r.Conf == "expandable_segments:True" {
			found = true
			if want := exp.MemoryStatsEnd["reserved_bytes.all.peak"]; want < r.Low || want > r.High {
				t.Errorf("expandable: torch's %d outside [%d, %d]", want, r.Low, r.High)
			}
		}
	}
	if !found {
		t.Errorf("no expandable_segments:True row in %+v", s.Lower)
	}
}
