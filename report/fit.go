package report

import (
	"fmt"
	"io"
	"slices"

	"github.com/memscope/memscope/fit"
	"github.com/memscope/memscope/internal/units"
)

// Fit is 'memscope fit”s result: the job's requests fitted to the batch
// and the largest batch that fits under each setting.
type Fit struct {
	Result *fit.Result
	// CapFrom says where the cap came from ("--memory-limit", or a GPU's
	// name less the overhead).
	CapFrom string
	// Top is how many stacks to list per kind (0: 5).
	Top int
	// Dim is what the recordings' sizes scale: "batch" (the default) or
	// "seq" (tokens per sample), for the words.
	Dim string
	// Version is memscope's, for the HTML page's footer.
	Version string
	// Comparisons hold the prediction against recordings at other
	// batches (--compare).
	Comparisons []*fit.Comparison
	// Need is the model's run at one batch with no cap, its Fits and OOM
	// the capped run's (fit --at, budget with snapshots); nil when not
	// asked.
	Need *fit.Point
	// Fixes are advise's fixes along the curve (fit --advise); Advised
	// says they were asked for (none may apply).
	Fixes   []fit.Fix
	Advised bool
}

// fitWords are the words of one dimension: its name, what one unit of it
// is, the plural of the name, and its table column's heading.
type fitWords struct{ name, unit, names, column string }

func (r *Fit) words() fitWords {
	if r.Dim == "seq" {
		return fitWords{"sequence length", "token", "sequence lengths", "seq"}
	}
	return fitWords{"batch", "sample", "batches", "batch"}
}

func (*Fit) Kind() string { return "fit" }

