package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/srcpath"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report"
)

// The documents of docs/json.md, typed. Decoding with unknown fields
// disallowed checks that the output carries exactly the documented fields.
type (
	peakDoc struct {
		Schema, Kind string
		Files        []struct {
			Source  string                  `json:"source"`
			Devices []report.PeakDeviceJSON `json:"devices"`
		} `json:"files"`
	}
	leaksDoc struct {
		Schema, Kind string
		Files        []struct {
			Source  string            `json:"source"`
			Devices []report.LeakJSON `json:"devices"`
		} `json:"files"`
	}
	fragDoc struct {
		Schema, Kind string
		Files        []struct {
			Source  string                  `json:"source"`
			Devices []report.DeviceFragJSON `json:"devices"`
		} `json:"files"`
	}
	oomDoc struct {
		Schema, Kind string
		Files        []struct {
			Source  string           `json:"source"`
			Devices []report.OOMJSON `json:"devices"`
		} `json:"files"`
	}
)

// decodeStrict decodes a command's JSON into v, refusing unknown fields, and
// checks the schema and kind.
func decodeStrict(t *testing.T, out string, v any, kind string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s JSON does not decode into the documented schema: %v", kind, err)
	}
	var head struct{ Schema, Kind string }
	json.Unmarshal([]byte(out), &head)
	if head.Schema != report.Schema || head.Kind != kind {
		t.Fatalf("JSON schema %q kind %q, want %q %q", head.Schema, head.Kind, report.Schema, kind)
	}
}

// mustContain checks that the text output shows each value as the text
// renderer formats it.
func mustContain(t *testing.T, cmd, text string, values ...string) {
	t.Helper()
	for _, v := range values {
		if !strings.Contains(text, v) {
			t.Errorf("%s: text output does not show %q, which its JSON reports", cmd, v)
		}
	}
}

// siteShown is what the text output shows of a site: its label, or for a
// site in a frame the frame's file base, line and function (the start of a
// long path is clipped), and the caller's after "called from".
func siteShown(s report.SiteJSON) []string {
	where := func(f *report.FrameJSON) string {
		return fmt.Sprintf("%s:%d %s", attribution.FileBase(f.Filename), f.Line, f.Name)
	}
	if s.Frame == nil {
		return []string{s.Label}
	}
	out := []string{where(s.Frame)}
	if s.Caller != nil {
		out = append(out, "called from ", where(s.Caller))
	}
	return out
}

func both(t *testing.T, args ...string) (text, js string) {
	t.Helper()
	r := runMemscope(args...)
	if r.err != nil {
		t.Fatalf("memscope %v: %v", args, r.err)
	}
	j := runMemscope(append([]string{args[0], "--json"}, args[1:]...)...)
	if j.err != nil {
		t.Fatalf("memscope %v --json: %v", args, j.err)
	}
	return r.stdout, j.stdout
}

