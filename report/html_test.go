package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/snapshot"
)

// fixtureView analyses a fixture's snapshot.pickle (or, for a name ending
// in "#", the file it names) and makes its view as one section.
func fixtureView(t testing.TB, name string) (*attribution.Analysis, *attribution.View) {
	t.Helper()
	path := "../fixtures/" + name + "/snapshot.pickle"
	if f, ok := strings.CutSuffix(name, "#"); ok {
		path = "../fixtures/" + f
	}
	s, err := snapshot.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	an := attribution.Analyze(s, attribution.Options{Device: -1})
	return an, attribution.NewView(an, attribution.ViewOptionsFor(len(an.Devices)))
}

func renderHTML(t testing.TB, views []*attribution.View, opt HTMLOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := writeHTML(&b, views, opt); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// pageChart is one chart found in a page: its element's attributes and its
// option decoded from the JSON island.
type pageChart struct {
	ID, Kind string
	Option   map[string]any
}

var (
	chartDivRE = regexp.MustCompile(`<div class="chart" id="([^"]+)" data-kind="([^"]+)"`)
	islandRE   = regexp.MustCompile(`(?s)<script type="application/json" id="([^"]+)-option">(.*?)</script>`)
)

// pageCharts finds every chart of a page and decodes its option, numbers
// as json.Number so that byte counts stay exact.
func pageCharts(t *testing.T, page string) map[string]pageChart {
	t.Helper()
	out := map[string]pageChart{}
	for _, m := range chartDivRE.FindAllStringSubmatch(page, -1) {
		out[m[1]] = pageChart{ID: m[1], Kind: m[2]}
	}
	islands := islandRE.FindAllStringSubmatch(page, -1)
	if len(islands) != len(out) {
		t.Fatalf("%d chart elements, %d option islands; want one each", len(out), len(islands))
	}
	for _, m := range islands {
		c, ok := out[m[1]]
		if !ok {
			t.Fatalf("option %s has no chart element", m[1])
		}
		dec := json.NewDecoder(strings.NewReader(m[2]))
		dec.UseNumber()
		if err := dec.Decode(&c.Option); err != nil {
			t.Fatalf("option of %s: %v", m[1], err)
		}
		out[m[1]] = c
	}
	return out
}

func num(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("%v: %v", v, err)
	}
	return i
}

// datasetRows returns the rows of a chart's only dataset.
func datasetRows(t *testing.T, c pageChart) [][]any {
	t.Helper()
	ds, _ := c.Option["dataset"].([]any)
	if len(ds) != 1 {
		t.Fatalf("%s: %d datasets, want 1", c.ID, len(ds))
	}
	src, _ := ds[0].(map[string]any)["source"].([]any)
	var rows [][]any
	for _, r := range src {
		rows = append(rows, r.([]any))
	}
	return rows
}

// TestHTMLTimeline: the timeline's rows are the replay's exact state after
// their event, they include the peak, and the stacked charts' rows add up
// to allocated at the same events.
func TestHTMLTimeline(t *testing.T) {
	for _, name := range []string{"llama-bf16", "oom", "leak"} {
		t.Run(name, func(t *testing.T) {
			an, v := fixtureView(t, name)
			d := an.Devices[0]
			charts := pageCharts(t, renderHTML(t, []*attribution.View{v}, HTMLOptions{}))
			full := snapshot.Replay(an.Snapshot, d.Device, snapshot.ReplayOptions{Series: true})
			prefix := fmt.Sprintf("f0d%d", d.Device)
			tl, ok := charts[prefix+"-timeline"]
			if !ok || tl.Kind != "timeline" {
				t.Fatalf("no timeline chart %s-timeline in %v", prefix, keys(charts))
			}
			allocated := map[int64]int64{}
			sawPeak := false
			for _, r := range datasetRows(t, tl) {
				ev := num(t, r[5])
				want := full.Start
				if ev >= 0 {
					want = full.Points[ev].Numbers
				}
				got := snapshot.Numbers{Requested: num(t, r[0]), Allocated: num(t, r[1]), Active: num(t, r[2]), Reserved: num(t, r[3])}
				if got != want {
					t.Errorf("timeline row at event %d = %+v, want %+v (replay)", ev, got, want)
				}
				allocated[ev] = got.Allocated
				sawPeak = sawPeak || (ev == int64(full.PeakAllocated.Index) && got.Allocated == full.PeakAllocated.Bytes)
			}
			if !sawPeak {
				t.Errorf("timeline has no row at the peak (event %d, %d bytes)", full.PeakAllocated.Index, full.PeakAllocated.Bytes)
			}
			for _, id := range []string{prefix + "-cat", prefix + "-site"} {
				c := charts[id]
				if c.Kind != "stack" {
					t.Fatalf("%s: kind %q, want stack", id, c.Kind)
				}
				rows := datasetRows(t, c)
				if len(rows) != len(allocated) {
					t.Errorf("%s: %d rows, want %d like the timeline", id, len(rows), len(allocated))
				}
				for _, r := range rows {
					var sum int64
					for _, x := range r[:len(r)-2] {
						sum += num(t, x)
					}
					ev := num(t, r[len(r)-1])
					if sum != allocated[ev] {
						t.Errorf("%s at event %d: stacks sum to %d, want allocated %d", id, ev, sum, allocated[ev])
					}
				}
			}
		})
	}
}