func (r *Fit) writeText(w io.Writer) error {
	ew := &errWriter{w: w}
	res := r.Result
	m := res.Model
	top := r.Top
	if top <= 0 {
		top = 5
	}
	wd := r.words()
	ew.printf("recordings:\n")
	for i, in := range m.Inputs {
		mark := ""
		if i == m.Template {
			mark = "  (the template: its requests, in its order, at every " + wd.name + ")"
		}
		ew.printf("  %s %-5d %s%s\n", wd.name, in.Batch, in.Path, mark)
	}
	n := len(m.Requests)
	ew.printf("\n%s fitted: %d constant, %d linear in the %s, %d quadratic, %d irregular, %d in the template only\n",
		nouns(n, "request"), m.Kinds[fit.SizeConstant], m.Kinds[fit.SizeLinear], wd.name, m.Kinds[fit.SizeQuadratic], m.Kinds[fit.SizeIrregular], m.Kinds[fit.SizeUnpaired])
	if len(m.Inputs) == 2 {
		ew.printf("  two recordings: each size is the line through them; a third recording would check it\n")
	}
	for _, w := range m.Warnings {
		ew.printf("  note: %s\n", w)
	}
	if len(m.Scaling) > 0 {
		ew.printf("\ngrows most per %s (summed over each stack's requests, live at once or not):\n", wd.unit)
		for _, g := range m.Scaling[:min(top, len(m.Scaling))] {
			ew.printf("  %10s/%s  %s (%s)\n", units.Bytes(g.PerSample), wd.unit, g.Label, nouns(g.Count, "request"))
		}
	}
	named := func(title string, gs []fit.Group) {
		if len(gs) == 0 {
			return
		}
		ew.printf("\n%s:\n", title)
		for _, g := range gs[:min(top, len(gs))] {
			ew.printf("  %10s  %s (%s)\n", units.Bytes(g.Bytes), g.Label, nouns(g.Count, "request"))
		}
		if len(gs) > top {
			ew.printf("  … %d more\n", len(gs)-top)
		}
	}
	named("sizes that follow no exact line (extrapolated from the two largest "+wd.names+")", m.Irregular)
	named("requests only the template makes (kept at their recorded size)", m.Unpaired)

	ew.printf("\ncap: %s", units.Bytes(res.Capacity))
	if r.CapFrom != "" {
		ew.printf(" (%s)", r.CapFrom)
	}
	ew.printf("\n")
	for _, f := range res.Frontiers {
		conf := f.Conf
		if conf == "" {
			conf = "recorded settings"
		}
		ew.printf("\n%s: ", conf)
		switch {
		case f.LargestFit == 0:
			ew.printf("not even %s 1 fits", wd.name)
			if f.FirstFail != nil && f.FirstFail.OOM != nil {
				ew.printf(": %s", oomAtText(f.FirstFail.OOM))
			}
			ew.printf("\n")
		default:
			ew.printf("largest %s that fits %d", wd.name, f.LargestFit)
			if f.FirstFail == nil {
				ew.printf(" (the search's end: every %s up to %d fits)", wd.name, f.Max)
			}
			ew.printf("\n  at %d: peak allocated %s, peak reserved %s, %s of the cap left", f.LargestFit,
				units.Bytes(f.Fit.PeakAllocated), units.Bytes(f.Fit.PeakReserved), units.Bytes(f.Margin))
			if f.Fit.Survived > 0 {
				ew.printf("; %s failed and fell back (cuDNN's do)", nouns(f.Fit.Survived, "workspace request"))
			}
			ew.printf("\n")
			if ff := f.FirstFail; ff != nil && ff.OOM != nil {
				ew.printf("  at %d: out of memory, %s\n", ff.Batch, oomAtText(ff.OOM))
			}
		}
		if c := f.Curve; c.Points >= 2 {
			ew.printf("  curve (%s): allocated ≈ %s + %s/%s, reserved ≈ %s + %s/%s\n", nouns(c.Points, "run"),
				units.Bytes(int64(c.AllocatedFixed)), units.Bytes(int64(c.AllocatedPerSample)), wd.unit,
				units.Bytes(int64(c.ReservedFixed)), units.Bytes(int64(c.ReservedPerSample)), wd.unit)
		}
		ew.printf("  %7s  %14s  %14s  %s\n", wd.column, "peak allocated", "peak reserved", "")
		for _, p := range f.Points {
			v := "fits"
			if !p.Fits {
				v = "OOM"
			}
			ew.printf("  %7d  %14s  %14s  %s\n", p.Batch, units.Bytes(p.PeakAllocated), units.Bytes(p.PeakReserved), v)
		}
	}
	if p := r.Need; p != nil {
		ew.printf("\nat %s %d the step needs %s reserved (peak allocated %s)", wd.name, p.Batch, units.Bytes(p.PeakReserved), units.Bytes(p.PeakAllocated))
		switch {
		case res.Capacity <= 0:
			ew.printf("\n")
		case p.Fits:
			ew.printf(": it fits, %s of the cap left\n", units.Bytes(res.Capacity-p.PeakReserved))
		default:
			ew.printf(": %s over the cap", units.Bytes(max(0, p.PeakReserved-res.Capacity)))
			if p.OOM != nil {
				ew.printf("; out of memory at %s", oomAtText(p.OOM))
			}
			ew.printf("\n")
		}
	}
	if r.Advised {
		r.fixesText(ew, wd)
	}
	for _, c := range r.Comparisons {
		ew.printf("\nheld against %s (a recording at %s %d):\n", c.Path, wd.name, c.Batch)
		ew.printf("  %d of its %s predicted at their size, %d at another; %d predicted and not made, %d made and not predicted\n",
			c.Exact, nouns(c.Recorded, "request"), c.Matched-c.Exact, c.Predicted-c.Matched, c.Recorded-c.Matched)
		for _, s := range c.Mispredicted[:min(top, len(c.Mispredicted))] {
			kind := ""
			if s.Transient {
				kind = ", workspaces"
			}
			ew.printf("  %10s predicted, %s recorded: %s (%s%s)\n", units.Bytes(s.Bytes), units.Bytes(s.RecordedBytes), s.Label, nouns(s.Count, "request"), kind)
		}
		for _, g := range c.PredictedOnly[:min(top, len(c.PredictedOnly))] {
			ew.printf("  predicted, not made: %s (%s, %s)\n", g.Label, nouns(g.Count, "request"), units.Bytes(g.Bytes))
		}
		for _, g := range c.RecordedOnly[:min(top, len(c.RecordedOnly))] {
			ew.printf("  made, not predicted: %s (%s, %s)\n", g.Label, nouns(g.Count, "request"), units.Bytes(g.Bytes))
		}
	}
	ew.printf("\nsame program, other sizes: each run is the template's requests at that %s through the allocator model\n", wd.name)
	return ew.err
}

