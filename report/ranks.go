package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

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
	ew.printf("%d ranks: median peak allocated %s (%s is typical), worst %s on %s (%s over the median); %d outliers\n",
		len(f.Ranks), units.Bytes(f.MedianPeak), rankWho(f.Ranks[f.Typical]), units.Bytes(worst.PeakAllocated),
		rankWho(worst), signedPercent(worst.PeakAllocated-f.MedianPeak, f.MedianPeak), len(f.Outliers))
	for _, d := range f.Duplicates {
		ew.printf("warning: %s: one rank counted more than once\n", textsafe.Escape(d))
	}
	for _, x := range f.Ranks {
		for _, m := range x.Marks {
			ew.printf("%s (%s) is marked %s: %s\n", rankWho(x), textsafe.Escape(x.Name), m, markMeaning[m])
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
		var why []string
		for _, s := range o.Signals {
			why = append(why, signalText(x, s))
		}
		ew.printf("\noutlier: %s (robust z %.1f): %s; by site against %s:\n",
			rankWho(x), o.Z, strings.Join(why, "; "), rankWho(f.Ranks[f.Typical]))
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
			fmt.Fprintf(tw, "  %s=%d\t%d\t%s\t%s (%s)\n", textsafe.Escape(g.Coord), g.Value, len(g.Ranks), units.Bytes(g.MedianPeak),
				units.Bytes(f.Ranks[g.Worst].PeakAllocated), rankWho(f.Ranks[g.Worst]))
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

// rankName is a rank's number for the table's rank column ("—" when its
// file names none: the file column names it), with its marks.
func rankName(x attribution.RankStats) string {
	n := "—"
	if x.Rank >= 0 {
		n = fmt.Sprint(x.Rank)
	}
	return n + marks(x)
}

// rankWho names a rank in a sentence: "rank 3", or, when its file names
// no rank, the file.
func rankWho(x attribution.RankStats) string {
	if x.Rank >= 0 {
		return "rank " + rankName(x)
	}
	return textsafe.Escape(x.Name) + marks(x)
}

func marks(x attribution.RankStats) string {
	var b strings.Builder
	for _, m := range x.Marks {
		b.WriteString(" [" + m + "]")
	}
	return b.String()
}

// signalText says in words what one signal of outlier x is.
func signalText(x attribution.RankStats, s attribution.RankSignal) string {
	switch s.What {
	case attribution.SignalLeakFound:
		if s.Value == 0 {
			return fmt.Sprintf("no leak, where the median rank has one (z %.1f)", s.Z)
		}
		return fmt.Sprintf("a leak found, none on the median rank (z %.1f)", s.Z)
	case attribution.SignalRetries, attribution.SignalOOMs:
		return fmt.Sprintf("%s %d, the median %d (z %.1f)", s.What, s.Value, s.Median, s.Z)
	}
	return fmt.Sprintf("%s %s, the median %s (%s, %s, z %.1f)", s.What, units.Bytes(s.Value), units.Bytes(s.Median),
		signedBytes(s.Value-s.Median), signedPercent(s.Value-s.Median, s.Median), s.Z)
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
	Retries       *int64         `json:"alloc_retries"`
	OOMs          int64          `json:"ooms"`
	LeakFound     bool           `json:"leak_found"`
	LeakBytes     *int64         `json:"leak_bytes"`
	Z             float64        `json:"z"`
	Coords        map[string]int `json:"coords"`
	Marks         []string       `json:"marks,omitempty"`
}

// RankOutlierJSON is one outlier and its diff by site against the typical rank.
type RankOutlierJSON struct {
	Index   int              `json:"index"`
	Rank    int              `json:"rank"`
	Z       float64          `json:"z"`
	Signals []RankSignalJSON `json:"signals"`
	Sites   []DeltaJSON      `json:"sites"`
}

// RankSignalJSON is one number an outlier stands out in, against the
// fleet's median of it.
type RankSignalJSON struct {
	What   string  `json:"what"`
	Value  int64   `json:"value"`
	Median int64   `json:"median"`
	Z      float64 `json:"z"`
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
			PeakPhase: x.PeakPhase, OOMs: x.OOMs, LeakFound: x.LeakFound, Z: finite(f.Z[i]), Coords: map[string]int{}, Marks: x.Marks}
		if x.Retries >= 0 {
			v := x.Retries
			rj.Retries = &v
		}
		if x.LeakFound && x.Leak >= 0 {
			v := x.Leak
			rj.LeakBytes = &v
		}
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
		oj := RankOutlierJSON{Index: o.Index, Rank: f.Ranks[o.Index].Rank, Z: finite(o.Z), Signals: []RankSignalJSON{}, Sites: []DeltaJSON{}}
		for _, s := range o.Signals {
			oj.Signals = append(oj.Signals, RankSignalJSON{What: s.What, Value: s.Value, Median: s.Median, Z: finite(s.Z)})
		}
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
