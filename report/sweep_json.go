package report

import (
	"io"
	"sort"

	"github.com/memscope/memscope/capture"
)

// SweepDoc is the JSON document of 'memscope summary --run DIR' on a sweep.
// Sizes are bytes; the fit's fixed and slope are bytes and bytes per sample.
type SweepDoc struct {
	Schema    string                        `json:"schema"`
	Kind      string                        `json:"kind"` // "sweep"
	Dir       string                        `json:"dir"`
	Results   *capture.Results              `json:"results"`
	Fits      []capture.Fit                 `json:"fits"`
	Frontiers []capture.Frontier            `json:"frontiers"`
	Savings   []capture.Saving              `json:"savings"`
	Spreads   map[string]capture.RankSpread `json:"rank_spreads"`
	Warnings  []string                      `json:"warnings"`
}

// SweepJSON writes a sweep analysis as JSON.
func SweepJSON(w io.Writer, a *capture.SweepAnalysis) error {
	return WriteJSON(w, SweepDoc{Schema: Schema, Kind: "sweep", Dir: a.Dir, Results: a.Results,
		Fits: nonNilSlice(a.Fits), Frontiers: nonNilSlice(a.Frontiers), Savings: nonNilSlice(a.Savings),
		Spreads: a.Spreads, Warnings: nonNilSlice(a.Warnings)})
}

// RunDoc is the JSON document of 'memscope summary --run DIR' on a capture.
type RunDoc struct {
	Schema   string                 `json:"schema"`
	Kind     string                 `json:"kind"` // "capture"
	Dir      string                 `json:"dir"`
	Run      *capture.Run           `json:"run"`
	Ranks    []*capture.CaptureRank `json:"ranks"`
	Missing  []int                  `json:"missing_ranks"`
	Phases   []capture.PhasePeak    `json:"phases"`
	Spread   *capture.RankSpread    `json:"worst_rank"`
	Files    []string               `json:"files"`
	Warnings []string               `json:"warnings"`
}

// RunJSON writes a capture run analysis as JSON.
func RunJSON(w io.Writer, a *capture.RunAnalysis) error {
	return WriteJSON(w, RunDoc{Schema: Schema, Kind: "capture", Dir: a.Dir, Run: a.Run,
		Ranks: nonNilSlice(a.Ranks), Missing: nonNilSlice(a.Missing), Phases: nonNilSlice(a.Phases),
		Spread: a.Spread, Files: nonNilSlice(a.Files), Warnings: nonNilSlice(a.Warnings)})
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func sortStrings(s []string) { sort.Strings(s) }
