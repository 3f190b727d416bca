package attribution

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/memscope/memscope/snapshot"
)

// This file compares the ranks of one job: each rank's headline numbers
// (from its snapshot, or from the summary a rank wrote), the median rank,
// the worst, the outliers by a robust z-score of the allocated peak, ranks
// grouped by their parallel coordinates, and what differs by site between
// a typical rank and each outlier. It keeps a few numbers and the sites of
// each rank, not the snapshots: a thousand ranks are a few MB.

// RankStats are one rank's headline numbers.
type RankStats struct {
	Name   string // the file it came from, for messages and tables
	Rank   int    // the rank, -1 when not known
	Device int
	// PeakAllocated and PeakReserved are the device's own peaks;
	// DeviceUsed the driver's peak where a run recorded it, -1 otherwise.
	PeakAllocated, PeakReserved, DeviceUsed int64
	PeakStep                                int // -1 outside steps
	PeakPhase                               string
	// Sites holds the bytes at the allocated peak by site label (all of
	// them from a snapshot; the top ones from a summary).
	Sites map[string]int64
	// Coords are the rank's parallel coordinates where the run recorded
	// them ("dp", "tp", "pp": data, tensor, pipeline parallel).
	Coords map[string]int
	// Marks say why the rank's numbers are not to be taken as they are:
	// MarkTruncated (its file was cut short: the peak is the kept part's),
	// MarkContradiction (its own analysis found the trace contradicting
	// the segments).
	Marks []string
}

// Rank marks.
const (
	MarkTruncated     = "truncated"
	MarkContradiction = "contradiction"
)

// RankStatsOf reads a device's headline numbers (a snapshot records no
// device used: DeviceUsed is -1).
func RankStatsOf(d *Device, name string, rank int) RankStats {
	t := d.Timeline
	r := RankStats{Name: name, Rank: rank, Device: d.Device, PeakAllocated: t.PeakAllocated.Bytes,
		PeakReserved: t.PeakReserved.Bytes, DeviceUsed: -1, PeakStep: -1, Sites: map[string]int64{}}
	if pp := d.Phases.PeakPhase; pp >= 0 {
		ph := d.Phases.List[pp]
		r.PeakStep, r.PeakPhase = ph.Step, ph.Name
	}
	for _, s := range d.Peak.Sites {
		r.Sites[s.Label] += s.Bytes
	}
	for _, w := range t.Warnings {
		if w.Kind == snapshot.WarnContradiction {
			r.Mark(MarkContradiction)
		}
	}
	return r
}

// Mark adds mark m to r once.
func (r *RankStats) Mark(m string) {
	if !slices.Contains(r.Marks, m) {
		r.Marks = append(r.Marks, m)
	}
}

// Fleet is the comparison of a job's ranks.
type Fleet struct {
	Ranks []RankStats // in rank order (unknown ranks last, by name)
	// MedianPeak is the median allocated peak, MAD the median absolute
	// deviation from it; Typical the rank whose peak is nearest the median
	// (an index into Ranks), Worst the highest peak.
	MedianPeak, MAD int64
	Typical, Worst  int
	// Z holds each rank's robust z-score of its allocated peak:
	// 0.6745 × (peak − median) / MAD (Iglewicz and Hoaglin), or, where half
	// the ranks or more have the median's peak (MAD 0), (peak − median) /
	// (1.2533 × the mean absolute deviation); 0 for every rank when all
	// peaks are equal.
	Z []float64
	// Outliers are the ranks with |Z| > OutlierZ, largest |Z| first, each
	// with what differs by site from the typical rank.
	Outliers []RankOutlier
	// Groups are the ranks by each recorded parallel coordinate ("dp",
	// "tp", "pp"): per value of the coordinate, the median and the worst
	// peak, so a tensor- or pipeline-parallel imbalance shows as one
	// value's row.
	Groups []RankGroup
	// Duplicates name the rank numbers given by more than one input
	// (rank0 and rank00), each with its files.
	Duplicates []string
}

// OutlierZ is the robust z-score beyond which a rank is an outlier.
const OutlierZ = 3.5

// RankOutlier is one outlying rank and its difference by site from the
// typical rank (B: the outlier; A: the typical rank), largest change first.
type RankOutlier struct {
	Index int // into Fleet.Ranks
	Z     float64
	Sites []Delta
}

// RankGroup is the ranks that share one value of a parallel coordinate.
type RankGroup struct {
	Coord      string
	Value      int
	Ranks      []int // indexes into Fleet.Ranks
	MedianPeak int64
	Worst      int // index into Fleet.Ranks
}

