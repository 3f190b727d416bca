package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/textsafe"
	"github.com/memscope/memscope/internal/units"
)

// Ranks is 'memscope ranks': a job's ranks compared.
type Ranks struct {
	Fleet *attribution.Fleet
	// Top is how many ranks the text table shows (the worst first, every
	// outlier always) and how many differing sites per outlier.
	Top int
	// Skipped names the inputs that could not be read, with why.
	Skipped []string
}

func (*Ranks) Kind() string { return "ranks" }

func (r *Ranks) writeText(w io.Writer) error {
	ew := &errWriter{w: w}
	f := r.Fleet
	if len(f.Ranks) == 0 {
		ew.printf("no rank could be read\n")
		for _, s := range r.Skipped {
			ew.printf("  skipped %s\n", textsafe.Escape(s))
		}
		return ew.err
	}
	worst := f.Ranks[f.Worst]
	ew.printf("%d ranks: median peak allocated %s (rank %s is typical), worst %s on rank %s (%s over the median); %d outliers\n",
		len(f.Ranks), units.Bytes(f.MedianPeak), rankName(f.Ranks[f.Typical]), units.Bytes(worst.PeakAllocated),
		rankName(worst), signedPercent(worst.PeakAllocated-f.MedianPeak, f.MedianPeak), len(f.Outliers))
	for _, d := range f.Duplicates {
		ew.printf("warning: %s: one rank counted more than once\n", textsafe.Escape(d))
	}
	for _, x := range f.Ranks {
		for _, m := range x.Marks {
			ew.printf("rank %s (%s) is marked %s: %s\n", rankName(x), textsafe.Escape(x.Name), m, markMeaning[m])
		}
	}
	ew.printf("\n")
	tw := newTable(ew, 0)
	fmt.Fprintf(tw, "rank\tpeak allocated\tpeak reserved\tdevice used\tpeak at\tz\tfile\n")
	for _, i := range r.shown() {
		x := f.Ranks[i]
		used := "not recorded"
		if x.DeviceUsed >= 0 {
			used = units.Bytes(x.DeviceUsed)
		}
		at := "—"
		switch {
		case x.PeakStep >= 0:
			at = fmt.Sprintf("step %d %s", x.PeakStep, x.PeakPhase)
		case x.PeakPhase != "":
			at = x.PeakPhase
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f\t%s\n", rankName(x), units.Bytes(x.PeakAllocated), units.Bytes(x.PeakReserved),
			used, textsafe.Escape(at), f.Z[i], textsafe.Escape(x.Name))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := len(f.Ranks) - len(r.shown()); n > 0 {
		ew.printf("(%d more ranks within the usual range; --top N shows more, --json all)\n", n)
	}
	for _, o := range f.Outliers {
		x := f.Ranks[o.Index]
		ew.printf("\noutlier: rank %s, peak allocated %s, %s against the median (robust z %.1f); by site against rank %s:\n",
			rankName(x), units.Bytes(x.PeakAllocated), signedPercent(x.PeakAllocated-f.MedianPeak, f.MedianPeak), o.Z, rankName(f.Ranks[f.Typical]))
		for k, d := range o.Sites {
			if k == r.Top || d.Change == 0 {
				break
			}
			ew.printf("  %11s  %s\n", signedBytes(d.Change), textsafe.Escape(d.Name))
		}
	}
	if len(f.Groups) > 0 {
		ew.printf("\nby parallel coordinate:\n")
		tw := newTable(ew, 0)
		fmt.Fprintf(tw, "  coordinate\tranks\tmedian peak\tworst\n")
		for _, g := range f.Groups {
			fmt.Fprintf(tw, "  %s=%d\t%d\t%s\t%s (rank %s)\n", textsafe.Escape(g.Coord), g.Value, len(g.Ranks), units.Bytes(g.MedianPeak),
				units.Bytes(f.Ranks[g.Worst].PeakAllocated), rankName(f.Ranks[g.Worst]))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, s := range r.Skipped {
		ew.printf("skipped %s\n", textsafe.Escape(s))
	}
	return ew.err
}

// shown is the ranks the text table lists: all up to Top, else the Top
// highest peaks and every outlier, in rank order.
func (r *Ranks) shown() []int {
	f := r.Fleet
	n := len(f.Ranks)
	if r.Top <= 0 || n <= r.Top {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	keep := map[int]bool{}
	for _, o := range f.Outliers {
		keep[o.Index] = true
	}
	byPeak := make([]int, n)
	for i := range byPeak {
		byPeak[i] = i
	}
	slices.SortStableFunc(byPeak, func(a, b int) int { return cmp.Compare(f.Ranks[b].PeakAllocated, f.Ranks[a].PeakAllocated) })
	for _, i := range byPeak[:r.Top] {
		keep[i] = true
	}
	var out []int
	for i := range n {
		if keep[i] {
			out = append(out, i)
		}
	}
	return out
}

func rankName(x attribution.RankStats) string {
	n := "?"
	if x.Rank >= 0 {
		n = fmt.Sprint(x.Rank)
	}
	for _, m := range x.Marks {
		n += " [" + m + "]"
	}
	return n
}

// markMeaning says what a rank's mark means for its numbers.
var markMeaning = map[string]string{
	attribution.MarkTruncated:     "its file was cut short, so its peak is the kept part's, not the rank's",
	attribution.MarkContradiction: "its own analysis found the trace contradicting its segments, so its numbers may be wrong",
}

// RanksJSON is the ranks document's result.
type RanksJSON struct {
	Ranks      []RankJSON        `json:"ranks"`
	MedianPeak int64             `json:"median_peak_allocated"`
	MAD        int64             `json:"mad"`
	Typical    int               `json:"typical"`
	Worst      int               `json:"worst"`
	Outliers   []RankOutlierJSON `json:"outliers"`
	Groups     []RankGroupJSON   `json:"groups"`
	Skipped    []string          `json:"skipped"`
	Duplicates []string          `json:"duplicates,omitempty"`
}

// RankJSON is one rank's numbers.
type RankJSON struct {
	Rank          int            `json:"rank"`
	File          string         `json:"file"`
	Device        int            `json:"device"`
	PeakAllocated int64          `json:"peak_allocated"`
	PeakReserved  int64          `json:"peak_reserved"`
	DeviceUsed    *int64         `json:"device_used_peak"`
	PeakStep      *int           `json:"peak_step"`
	PeakPhase     string         `json:"peak_phase"`
	Z             float64        `json:"z"`
	Coords        map[string]int `json:"coords"`
	Marks         []string       `json:"marks,omitempty"`
}

// RankOutlierJSON is one outlier and its diff by site against the typical rank.
type RankOutlierJSON struct {
	Index int         `json:"index"`
	Rank  int         `json:"rank"`
	Z     float64     `json:"z"`
	Sites []DeltaJSON `json:"sites"`
}

// RankGroupJSON is the ranks of one value of a parallel coordinate.
type RankGroupJSON struct {
	Coord      string `json:"coord"`
	Value      int    `json:"value"`
	Ranks      []int  `json:"ranks"`
	MedianPeak int64  `json:"median_peak_allocated"`
	Worst      int    `json:"worst"`
}

// DeltaJSON is a change by name between the typical rank (a) and an outlier (b).
type DeltaJSON struct {
	Name   string `json:"site"`
	A      int64  `json:"typical"`
	B      int64  `json:"outlier"`
	Change int64  `json:"change"`
}

func (r *Ranks) document() any {
	f := r.Fleet
	j := RanksJSON{Ranks: []RankJSON{}, MedianPeak: f.MedianPeak, MAD: f.MAD, Typical: f.Typical, Worst: f.Worst,
		Outliers: []RankOutlierJSON{}, Groups: []RankGroupJSON{}, Skipped: append([]string{}, r.Skipped...), Duplicates: f.Duplicates}
	for i, x := range f.Ranks {
		rj := RankJSON{Rank: x.Rank, File: x.Name, Device: x.Device, PeakAllocated: x.PeakAllocated, PeakReserved: x.PeakReserved,
			PeakPhase: x.PeakPhase, Z: finite(f.Z[i]), Coords: map[string]int{}, Marks: x.Marks}
		if x.DeviceUsed >= 0 {
			v := x.DeviceUsed
			rj.DeviceUsed = &v
		}
		if x.PeakStep >= 0 {
			v := x.PeakStep
			rj.PeakStep = &v
		}
		for k, v := range x.Coords {
			rj.Coords[k] = v
		}
		j.Ranks = append(j.Ranks, rj)
	}
	for _, o := range f.Outliers {
		oj := RankOutlierJSON{Index: o.Index, Rank: f.Ranks[o.Index].Rank, Z: finite(o.Z), Sites: []DeltaJSON{}}
		for k, d := range o.Sites {
			if (r.Top > 0 && k == r.Top) || d.Change == 0 {
				break
			}
			oj.Sites = append(oj.Sites, DeltaJSON{d.Name, d.A, d.B, d.Change})
		}
		j.Outliers = append(j.Outliers, oj)
	}
	for _, g := range f.Groups {
		j.Groups = append(j.Groups, RankGroupJSON{Coord: g.Coord, Value: g.Value, Ranks: append([]int{}, g.Ranks...), MedianPeak: g.MedianPeak, Worst: g.Worst})
	}
	return ResultDoc[RanksJSON]{Schema: Schema, Kind: "ranks", Result: j}
}

func finite(z float64) float64 {
	if math.IsInf(z, 0) || math.IsNaN(z) {
		return 0
	}
	return math.Round(z*100) / 100
}