// TestJSONMatchesText: every analysis command's JSON decodes into the
// documented schema, and its values are the ones the text output shows.
func TestJSONMatchesText(t *testing.T) {
	b := units.Bytes
	t.Run("summary", func(t *testing.T) {
		text, js := both(t, "summary", llamaSnap)
		var doc report.SummaryDoc
		decodeStrict(t, js, &doc, "summary")
		d := doc.Files[0].Devices[0]
		mustContain(t, "summary", text, b(d.AtPeak.Requested), b(d.AtPeak.Allocated), b(d.AtPeak.Reserved),
			b(d.End.Allocated), b(d.Peaks["reserved"].Bytes))
		library := 0
		for _, s := range d.TopSites {
			mustContain(t, "summary", text, b(s.Bytes))
			mustContain(t, "summary", text, siteShown(s)...)
			if s.Kind == "library" {
				library++
				if s.Caller == nil || s.Label != fmt.Sprintf("%s:%d %s (called from %s:%d %s)",
					srcpath.Show(s.Frame.Filename), s.Frame.Line, s.Frame.Name, srcpath.Show(s.Caller.Filename), s.Caller.Line, s.Caller.Name) {
					t.Errorf("library site %q: caller %+v, want the label to name frame and caller", s.Label, s.Caller)
				}
			} else if s.Caller != nil {
				t.Errorf("%s site %q has a caller", s.Kind, s.Label)
			}
		}
		if library == 0 {
			t.Errorf("no library site among the top sites of %s: the model's lines are in transformers", llamaSnap)
		}
		if !d.TimesRecorded {
			t.Errorf("summary JSON: times_recorded false for a trace with time_us")
		}
		flat := strings.Join(strings.Fields(text), " ")
		for _, f := range d.Findings {
			mustContain(t, "summary", flat, f.Text)
		}
		if len(d.Warnings) == 0 {
			t.Errorf("summary JSON: no warnings; the llama fixture starts recording late")
		}
		for _, w := range d.Warnings {
			mustContain(t, "summary", flat, w)
		}
	})
	t.Run("peak", func(t *testing.T) {
		text, js := both(t, "peak", mlpSnap)
		var doc peakDoc
		decodeStrict(t, js, &doc, "peak")
		m := doc.Files[0].Devices[0]
		mustContain(t, "peak", text, b(m.Numbers.Requested), b(m.Numbers.Allocated), b(m.Numbers.Reserved))
		for _, s := range m.Sites {
			mustContain(t, "peak", text, b(s.Bytes))
			mustContain(t, "peak", text, siteShown(s)...)
		}
		for name, v := range m.Categories {
			if v > 0 {
				mustContain(t, "peak", text, b(v)+" ", name)
			}
		}
	})
	t.Run("leaks", func(t *testing.T) {
		text, js := both(t, "leaks", leakSnap)
		var doc leaksDoc
		decodeStrict(t, js, &doc, "leaks")
		l := doc.Files[0].Devices[0]
		mustContain(t, "leaks", text, b(l.GrowthPerStep))
		for _, f := range l.Floors {
			mustContain(t, "leaks", text, b(f))
		}
		for _, s := range l.Sites {
			mustContain(t, "leaks", text, b(s.Bytes), b(s.BytesPerStep))
			mustContain(t, "leaks", text, siteShown(s.SiteJSON)...)
		}
	})
	t.Run("frag", func(t *testing.T) {
		text, js := both(t, "frag", oomSnap)
		var doc fragDoc
		decodeStrict(t, js, &doc, "frag")
		for _, f := range doc.Files[0].Devices[0].Moments {
			mustContain(t, "frag", text, f.Label, b(f.Reserved), b(f.Allocated), b(f.Free), b(f.InactiveSplit))
			mustContain(t, "frag", strings.Join(strings.Fields(text), " "), f.Verdict)
		}
	})
	t.Run("oom", func(t *testing.T) {
		text, js := both(t, "oom", oomSnap)
		var doc oomDoc
		decodeStrict(t, js, &doc, "oom")
		o := doc.Files[0].Devices[0]
		mustContain(t, "oom", text, b(o.Request), b(o.Numbers.Allocated), b(o.Numbers.Reserved), b(o.DeviceFree),
			"from "+o.RequestSite.Label)
		if o.Cap == nil {
			t.Fatalf("oom JSON: no cap; the oom fixture ran under a 1 GiB cap")
		}
		mustContain(t, "oom", text, "per-process cap between "+b(o.Cap.Low)+" and "+b(o.Cap.High))
		for _, f := range o.RequestStack {
			if !strings.Contains(f.Filename, "site-packages") {
				mustContain(t, "oom", text, fmt.Sprintf("%s:%d %s", f.Filename, f.Line, f.Name))
			}
		}
		mustContain(t, "oom", strings.Join(strings.Fields(text), " "), o.Verdict)
	})
}
