package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/internal/testenv"
	"github.com/memscope/memscope/sweep"
	"github.com/memscope/memscope/trace"
)

// The browser test opens reports in headless Chromium (Debian's chromium,
// which .ci/run installs) with the network cut off: every page inlines the
// vendored echarts build. Locally it skips when chromium is missing; under
// CI (CI=true) it fails instead.
//
// MEMSCOPE_SCREENSHOTS=DIR keeps the screenshots in DIR (docs/ holds the
// ones the README shows):
//
//	MEMSCOPE_SCREENSHOTS=$PWD/docs go test ./report -run Chromium

func needBrowser(t *testing.T, format string, args ...any) {
	t.Helper()
	testenv.Need(t, "the browser test: "+format, args...)
}

// chromiumPath finds Debian's chromium or a compatible browser.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	needBrowser(t, "no chromium on PATH (apt-get install chromium)")
	return ""
}

// runChromium runs a headless Chromium with a fresh profile, the network
// cut off, and virtual time so that the page settles.
func runChromium(t *testing.T, bin string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--enable-logging=stderr", "--v=0", "--hide-scrollbars",
		"--virtual-time-budget=10000",
		// No network: every host is unknown and every request goes to a
		// proxy that is not there, so a page that needs a CDN fails.
		"--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>"}
	// A browser that dies of a signal (CI containers have seen chromium
	// segfault at start, before it loads the page) is run again, twice at
	// most; any other failure, or a third crash, fails the test.
	for try := 1; ; try++ {
		a := append(append([]string{"--user-data-dir=" + t.TempDir()}, base...), args...) // a fresh profile each try
		cmd := exec.CommandContext(ctx, bin, a...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if err == nil {
			return out.String(), errb.String()
		}
		var exit *exec.ExitError
		if try < 3 && ctx.Err() == nil && errors.As(err, &exit) && !exit.Exited() {
			t.Logf("chromium %s: %v (try %d of 3; running it again)", strings.Join(args, " "), err, try)
			continue
		}
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
}

var (
	statusRE  = regexp.MustCompile(`<output id="memscope-status"([^>]*)>([^<]*)</output>`)
	attrRE    = regexp.MustCompile(`data-([a-z-]+)="([^"]*)"`)
	consoleRE = regexp.MustCompile(`:CONSOLE[:(]\d+\)?\] "(.*)", source: `)
)

// TestChromium opens the report of a training
// run (llama-bf16), of the OOM run, of a two-rank capture (both ranks'
// snapshots and the run's table), of a profiled run with its
// export_memory_timeline file, and of a batch-size sweep (the sweep-llama
// run with the snapshot of its first batch that failed): every
// chart must be initialised with data and nothing may reach the console;
// then it takes a screenshot.
func TestChromium(t *testing.T) {
	bin := chromiumPath(t)
	shots := os.Getenv("MEMSCOPE_SCREENSHOTS")
	opt := HTMLOptions{Version: "test"}
	fixture := func(name string) func(t *testing.T) string {
		return func(t *testing.T) string {
			_, v := fixtureView(t, name)
			return renderHTML(t, []*attribution.View{v}, opt)
		}
	}
	for _, c := range []struct {
		name string
		page func(t *testing.T) string
	}{
		{"llama-bf16", fixture("llama-bf16")},
		{"oom", fixture("oom")},
		{"capture-ddp", func(t *testing.T) string { // two ranks: two sections and the run
			d, err := capture.ReadRun("../fixtures/capture-ddp")
			if err != nil {
				testenv.Need(t, "no multi-rank capture to report on: %v", err)
			}
			o := opt
			o.Run = &RunView{Capture: sweep.SummarizeRun(d)}
			_, v0 := fixtureView(t, "capture-ddp/snapshot.rank0.pickle#")
			_, v1 := fixtureView(t, "capture-ddp/snapshot.rank1.pickle#")
			return renderHTML(t, []*attribution.View{v0, v1}, o)
		}},
		{"llama-profiled-timeline", func(t *testing.T) string { // --trace memory_timeline.json
			ct, err := trace.OpenMemoryTimeline("../fixtures/llama-profiled/memory_timeline.json")
			if err != nil {
				t.Fatal(err)
			}
			o := opt
			o.Timeline = &TimelineView{Source: "memory_timeline.json", Timeline: ct}
			_, v := fixtureView(t, "llama-profiled")
			return renderHTML(t, []*attribution.View{v}, o)
		}},
		{"sweep-llama", func(t *testing.T) string {
			o := opt
			o.Run = &RunView{Sweep: sweepFixture(t)}
			_, v := fixtureView(t, "sweep-llama/points/bf16-b21-first-fail")
			return renderHTML(t, []*attribution.View{v}, o)
		}},
	} {
		name := c.name
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, name+".html")
			page := c.page(t)
			if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
				t.Fatal(err)
			}
			attr := openInChromium(t, bin, file, page)
			t.Logf("%s: page %d bytes without the library, %s charts drawn in %s ms", name, len(page)-EChartsSize(), attr["charts"], attr["render-ms"])

			png := filepath.Join(dir, name+".png")
			if shots != "" {
				png = filepath.Join(shots, "report-"+name+".png")
			}
			screenshot(t, bin, file, png)
		})
	}
}