func keys(m map[string]pageChart) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestHTMLPanels: the treemap, leak staircase, segment fills and hole
// histogram carry the analysis's numbers.
func TestHTMLPanels(t *testing.T) {
	for _, name := range []string{"llama-bf16", "oom", "leak"} {
		t.Run(name, func(t *testing.T) {
			an, v := fixtureView(t, name)
			d := an.Devices[0]
			page := renderHTML(t, []*attribution.View{v}, HTMLOptions{})
			charts := pageCharts(t, page)
			tree := charts["f0d0-tree"]
			var total int64
			for _, n := range tree.Option["series"].([]any)[0].(map[string]any)["data"].([]any) {
				total += num(t, n.(map[string]any)["value"])
				checkTreeSums(t, n.(map[string]any))
			}
			if total != d.Peak.Allocated {
				t.Errorf("treemap roots sum to %d, want allocated at the peak %d", total, d.Peak.Allocated)
			}
			if leak, ok := charts["f0d0-leak"]; ok {
				data := leak.Option["series"].([]any)[0].(map[string]any)["data"].([]any)
				for i, f := range v.Devices[0].LeakFloors {
					if got := num(t, data[i].(map[string]any)["value"]); got != f {
						t.Errorf("leak bar %d = %d, want floor %d", i, got, f)
					}
				}
			} else if len(d.Leak.Steps) > 0 {
				t.Errorf("no leak chart, want one for %d steady steps", len(d.Leak.Steps))
			}
			for k, f := range d.Frag {
				c, ok := charts[fmt.Sprintf("f0d0-seg%d", k)]
				if !ok {
					t.Fatalf("no segment chart for %s", f.Label)
				}
				var sum int64
				for _, s := range c.Option["series"].([]any) {
					for _, b := range s.(map[string]any)["data"].([]any) {
						sum += num(t, b.(map[string]any)["value"])
					}
				}
				if rest := v.Devices[0].Frag[k].Segments.Rest.Size; sum+rest != f.Reserved {
					t.Errorf("segments at %s: drawn %d + left out %d bytes, want reserved %d", f.Label, sum, rest, f.Reserved)
				}
			}
			holes := charts["f0d0-holes"]
			for k, s := range holes.Option["series"].([]any) {
				var sum int64
				for _, b := range s.(map[string]any)["data"].([]any) {
					sum += num(t, b.(map[string]any)["value"])
				}
				if sum != d.Frag[k].Free {
					t.Errorf("hole histogram at %s sums to %d, want free %d", d.Frag[k].Label, sum, d.Frag[k].Free)
				}
			}
			text := html.UnescapeString(page)
			for _, f := range d.Findings() {
				if w := findingText(f); !strings.Contains(text, w) {
					t.Errorf("page lacks the finding %q", w)
				}
			}
			if len(d.OOMs) > 0 && !strings.Contains(text, oomVerdictText(d.OOMs[0].Verdict)) {
				t.Errorf("page lacks the OOM verdict %q", oomVerdictText(d.OOMs[0].Verdict))
			}
		})
	}
}

// checkTreeSums: every treemap node's children add up to it.
func checkTreeSums(t *testing.T, n map[string]any) {
	t.Helper()
	kids, _ := n["children"].([]any)
	if len(kids) == 0 {
		return
	}
	var sum int64
	for _, k := range kids {
		sum += num(t, k.(map[string]any)["value"])
		checkTreeSums(t, k.(map[string]any))
	}
	if want := num(t, n["value"]); sum != want {
		t.Errorf("treemap node %q: children sum to %d, want %d", n["name"], sum, want)
	}
}

// networkRE finds what would make a page need the network: a script
// loaded from elsewhere, a CDN, the old note saying so.
var networkRE = regexp.MustCompile(`<script[^>]*\ssrc=|https?://cdn|cdn\.jsdelivr|needs network`)

// TestHTMLLibrary: every page inlines the vendored build, whole, in one
// script element before the glue, loads no script from anywhere, and
// carries ECharts' NOTICE.
func TestHTMLLibrary(t *testing.T) {
	_, v := fixtureView(t, "mlp-adamw")
	page := renderHTML(t, []*attribution.View{v}, HTMLOptions{})
	lib := `<script data-echarts="` + EChartsVersion + `">` + echartsLib + `</script>`
	if n := strings.Count(page, lib); n != 1 {
		t.Errorf("the page holds the vendored echarts build %d times in a <script data-echarts> element, want 1", n)
	}
	if i, j := strings.Index(page, lib), strings.LastIndex(page, `<script>`); i < 0 || j < i {
		t.Errorf("the library (at byte %d) does not come before the glue (at byte %d)", i, j)
	}
	if m := networkRE.FindString(page); m != "" {
		t.Errorf("the page holds %q: it must load nothing from the network", m)
	}
	if notice := strings.Join(strings.Fields(echartsNotice), " "); !strings.Contains(strings.Join(strings.Fields(html.UnescapeString(page)), " "), notice) {
		t.Errorf("the page does not carry ECharts' NOTICE %q", notice)
	}
}