// fixesText words advise's fixes along the curve, the most batch first,
// then those not carried and why.
func (r *Fit) fixesText(ew *errWriter, wd fitWords) {
	res := r.Result
	base := 0
	if len(res.Frontiers) > 0 {
		base = res.Frontiers[0].LargestFit
	}
	if len(r.Fixes) == 0 {
		ew.printf("\nadvise's fixes: none (they are for a training step's peak)\n")
		return
	}
	fixes := append([]fit.Fix(nil), r.Fixes...)
	slices.SortStableFunc(fixes, func(a, b fit.Fix) int { return b.LargestFit - a.LargestFit })
	ew.printf("\nwith advise's fixes, under the recorded settings (%d fits without one):\n", base)
	ew.printf("  %14s  %14s  %s\n", "largest "+wd.column, "reserved there", "fix")
	for _, f := range fixes {
		if !f.Carried {
			continue
		}
		n := fmt.Sprint(f.LargestFit)
		if f.LargestFit == f.Max {
			n = fmt.Sprintf("%d+", f.Max) // the search's end
		}
		ew.printf("  %14s  %14s  %s\n", n, units.Bytes(f.Need), adviceFixWords(f.Advice).name)
	}
	ew.printf("  each: the template's requests the fix makes smaller (the logits' slices, the moments' bytes, the\n"+
		"  activations of half the micro-batch) shrunk at every %s, through the allocator model, under the cap\n"+
		"  less what else the fix adds at the step's peak\n", wd.name)
	for _, f := range fixes {
		if !f.Carried {
			ew.printf("  not carried: %s: %s\n", adviceFixWords(f.Advice).name, f.Why)
		}
	}
}

func oomAtText(o *fit.OOMAt) string {
	where := "before the first step"
	if o.Step >= 0 {
		where = fmt.Sprintf("step %d", o.Step)
		if o.Phase != "" {
			where += " " + o.Phase
		}
	} else if o.Phase != "" {
		where = o.Phase
	}
	return fmt.Sprintf("%s, a request of %s at %s (reserved %s)", where, units.Bytes(o.Size), o.Site, units.Bytes(o.Reserved))
}

// FitJSON is the "result" of the fit document (docs/json.md).
type FitJSON struct {
	Dim       string            `json:"dim"`
	Inputs    []FitInputJSON    `json:"inputs"`
	Template  int               `json:"template"`
	Requests  FitKindsJSON      `json:"requests"`
	Warnings  []string          `json:"warnings"`
	Capacity  int64             `json:"capacity"`
	CapFrom   string            `json:"capacity_from"`
	Frontiers []FitFrontierJSON `json:"frontiers"`
	Compared  []FitCompareJSON  `json:"compared"`
	// Need is the step at --at's batch, uncapped (fits and oom: the capped
	// run's); null when not asked. Fixes are advise's fixes along the
	// curve with --advise; null when not asked.
	Need  *FitPointJSON `json:"need"`
	Fixes []FitFixJSON  `json:"fixes"`
}

// FitFixJSON is one of advise's fixes along the curve.
type FitFixJSON struct {
	Fix        string        `json:"fix"`  // in words
	Term       string        `json:"term"` // the term it shrinks (advise's)
	Carried    bool          `json:"carried"`
	Why        string        `json:"why"`             // when not carried
	Shrunk     int           `json:"shrunk_requests"` // the template's requests it makes smaller
	AddsAtPeak int64         `json:"adds_at_peak"`    // what else it adds at the step's peak, taken off the cap
	LargestFit int           `json:"largest_fit"`
	Need       int64         `json:"peak_reserved"` // the model's there
	FirstFail  *FitPointJSON `json:"first_fail"`    // the run at largest_fit+1; null when the search's end fits
	SearchMax  int           `json:"search_max"`
}

