package report

import (
	"bytes"
	"encoding/json"
	"html"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// TestAdviceForms: the text names each fix in budget's words with its new
// peak, and the JSON carries the same numbers as raw bytes; a recording
// with no backward says advise covers training.
func TestAdviceForms(t *testing.T) {
	fit := budget.FitNeed("H100", 80<<30, 3<<30)
	a := &attribution.Advice{Training: true, Peak: 8 << 30, Reserved: 10 << 30, PeakIndex: 12, Step: 1, Phase: "backward",
		LogitsBytes: 2 << 30, Layers: 4}
	a.Holders[attribution.TermLogits] = attribution.Bytes{Bytes: 6 << 30, Count: 3}
	a.Holders[attribution.TermModelStates] = attribution.Bytes{Bytes: 2 << 30, Count: 40}
	a.Holders[attribution.TermFragmentation] = attribution.Bytes{Bytes: 2 << 30}
	a.Fixes = []attribution.AdviceFix{{Kind: budget.FixChunkedLoss, Term: attribution.TermLogits, Removes: 5 << 30, Blocks: 3,
		NewPeak: 3 << 30, NewPeakIndex: 12, Chunks: 8, Fit: &fit}}
	r := &Advice{Source: "s.pickle", Devices: []AdviceDevice{{Device: 0, Advice: a},
		{Device: 1, Advice: &attribution.Advice{PeakIndex: -1, Step: -1}}}}
	var text bytes.Buffer
	if err := Write(&text, Text, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"chunked cross-entropy (8 chunks", "removes 5.00 GiB at the peak (3 blocks) → new peak 3.00 GiB (−62.5%)",
		"logits and loss  6.00 GiB  75.0%  3 blocks", "advise covers training peaks"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("Advice text lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := Write(&js, JSON, r); err != nil {
		t.Fatal(err)
	}
	var doc FilesDoc[AdviceFileJSON]
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Kind != "advise" || len(doc.Files) != 1 || len(doc.Files[0].Devices) != 2 {
		t.Fatalf("Advice JSON = %+v, want one file of two devices", doc)
	}
	d := doc.Files[0].Devices[0]
	if len(d.Fixes) != 1 || d.Fixes[0].NewPeak != 3<<30 || d.Fixes[0].Removes != 5<<30 || d.Fixes[0].Fit.Verdict != "fits" {
		t.Errorf("Advice JSON fixes = %+v, want the chunked loss: removes %d, new peak %d, fits", d.Fixes, 5<<30, 3<<30)
	}
	if len(d.Holders) != int(attribution.NumAdviseTerms) || d.Holders[attribution.TermLogits].Bytes != 6<<30 {
		t.Errorf("Advice JSON holders = %+v, want every term, logits %d", d.Holders, 6<<30)
	}
	if inf := doc.Files[0].Devices[1]; inf.Training || inf.Holders == nil || inf.Fixes == nil || len(inf.Fixes) != 0 {
		t.Errorf("Advice JSON of an inference device = %+v, want training false and empty lists", inf)
	}
}

// TestAdviceCombinationForms: a run of fixes is worded with the fixes'
// numbers in the list, the combined new peak and the verdict, and the JSON
// carries the positions, the names and the raw bytes.
func TestAdviceCombinationForms(t *testing.T) {
	miss := budget.FitNeed("H100", 80<<30, 90<<30)
	a := &attribution.Advice{Training: true, Peak: 100 << 30, Reserved: 100 << 30, PeakIndex: 12, Step: 1, Phase: "backward"}
	a.Fixes = []attribution.AdviceFix{
		{Kind: budget.FixFusedLoss, Term: attribution.TermLogits, NewPeak: 90 << 30, NewPeakIndex: 12, Fit: &miss},
		{Kind: budget.FixFullCkpt, Term: attribution.TermActivations, NewPeak: 95 << 30, NewPeakIndex: 12, Fit: &miss},
		{Kind: budget.FixMicroBatch, Term: attribution.TermActivations, NewPeak: 92 << 30, NewPeakIndex: 12, Fit: &miss},
	}
	a.Combination = &attribution.AdviceCombination{Fixes: []int{0, 2}, Kinds: []budget.FixKind{budget.FixFusedLoss, budget.FixMicroBatch},
		NewPeak: 60 << 30, NewPeakIndex: 9, Fit: budget.FitNeed("H100", 80<<30, 60<<30)}
	r := &Advice{Source: "s.pickle", Devices: []AdviceDevice{{Device: 0, Advice: a}}}
	var text bytes.Buffer
	if err := Write(&text, Text, r); err != nil {
		t.Fatal(err)
	}
	if want := "no single fix fits H100 (80.00 GiB): together, 1 + 3 → new peak 60.00 GiB (−40.0%), fits"; !strings.Contains(text.String(), want) {
		t.Errorf("Advice text lacks %q:\n%s", want, text.String())
	}
	var js bytes.Buffer
	if err := Write(&js, JSON, r); err != nil {
		t.Fatal(err)
	}
	var doc FilesDoc[AdviceFileJSON]
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Files[0].Devices[0].Combination
	if c == nil || len(c.Fixes) != 2 || c.Fixes[1] != 2 || len(c.Names) != 2 || !strings.Contains(c.Names[1], "micro-batch") ||
		c.NewPeak != 60<<30 || c.NewPeakEventIndex != 9 || c.Fit.Verdict != "fits" {
		t.Errorf("Advice JSON combination = %+v, want fixes [0 2], the micro-batch second, new peak %d after event 9, fits", c, int64(60<<30))
	}
}

// TestHTMLFixes: the page shows advise's first three fixes of a training
// peak, each named in budget's words with its new peak, and no fix table
// for an inference recording.
func TestHTMLFixes(t *testing.T) {
	for _, c := range []struct {
		fixture string
		fixes   int
	}{
		{"train-none", 3},
		{"infer-dynamic", 0},
	} {
		t.Run(c.fixture, func(t *testing.T) {
			s, err := snapshot.Open("../fixtures/advise/" + c.fixture + "/snapshot.pickle")
			if err != nil {
				t.Fatal(err)
			}
			page := string(pageFor(t, s))
			if got := strings.Count(page, "<h3>What to change</h3>"); got != min(c.fixes, 1) {
				t.Errorf("%s: the page has %d fix tables, want %d", c.fixture, got, min(c.fixes, 1))
			}
			ad := attribution.Analyze(s, attribution.Options{Device: -1}).Primary().Advise(attribution.AdviseOptions{})
			if c.fixes == 0 {
				if ad.Training {
					t.Fatalf("Advise(%s).Training = true, want an inference fixture", c.fixture)
				}
				return
			}
			if len(ad.Fixes) < c.fixes {
				t.Fatalf("Advise(%s) has %d fixes, want %d or more", c.fixture, len(ad.Fixes), c.fixes)
			}
			rows := page[strings.Index(page, "<h3>What to change</h3>"):]
			rows = rows[:strings.Index(rows, "</table>")]
			if got := strings.Count(rows, "<tr><td>"); got != c.fixes {
				t.Errorf("%s: the fix table has %d rows, want %d", c.fixture, got, c.fixes)
			}
			for i, f := range ad.Fixes[:c.fixes] {
				name := html.EscapeString(adviceFixWords(f).name)
				want := "<tr><td>" + name + "</td>"
				peak := ">" + units.Bytes(f.NewPeak) + " ("
				if k := strings.Index(rows, want); k < 0 || !strings.Contains(rows[k:], peak) {
					t.Errorf("%s: fix %d %q with new peak %s not on the page:\n%s", c.fixture, i+1, name, units.Bytes(f.NewPeak), rows)
				}
			}
		})
	}
}