// openInChromium opens the page in file (whose text is page) with the
// network cut off and checks what the glue wrote into #memscope-status:
// every chart initialised with data, no error; nothing may reach the
// console, and each chart's container must hold the canvas ECharts drew.
// It returns the status's data attributes.
func openInChromium(t *testing.T, bin, file, page string) map[string]string {
	t.Helper()
	ids := pageCharts(t, page)
	dom, stderr := runChromium(t, bin, "--dump-dom", "file://"+file)
	for _, m := range consoleRE.FindAllStringSubmatch(stderr, -1) {
		t.Errorf("console: %s", m[1])
	}
	m := statusRE.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no #memscope-status in the DOM: the glue did not run\n%s", tail(stderr))
	}
	attr := map[string]string{}
	for _, a := range attrRE.FindAllStringSubmatch(m[1], -1) {
		attr[a[1]] = strings.ReplaceAll(a[2], "&quot;", `"`)
	}
	var errs []string
	_ = json.Unmarshal([]byte(attr["errors"]), &errs)
	if m[2] != "ok" || attr["initialised"] != attr["charts"] || attr["empty"] != "" || len(errs) > 0 {
		t.Errorf("status %q: %s of %s charts initialised, empty: %q, errors: %q", m[2], attr["initialised"], attr["charts"], attr["empty"], errs)
	}
	if got := attr["charts"]; got != strconv.Itoa(len(ids)) {
		t.Errorf("the glue saw %s charts, the page has %d", got, len(ids))
	}
	for id := range ids {
		if !chartDrawn(dom, id) {
			t.Errorf("chart %s: no canvas in its container", id)
		}
	}
	// Readable as drawn: no text over other text or past a chart's edge
	// (phase labels, ticks, legends), and round ticks on axes of bytes.
	var text []string
	if err := json.Unmarshal([]byte(attr["text"]), &text); err != nil {
		t.Errorf("data-text %q: %v", attr["text"], err)
	}
	for _, p := range text {
		t.Errorf("text: %s", p)
	}
	var ticks map[string][]float64
	if err := json.Unmarshal([]byte(attr["ticks"]), &ticks); err != nil || len(ticks) == 0 {
		t.Errorf("data-ticks %q: %v; want the ticks of each axis of bytes", attr["ticks"], err)
	}
	for axis, tk := range ticks {
		if err := roundBinaryTicks(tk); err != nil {
			t.Errorf("%s: ticks %v: %v", axis, tk, err)
		}
	}
	return attr
}

// roundBinaryTicks checks the ticks of an axis of bytes: from zero, evenly
// spaced by 1, 2, 4 or 5 times a power of ten of B, KiB, MiB or GiB, or a
// quarter or half of KiB, MiB or GiB, and each a whole number of quarters
// of the unit it prints in (0, 512 MiB, 1 GiB, 1.5 GiB; not 477 MiB).
func roundBinaryTicks(ticks []float64) error {
	if len(ticks) < 2 {
		return fmt.Errorf("want at least two")
	}
	if ticks[0] != 0 {
		return fmt.Errorf("the axis starts at %v, want 0", ticks[0])
	}
	step := ticks[1] - ticks[0]
	round := false
	for u := 1.0; u <= 1<<40; u *= 1024 {
		for _, m := range []float64{0.25, 0.5, 1, 2, 4, 5, 10, 20, 25, 50, 100, 200, 250, 500} {
			round = round || (u > 1 || m >= 1) && step == m*u
		}
	}
	if !round {
		return fmt.Errorf("step %v bytes is not a round binary step", step)
	}
	for i, v := range ticks {
		if v != float64(i)*step {
			return fmt.Errorf("tick %d is %v, want %v", i, v, float64(i)*step)
		}
		u := 1.0
		for u*1024 <= v {
			u *= 1024
		}
		if q := v / u * 4; q != math.Trunc(q) {
			return fmt.Errorf("tick %v is not a whole number of quarters of its unit (%v bytes)", v, u)
		}
	}
	return nil
}