// TestEChartsVendored: the embedded build is npm echarts@5.4.3's
// dist/echarts.min.js, byte for byte (report/echarts/README.md), the
// version EChartsVersion names, and can sit inside a <script> element;
// its LICENSE and NOTICE lie beside it.
func TestEChartsVendored(t *testing.T) {
	sum := sha256.Sum256([]byte(echartsLib))
	if got := hex.EncodeToString(sum[:]); got != echartsSHA256 {
		t.Errorf("echarts/echarts.min.js sha256 = %s, want %s (npm echarts@%s)", got, echartsSHA256, EChartsVersion)
	}
	if !strings.Contains(echartsLib, `version="`+EChartsVersion+`"`) {
		t.Errorf("echarts/echarts.min.js does not say version %q", EChartsVersion)
	}
	low := strings.ToLower(echartsLib)
	for _, bad := range []string{"</script", "<!--"} {
		if strings.Contains(low, bad) {
			t.Errorf("echarts/echarts.min.js holds %q: it cannot be inlined in a <script> element", bad)
		}
	}
	for file, want := range map[string]string{
		"echarts/LICENSE":    "Version 2.0, January 2004",
		"echarts/LICENSE-d3": "Copyright 2010-2016 Mike Bostock",
		"echarts/NOTICE":     "Copyright 2017-2023 The Apache Software Foundation",
	} {
		b, err := os.ReadFile(file)
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v; want a file holding %q", file, err, want)
		}
	}
}

// TestHTMLEscapesNames: a frame name that closes the script element stays
// inside the JSON island and the tables.
func TestHTMLEscapesNames(t *testing.T) {
	an, v := fixtureView(t, "mlp-adamw")
	for i := range an.Snapshot.Stacks.Frames {
		an.Snapshot.Stacks.Frames[i].Name = `</script><script>alert(1)</script>`
	}
	page := renderHTML(t, []*attribution.View{attribution.NewView(an, attribution.ViewOptionsFor(1))}, HTMLOptions{})
	if strings.Contains(page, "<script>alert(1)") {
		t.Error("a frame name was written unescaped")
	}
	pageCharts(t, page) // every island still decodes
	_ = v
}

// TestSiteLabelsOneForm: the page's site labels (tables and legends) name
// an installed package's file from its package, whatever folder it was
// installed in: a fixture's neutral <site-packages>/ and the same capture
// with a Linux venv's absolute paths give the same labels, and the two
// files of issue 31 come out alike (transformers/activations.py,
// transformers/integrations/sdpa_attention.py).
func TestSiteLabelsOneForm(t *testing.T) {
	neutral, _ := fixtureView(t, "llama-wide")
	s, err := snapshot.Open("../fixtures/llama-wide/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	s.Stacks.RewriteFiles(func(f string) string {
		f = strings.Replace(f, "<site-packages>/", "/home/me/proj/.venv/lib/python3.12/site-packages/", 1)
		return strings.Replace(f, "<python>/", "/usr/lib/python3.12/", 1)
	})
	abs := attribution.Analyze(s, attribution.Options{Device: -1})
	seen := map[string]bool{}
	for i, d := range neutral.Devices {
		a, b := d.Peak.Sites, abs.Devices[i].Peak.Sites
		if len(a) != len(b) || len(a) == 0 {
			t.Fatalf("device %d: %d sites neutral, %d absolute", d.Device, len(a), len(b))
		}
		for j := range a {
			if got, want := siteText(b[j]), siteText(a[j]); got != want {
				t.Errorf("siteText(absolute site %d) = %q, want %q as with neutral paths", j, got, want)
			}
			if got, want := shortSite(abs.Snapshot.Stacks, b[j]), shortSite(neutral.Snapshot.Stacks, a[j]); got != want {
				t.Errorf("shortSite(absolute site %d) = %q, want %q as with neutral paths", j, got, want)
			}
			label := siteText(a[j])
			if strings.Contains(label, "site-packages") || strings.Contains(label, "/home/me") {
				t.Errorf("siteText(site %d) = %q: names the folder of the installed package", j, label)
			}
			for _, f := range []string{"transformers/activations.py:", "transformers/integrations/sdpa_attention.py:"} {
				if strings.HasPrefix(label, f) {
					seen[f] = true
				}
			}
		}
	}
	for _, f := range []string{"transformers/activations.py:", "transformers/integrations/sdpa_attention.py:"} {
		if !seen[f] {
			t.Errorf("no top site of llama-wide is labelled %s…", f)
		}
	}
}