type FitCompareJSON struct {
	Path          string            `json:"path"`
	Batch         int               `json:"batch"`
	Predicted     int               `json:"predicted"`
	Recorded      int               `json:"recorded"`
	Matched       int               `json:"matched"`
	Exact         int               `json:"exact"`
	Mispredicted  []FitSizeMissJSON `json:"mispredicted"`
	PredictedOnly []FitGroupJSON    `json:"predicted_only"`
	RecordedOnly  []FitGroupJSON    `json:"recorded_only"`
}

type FitSizeMissJSON struct {
	Site          string `json:"site"`
	Count         int    `json:"count"`
	Bytes         int64  `json:"bytes"`
	RecordedBytes int64  `json:"recorded_bytes"`
	Transient     bool   `json:"workspaces"`
}

type FitInputJSON struct {
	Path  string `json:"path"`
	Batch int    `json:"batch"`
}

type FitKindsJSON struct {
	Constant   int            `json:"constant"`
	Linear     int            `json:"linear"`
	Quadratic  int            `json:"quadratic"`
	Irregular  int            `json:"irregular"`
	Unpaired   int            `json:"template_only"`
	OnlyOthers []int          `json:"only_in_input"`
	Groups     []FitGroupJSON `json:"named"`
}

type FitGroupJSON struct {
	Kind      string `json:"kind"`
	Site      string `json:"site"`
	Count     int    `json:"count"`
	Bytes     int64  `json:"bytes"`
	PerSample int64  `json:"per_sample"`
}

type FitFrontierJSON struct {
	Conf       string         `json:"conf"`
	LargestFit int            `json:"largest_fit"`
	Margin     int64          `json:"margin"`
	FirstFail  *FitPointJSON  `json:"first_fail"`
	Curve      FitCurveJSON   `json:"curve"`
	Points     []FitPointJSON `json:"points"`
}

type FitCurveJSON struct {
	AllocatedFixed     float64 `json:"allocated_fixed"`
	AllocatedPerSample float64 `json:"allocated_per_sample"`
	ReservedFixed      float64 `json:"reserved_fixed"`
	ReservedPerSample  float64 `json:"reserved_per_sample"`
	Points             int     `json:"points"`
}

type FitPointJSON struct {
	Batch         int         `json:"batch"`
	Fits          bool        `json:"fits"`
	PeakAllocated int64       `json:"peak_allocated"`
	PeakReserved  int64       `json:"peak_reserved"`
	Survived      int         `json:"survived_workspace_failures"`
	OOM           *FitOOMJSON `json:"oom"`
}

type FitOOMJSON struct {
	Event    int    `json:"event"`
	Step     int    `json:"step"`
	Phase    string `json:"phase"`
	Size     int64  `json:"size"`
	Reserved int64  `json:"reserved"`
	Site     string `json:"site"`
}

func fitPointJSON(p *fit.Point) FitPointJSON {
	v := FitPointJSON{Batch: p.Batch, Fits: p.Fits, PeakAllocated: p.PeakAllocated, PeakReserved: p.PeakReserved, Survived: p.Survived}
	if o := p.OOM; o != nil {
		v.OOM = &FitOOMJSON{Event: o.Index, Step: o.Step, Phase: o.Phase, Size: o.Size, Reserved: o.Reserved, Site: o.Site}
	}
	return v
}