// chartDrawn reports whether the container of chart id in the dumped DOM
// holds a canvas, before the script element holding its option.
func chartDrawn(dom, id string) bool {
	start := strings.Index(dom, `id="`+id+`"`)
	if start < 0 {
		return false
	}
	end := strings.Index(dom[start:], `id="`+id+`-option"`)
	return end >= 0 && strings.Contains(dom[start:start+end], "<canvas")
}

// screenshot saves a PNG of the page in file to png.
func screenshot(t *testing.T, bin, file, png string) {
	t.Helper()
	runChromium(t, bin, "--window-size=1400,2300", "--screenshot="+png, "file://"+file)
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("screenshot %s: %v, %d bytes; want a PNG", png, err, len(b))
	}
}

// TestChromiumOffline builds memscope and runs 'memscope report' as a user
// would on a machine with no npm, no cache and no network: from an empty
// directory, with an empty home and cache and nothing on PATH, on a page
// with every kind of chart: two snapshots (a training run and an OOM), a
// sweep run and an export_memory_timeline file. The page must load no
// script and name no CDN, and with the network cut off every chart must
// draw, with nothing on the console. --offline (kept for older scripts)
// writes the same page.
func TestChromiumOffline(t *testing.T) {
	bin := chromiumPath(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		needBrowser(t, "no go command to build memscope: %v", err)
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "bin", "memscope")
	if b, err := exec.Command(goTool, "build", "-o", exe, "../cmd/memscope").CombinedOutput(); err != nil {
		t.Fatalf("go build ../cmd/memscope: %v\n%s", err, b)
	}
	fixtures, err := filepath.Abs("../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	home, work := filepath.Join(dir, "home"), filepath.Join(dir, "work")
	for _, d := range []string{home, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	report := func(file string, flags ...string) (page, stderr string) {
		args := append([]string{"report", "-o", file}, flags...)
		args = append(args, "--run", filepath.Join(fixtures, "sweep-llama"),
			"--trace", filepath.Join(fixtures, "llama-profiled", "memory_timeline.json"),
			filepath.Join(fixtures, "llama-bf16", "snapshot.pickle"), filepath.Join(fixtures, "oom", "snapshot.pickle"))
		cmd := exec.Command(exe, args...)
		cmd.Dir = work
		cmd.Env = []string{"HOME=" + home, "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "PATH=" + filepath.Join(dir, "empty")}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("memscope %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), string(out)
	}
	file := filepath.Join(work, "offline.html")
	page, stderr := report(file)
	if want := "with ECharts " + EChartsVersion + " inlined: it works offline"; !strings.Contains(stderr, want) {
		t.Errorf("memscope report said %q, want %q", stderr, want)
	}
	if m := networkRE.FindString(page); m != "" {
		t.Errorf("the page holds %q: it must load nothing from the network", m)
	}
	if again, _ := report(filepath.Join(work, "again.html"), "--offline"); again != page {
		t.Errorf("memscope report --offline wrote another page than memscope report (%d bytes, %d)", len(again), len(page))
	}
	attr := openInChromium(t, bin, file, page)
	t.Logf("report: page %d bytes, %d without the library, %s charts drawn in %s ms", len(page), len(page)-EChartsSize(), attr["charts"], attr["render-ms"])
	png := filepath.Join(dir, "offline.png")
	if shots := os.Getenv("MEMSCOPE_SCREENSHOTS"); shots != "" {
		png = filepath.Join(shots, "report-offline.png")
	}
	screenshot(t, bin, file, png)
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}
