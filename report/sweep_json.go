package report

import (
	"sort"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/sweep"
)

// SweepDoc is the JSON document of 'memscope summary --run DIR' on a sweep.
// Sizes are bytes; the fit's fixed and slope are bytes and bytes per sample.
type SweepDoc struct {
	Schema    string                      `json:"schema"`
	Kind      string                      `json:"kind"` // "sweep"
	Dir       string                      `json:"dir"`
	Results   *capture.Results            `json:"results"`
	Fits      []sweep.Fit                 `json:"fits"`
	Frontiers []sweep.Frontier            `json:"frontiers"`
	Savings   []sweep.Saving              `json:"savings"`
	Spreads   map[string]sweep.RankSpread `json:"rank_spreads"`
	Warnings  []string                    `json:"warnings"`
}

func sweepDoc(a *sweep.Analysis) SweepDoc {
	return SweepDoc{Schema: Schema, Kind: "sweep", Dir: a.Dir, Results: a.Results,
		Fits: nonNilSlice(a.Fits), Frontiers: nonNilSlice(a.Frontiers), Savings: nonNilSlice(a.Savings),
		Spreads: a.Spreads, Warnings: nonNilSlice(sweepWarnings(a))}
}

// RunDoc is the JSON document of 'memscope summary --run DIR' on a capture.
type RunDoc struct {
	Schema   string                 `json:"schema"`
	Kind     string                 `json:"kind"` // "capture"
	Dir      string                 `json:"dir"`
	Run      *capture.Run           `json:"run"`
	Ranks    []*capture.CaptureRank `json:"ranks"`
	Missing  []int                  `json:"missing_ranks"`
	Phases   []sweep.PhasePeak      `json:"phases"`
	Spread   *sweep.RankSpread      `json:"worst_rank"`
	Files    []string               `json:"files"`
	Warnings []string               `json:"warnings"`
}

func runDoc(a *sweep.RunSummary) RunDoc {
	return RunDoc{Schema: Schema, Kind: "capture", Dir: a.Dir, Run: a.Run,
		Ranks: nonNilSlice(a.Ranks), Missing: nonNilSlice(a.Missing), Phases: nonNilSlice(a.Phases),
		Spread: a.Spread, Files: nonNilSlice(a.Files), Warnings: runWarnings(a.Warnings)}
}

// SweepDiffResultJSON is the result of the diff document of two sweep runs.
type SweepDiffResultJSON struct {
	A     string        `json:"a"`
	B     string        `json:"b"`
	Sweep SweepDiffJSON `json:"sweep"`
}

// SweepDiffJSON is the comparison of two sweep runs, each list largest
// change first.
type SweepDiffJSON struct {
	Points []attribution.Delta `json:"points"` // "fp32 batch 8": peak allocated
	Phases []attribution.Delta `json:"phases"` // "fp32 batch 8 backward"
	Fits   []attribution.Delta `json:"fits"`   // "fp32 fixed", "fp32 slope per sample"
}

func sweepDiffJSON(d *sweep.Diff) SweepDiffJSON {
	points, phases, fits := sweepDiffRows(d, false)
	return SweepDiffJSON{Points: points, Phases: phases, Fits: fits}
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func sortStrings(s []string) { sort.Strings(s) }