func (r *Fit) document() any {
	res := r.Result
	m := res.Model
	dim := r.Dim
	if dim == "" {
		dim = "batch"
	}
	v := FitJSON{Dim: dim, Template: m.Template, Warnings: append([]string{}, m.Warnings...), Capacity: res.Capacity, CapFrom: r.CapFrom,
		Inputs: []FitInputJSON{}, Frontiers: []FitFrontierJSON{}}
	for _, in := range m.Inputs {
		v.Inputs = append(v.Inputs, FitInputJSON{Path: in.Path, Batch: in.Batch})
	}
	v.Requests = FitKindsJSON{Constant: m.Kinds[fit.SizeConstant], Linear: m.Kinds[fit.SizeLinear], Quadratic: m.Kinds[fit.SizeQuadratic],
		Irregular: m.Kinds[fit.SizeIrregular], Unpaired: m.Kinds[fit.SizeUnpaired], OnlyOthers: append([]int{}, m.OnlyOthers...), Groups: []FitGroupJSON{}}
	for _, gs := range [][]fit.Group{m.Irregular, m.Unpaired} {
		for _, g := range gs {
			v.Requests.Groups = append(v.Requests.Groups, FitGroupJSON{Kind: g.Kind.String(), Site: g.Label, Count: g.Count, Bytes: g.Bytes, PerSample: g.PerSample})
		}
	}
	for _, f := range res.Frontiers {
		fj := FitFrontierJSON{Conf: f.Conf, LargestFit: f.LargestFit, Margin: f.Margin, Points: []FitPointJSON{},
			Curve: FitCurveJSON{AllocatedFixed: f.Curve.AllocatedFixed, AllocatedPerSample: f.Curve.AllocatedPerSample,
				ReservedFixed: f.Curve.ReservedFixed, ReservedPerSample: f.Curve.ReservedPerSample, Points: f.Curve.Points}}
		if f.FirstFail != nil {
			p := fitPointJSON(f.FirstFail)
			fj.FirstFail = &p
		}
		for _, p := range f.Points {
			fj.Points = append(fj.Points, fitPointJSON(p))
		}
		v.Frontiers = append(v.Frontiers, fj)
	}
	v.Compared = []FitCompareJSON{}
	for _, c := range r.Comparisons {
		cj := FitCompareJSON{Path: c.Path, Batch: c.Batch, Predicted: c.Predicted, Recorded: c.Recorded, Matched: c.Matched, Exact: c.Exact,
			Mispredicted: []FitSizeMissJSON{}, PredictedOnly: []FitGroupJSON{}, RecordedOnly: []FitGroupJSON{}}
		for _, s := range c.Mispredicted {
			cj.Mispredicted = append(cj.Mispredicted, FitSizeMissJSON{Site: s.Label, Count: s.Count, Bytes: s.Bytes, RecordedBytes: s.RecordedBytes, Transient: s.Transient})
		}
		for _, g := range c.PredictedOnly {
			cj.PredictedOnly = append(cj.PredictedOnly, FitGroupJSON{Kind: "predicted_only", Site: g.Label, Count: g.Count, Bytes: g.Bytes})
		}
		for _, g := range c.RecordedOnly {
			cj.RecordedOnly = append(cj.RecordedOnly, FitGroupJSON{Kind: "recorded_only", Site: g.Label, Count: g.Count, Bytes: g.Bytes})
		}
		v.Compared = append(v.Compared, cj)
	}
	if r.Need != nil {
		p := fitPointJSON(r.Need)
		v.Need = &p
	}
	if r.Advised {
		v.Fixes = []FitFixJSON{}
		for _, f := range r.Fixes {
			var ff *FitPointJSON
			if f.FirstFail != nil {
				p := fitPointJSON(f.FirstFail)
				ff = &p
			}
			v.Fixes = append(v.Fixes, FitFixJSON{Fix: adviceFixWords(f.Advice).name, Term: adviseTermName(f.Advice.Term), Carried: f.Carried,
				Why: f.Why, Shrunk: f.Shrunk, AddsAtPeak: f.Advice.MovesBytes, LargestFit: f.LargestFit, Need: f.Need, FirstFail: ff, SearchMax: f.Max})
		}
	}
	return ResultDoc[FitJSON]{Schema: Schema, Kind: "fit", Result: v}
}