// CompareRanks compares ranks (at least one).
func CompareRanks(ranks []RankStats) *Fleet {
	f := &Fleet{Ranks: slices.Clone(ranks)}
	sort.SliceStable(f.Ranks, func(i, j int) bool {
		a, b := f.Ranks[i], f.Ranks[j]
		if (a.Rank < 0) != (b.Rank < 0) {
			return a.Rank >= 0
		}
		if a.Rank != b.Rank {
			return a.Rank < b.Rank
		}
		return a.Name < b.Name
	})
	n := len(f.Ranks)
	if n == 0 {
		return f
	}
	for i := 0; i < n; {
		j := i + 1
		for j < n && f.Ranks[i].Rank >= 0 && f.Ranks[j].Rank == f.Ranks[i].Rank {
			j++
		}
		if j-i > 1 {
			var names []string
			for _, r := range f.Ranks[i:j] {
				names = append(names, r.Name)
			}
			f.Duplicates = append(f.Duplicates, fmt.Sprintf("rank %d is given by %d inputs: %s", f.Ranks[i].Rank, j-i, strings.Join(names, ", ")))
		}
		i = j
	}
	peaks := make([]int64, n)
	for i, r := range f.Ranks {
		peaks[i] = r.PeakAllocated
	}
	f.MedianPeak = median(peaks)
	dev := make([]int64, n)
	var sumDev float64
	for i, p := range peaks {
		dev[i] = abs(p - f.MedianPeak)
		sumDev += float64(dev[i])
	}
	f.MAD = median(dev)
	f.Z = make([]float64, n)
	scale := 0.0
	switch {
	case f.MAD > 0:
		scale = float64(f.MAD) / 0.6745
	case sumDev > 0:
		scale = 1.2533 * sumDev / float64(n)
	}
	for i, p := range peaks {
		if scale > 0 {
			f.Z[i] = float64(p-f.MedianPeak) / scale
		}
		if abs(p-f.MedianPeak) < abs(peaks[f.Typical]-f.MedianPeak) {
			f.Typical = i
		}
		if p > peaks[f.Worst] {
			f.Worst = i
		}
	}
	for i, z := range f.Z {
		if math.Abs(z) > OutlierZ {
			f.Outliers = append(f.Outliers, RankOutlier{Index: i, Z: z, Sites: Deltas(f.Ranks[f.Typical].Sites, f.Ranks[i].Sites)})
		}
	}
	sort.SliceStable(f.Outliers, func(i, j int) bool { return math.Abs(f.Outliers[i].Z) > math.Abs(f.Outliers[j].Z) })
	f.Groups = groupRanks(f.Ranks, peaks)
	return f
}

// groupRanks groups the ranks by each coordinate some rank records, in the
// order dp, tp, pp, then others by name; a coordinate whose every value
// is one rank's (a local rank on one node), or that all ranks share, makes
// no groups.
func groupRanks(ranks []RankStats, peaks []int64) []RankGroup {
	coords := map[string]bool{}
	for _, r := range ranks {
		for c := range r.Coords {
			coords[c] = true
		}
	}
	order := func(c string) int {
		if i := slices.Index([]string{"dp", "tp", "pp"}, c); i >= 0 {
			return i
		}
		return 3
	}
	names := make([]string, 0, len(coords))
	for c := range coords {
		names = append(names, c)
	}
	sort.Slice(names, func(i, j int) bool {
		if oi, oj := order(names[i]), order(names[j]); oi != oj {
			return oi < oj
		}
		return names[i] < names[j]
	})
	var out []RankGroup
	for _, c := range names {
		byValue := map[int][]int{}
		for i, r := range ranks {
			if v, ok := r.Coords[c]; ok {
				byValue[v] = append(byValue[v], i)
			}
		}
		values := make([]int, 0, len(byValue))
		shared := false
		for v, rs := range byValue {
			values = append(values, v)
			shared = shared || len(rs) > 1
		}
		if len(values) < 2 || !shared {
			continue // one value for all, or one rank per value: no group to compare
		}
		sort.Ints(values)
		for _, v := range values {
			g := RankGroup{Coord: c, Value: v, Ranks: byValue[v], Worst: byValue[v][0]}
			ps := make([]int64, len(g.Ranks))
			for k, i := range g.Ranks {
				ps[k] = peaks[i]
				if peaks[i] > peaks[g.Worst] {
					g.Worst = i
				}
			}
			g.MedianPeak = median(ps)
			out = append(out, g)
		}
	}
	return out
}

// median returns the median of xs (the lower of the middle two for an
// even count, so that it is a value some rank has).
func median(xs []int64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
