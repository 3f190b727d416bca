package report

import (
	"encoding/json"
	"io"
	"math"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/report/jsondoc"
	"github.com/memscope/memscope/snapshot"
)

// jsonNumber is f, or 0 where JSON cannot hold it (NaN, ±Inf: a share of
// nothing allocated).
func jsonNumber(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// writeJSON writes v indented.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// categoryBlocks are the block counts of c by category name.
func categoryBlocks(c [attribution.NumCategories]attribution.Bytes) map[string]int {
	out := map[string]int{}
	for k := attribution.Category(0); k < attribution.NumCategories; k++ {
		out[k.String()] = c[k].Count
	}
	return out
}

func categories(c [attribution.NumCategories]attribution.Bytes) map[string]int64 {
	out := map[string]int64{}
	for k := attribution.Category(0); k < attribution.NumCategories; k++ {
		out[k.String()] = c[k].Bytes
	}
	return out
}

// SiteJSONOf is one site's bytes as the documents write it, its largest
// block's stack with the frames tab's site rule folds marked.
func SiteJSONOf(tab *attribution.SiteTable, site attribution.SiteBytes) SiteJSON {
	st := tab.Stacks()
	sj := SiteJSON{Label: site.Label, Kind: site.Site.Kind, Named: site.Site.Named(), Bytes: site.Bytes,
		Requested: site.Requested, Blocks: site.Count, Share: jsonNumber(site.Share),
		Stack: StackJSONOf(tab, site.Stack), FreeStack: site.FreeStack}
	switch site.Site.Kind {
	case attribution.SiteUser, attribution.SiteLibrary, attribution.SitePython, attribution.SiteBackward:
		fr := frameJSON(st.Frame(site.Site.Frame)) // a backward site's: the forward line it is the gradient of
		sj.Frame = &fr
	}
	if site.Site.HasCaller {
		c := frameJSON(st.Frame(site.Site.Caller))
		sj.Caller = &c
	}
	return sj
}

// PrivatePoolJSON is jsondoc.PrivatePoolJSON.
type PrivatePoolJSON = jsondoc.PrivatePoolJSON

// privatePoolsJSON converts a moment's private pools, by pool id; [] for
// none.
func privatePoolsJSON(pools []attribution.PrivatePool) []PrivatePoolJSON {
	out := []PrivatePoolJSON{}
	for _, p := range pools {
		out = append(out, PrivatePoolJSON{Pool: [2]int64{p.Pool.A, p.Pool.B}, Reserved: p.Reserved,
			Allocated: p.Allocated, Free: p.Free, Segments: p.Segments})
	}
	return out
}

// StepTableJSON is jsondoc.StepTableJSON.
type StepTableJSON = jsondoc.StepTableJSON

// StepRowJSON is jsondoc.StepRowJSON.
type StepRowJSON = jsondoc.StepRowJSON

// stepTableJSON converts a step table built over every step.
func stepTableJSON(t attribution.StepTable) StepTableJSON {
	j := StepTableJSON{Phases: append([]string{}, t.Phases...), Rows: []StepRowJSON{}, PeakPhase: t.PeakPhase}
	if t.PeakStep >= 0 {
		n := t.PeakStep
		j.PeakStep = &n
	}
	for _, r := range t.Rows {
		if r.Gap {
			continue // a table of every step has none
		}
		row := StepRowJSON{Step: r.Step, Floor: r.Floor, After: r.After, Peak: r.Peak, PeakPhase: r.PeakIn,
			PhasePeaks: map[string]int64{}, HoldsPeak: r.HoldsPeak}
		for i, v := range r.Peaks {
			if v >= 0 {
				row.PhasePeaks[t.Phases[i]] = v
			}
		}
		j.Rows = append(j.Rows, row)
	}
	return j
}

// deviceStepTableJSON is the table of every step of a device.
func deviceStepTableJSON(d *attribution.Device) StepTableJSON {
	return stepTableJSON(d.Phases.Table(d.Phases.AllSteps(), 0))
}

func numbers(n snapshot.Numbers) Numbers {
	return Numbers{Requested: n.Requested, Allocated: n.Allocated, Active: n.Active, Reserved: n.Reserved}
}

func peak(p snapshot.Peak) PeakJSON {
	return PeakJSON{Bytes: p.Bytes, EventIndex: p.Index, TimeEpochUS: p.TimeUS}
}

func frameJSON(f *snapshot.Frame) FrameJSON {
	return FrameJSON{Name: f.Name, Filename: f.Filename, Line: f.Line}
}

// StackJSONOf is stack id, innermost frame first, each frame the site
// rule of tab folds marked so.
func StackJSONOf(tab *attribution.SiteTable, id snapshot.StackID) []FrameJSON {
	st := tab.Stacks()
	out := []FrameJSON{}
	for _, fid := range st.Stack(id) {
		f := frameJSON(st.Frame(fid))
		f.Folded = !tab.Counts(fid)
		out = append(out, f)
	}
	return out
}

func warningStrings(ws []snapshot.Warning) []string {
	out := []string{}
	for _, w := range ws {
		out = append(out, w.Message)
	}
	return out
}

func inferenceJSON(inf *attribution.Inference) *InferenceJSON {
	return &InferenceJSON{Calls: inf.Calls, Weights: inf.Weights.Bytes, KVCache: inf.KVCache.Bytes,
		KVCacheBlocks: inf.KVCache.Count, KVCacheRequested: inf.KVRequested, Growing: inf.Growing,
		KVAfterPrefill: inf.KVAfterPrefill, DecodeSteps: inf.DecodeSteps, GrowthPerStep: inf.GrowthPerStep,
		PeakPhase: inf.PeakPhase, PeakIndex: inf.PeakIndex, Peak: inf.Peak, Activations: inf.Activations,
		DecodePeakIndex: inf.DecodePeakIndex, DecodePeak: inf.DecodePeak, DecodeActivations: inf.DecodeActivations,
		Engine: inf.Engine, Trainer: inf.Trainer}
}
