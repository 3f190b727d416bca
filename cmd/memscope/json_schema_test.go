package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report"
)

// The documents of docs/json.md, typed. Decoding with unknown fields
// disallowed checks that the output carries exactly the documented fields.
type (
	peakDoc struct {
		Schema, Kind string
		Files        []struct {
			Source  string              `json:"source"`
			Devices []report.MomentJSON `json:"devices"`
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
		for _, s := range d.TopSites {
			mustContain(t, "summary", text, b(s.Bytes), s.Label)
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
			mustContain(t, "leaks", text, b(s.Bytes), b(s.BytesPerStep), s.Label)
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
