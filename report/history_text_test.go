package report

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// quirkWindow reads the recorded window of ../fixtures/quirks/name's
// truth.json: torch's numbers.
func quirkWindow(t *testing.T, name string) truth.Window {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../fixtures/quirks", name, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		Window truth.Window `json:"window"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	return tr.Window
}

// everyText renders what prints a moment or an event of an analysis's
// first device: the summary (text, JSON warnings, HTML report), the peak
// and the end as 'peak' prints them, advise, and the pprof profile's
// comments.
func everyText(t *testing.T, an *attribution.Analysis) map[string]string {
	t.Helper()
	d := an.Devices[0]
	out := map[string]string{}
	var b bytes.Buffer
	sum := attribution.Summarize(an, 5)
	if err := Write(&b, Text, &Summary{Sum: sum}); err != nil {
		t.Fatal(err)
	}
	out["summary"] = b.String()
	b.Reset()
	if err := Write(&b, JSON, &Summary{Sum: sum}); err != nil {
		t.Fatal(err)
	}
	var doc SummaryDoc
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	out["summary --json warnings"] = strings.Join(doc.Files[0].Devices[0].Warnings, "\n")
	page := renderHTML(t, []*attribution.View{attribution.NewView(an, attribution.ViewOptionsFor(1))}, HTMLOptions{})
	out["report"] = html.UnescapeString(regexp.MustCompile(`(?s)<script.*?</script>`).ReplaceAllString(page, ""))
	for name, m := range map[string]*attribution.Moment{"peak": d.Peak, "peak --at end": d.End} {
		b.Reset()
		if err := momentText(&b, an, d, m, 5, false); err != nil {
			t.Fatal(err)
		}
		out[name] = b.String()
	}
	b.Reset()
	adv := &Advice{Source: "s.pickle", Devices: []AdviceDevice{{Device: d.Device, Advice: d.Advise(attribution.AdviseOptions{}), Timeline: d.Timeline}}}
	if err := Write(&b, Text, adv); err != nil {
		t.Fatal(err)
	}
	out["advise"] = b.String()
	b.Reset()
	if err := Write(&b, PProf, &Profile{Analysis: an, Device: d, Moment: d.Peak, Allocs: d.EachAllocation()}); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	out["pprof"] = strings.Join(p.Comments, "\n")
	return out
}

// TestNoEventIndexWithoutHistory: a snapshot with no allocation history —
// torch 2.11's enabled="state" and legacy _record_memory_history(True)
// captures, whose trace holds only the marker of the snapshot call, and the
// first with its device trace dropped (what torch.cuda.memory_snapshot()
// and older state dumps give) — prints no event index anywhere ("event -1"
// was advise's and pprof's): each place says the moment is the end state,
// and advise says no history was recorded instead of blaming the steps.
// The peak it names is torch's allocated at the end.
func TestNoEventIndexWithoutHistory(t *testing.T) {
	eventIndex := regexp.MustCompile(`event -?[0-9]`)
	for _, tt := range []struct {
		name, fixture string
		dropTrace     bool
		why           string // after "in the end state: "
	}{
		{"enabled=state", "state-only", false, "the trace holds one entry"},
		{"legacy call", "legacy-one-entry", false, "the trace holds one entry"},
		{"no device trace", "state-only", true, "no history recorded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := snapshot.Open(filepath.Join("../fixtures/quirks", tt.fixture, "snapshot.pickle"))
			if err != nil {
				t.Fatal(err)
			}
			if tt.dropTrace {
				for i := range s.Traces {
					s.Traces[i] = nil
				}
			}
			an := attribution.Analyze(s, attribution.Options{Device: -1})
			w := quirkWindow(t, tt.fixture)
			texts := everyText(t, an)
			for name, out := range texts {
				if m := eventIndex.FindString(out); m != "" {
					t.Errorf("%s prints %q with no event recorded:\n%s", name, m, out)
				}
			}
			for name, want := range map[string]string{
				"summary":       "peak allocated " + units.Bytes(w.AllocatedEnd) + " is the snapshot's end state",
				"report":        "in the snapshot's end state (",
				"peak":          "device 0 at peak (in the end state: " + tt.why + "): requested " + units.Bytes(w.RequestedEnd) + ", allocated " + units.Bytes(w.AllocatedEnd),
				"peak --at end": "device 0 at end (in the end state: " + tt.why + ")",
				"advise":        "device 0: allocated peak " + units.Bytes(w.AllocatedEnd) + " (in the end state: " + tt.why + "); reserved " + units.Bytes(w.ReservedEnd),
				"pprof":         "inuse_*: blocks live at peak (in the end state: " + tt.why + "); alloc_*: empty, no allocation was recorded",
			} {
				if !strings.Contains(texts[name], want) {
					t.Errorf("%s lacks %q:\n%s", name, want, texts[name])
				}
			}
			if adv := texts["advise"]; !strings.Contains(adv, "no allocation history was recorded") || strings.Contains(adv, "outside the recorded steps") {
				t.Errorf("advise does not say no history was recorded:\n%s", adv)
			}
		})
	}
}

// TestHistoryWarningsRendered: the warnings of the quirk and side-stream
// captures reach the summary's text, its JSON and the report, with
// torch's numbers: a one-entry trace named for what it is (never "the ring
// buffer wrapped" or "recording began late"), the true peak before a late
// recording (reserved at its start and the window's peak, torch's), and
// the side stream's frees waiting at the end (torch's active − allocated).
func TestHistoryWarningsRendered(t *testing.T) {
	late := quirkWindow(t, "late-peak")
	var side truth.Window
	if tr, err := truth.Read("../fixtures/whatif-sidestream/default/truth.json"); err != nil {
		t.Fatal(err)
	} else {
		side = tr.Window
	}
	for _, tt := range []struct {
		path       string
		want, dont []string
	}{
		{"quirks/legacy-one-entry/snapshot.pickle",
			[]string{"the trace holds one entry (torch's marker of the snapshot call): a recording that keeps one trace entry, not a ring buffer that wrapped",
				"trace_alloc_max_entries defaults to 1", "torch.cuda.memory._record_memory_history(max_entries=100000)"},
			[]string{"the trace ring buffer wrapped", "recording began late", "allocated before recording began"}},
		{"quirks/late-peak/snapshot.pickle",
			[]string{"the true peak likely predates the recording: " + units.Bytes(late.ReservedStart) + " was reserved at the first recorded entry",
				"the highest allocated the trace replays (" + units.Bytes(late.MaxAllocated) + " at its peak)"}, nil},
		{"whatif-sidestream/default/snapshot.pickle",
			[]string{"were freed while another stream still had work queued on them (record_stream",
				"and " + units.Bytes(side.ActiveEnd-side.AllocatedEnd) + " at the end"}, nil},
	} {
		t.Run(tt.path, func(t *testing.T) {
			an, _ := fixtureView(t, tt.path+"#")
			texts := everyText(t, an)
			for _, name := range []string{"summary", "summary --json warnings", "report"} {
				flat := strings.Join(strings.Fields(texts[name]), " ")
				for _, w := range tt.want {
					if !strings.Contains(flat, w) {
						t.Errorf("%s lacks %q:\n%s", name, w, texts[name])
					}
				}
				for _, w := range tt.dont {
					if strings.Contains(flat, w) {
						t.Errorf("%s says %q:\n%s", name, w, texts[name])
					}
				}
			}
		})
	}
}
