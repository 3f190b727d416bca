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
// the worst, the outliers, ranks grouped by their parallel coordinates, and
// what differs by site between a typical rank and each outlier. A rank is
// an outlier by any of the numbers that tell a sick rank from its peers:
// its allocated, reserved and device-used peaks, its allocator retries and
// out-of-memory errors, a leak its analysis found. Each is held against the
// fleet by a robust z-score whose spread has a floor, so that ranks that
// differ only by noise are not outliers however alike the rest are. It
// keeps a few numbers and the sites of each rank, not the snapshots: a
// thousand ranks are a few MB.

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
	// Retries are the allocator's retries (num_alloc_retries: cudaMalloc
	// failed, the cache was freed and the call retried) where a run
	// recorded memory_stats(), -1 otherwise; OOMs the out-of-memory errors
	// it recorded.
	Retries, OOMs int64
	// Leak is the bytes the rank kept from step to step: blocks born in
	// its steady steps, at a site that kept some in at least three of
	// them, still live at the end (Leak.Sites), whether or not the floor
	// made the staircase of a leak finding (LeakFound); -1 where the input
	// gives the finding only (a summary). A young leak, too short for the
	// staircase, shows here against ranks that keep nothing.
	LeakFound bool
	Leak      int64
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
// device used and no retries: DeviceUsed and Retries are -1).
func RankStatsOf(d *Device, name string, rank int) RankStats {
	t := d.Timeline
	r := RankStats{Name: name, Rank: rank, Device: d.Device, PeakAllocated: t.PeakAllocated.Bytes,
		PeakReserved: t.PeakReserved.Bytes, DeviceUsed: -1, PeakStep: -1, Retries: -1, OOMs: int64(len(t.OOMs)),
		Sites: map[string]int64{}}
	if pp := d.Phases.PeakPhase; pp >= 0 {
		ph := d.Phases.List[pp]
		r.PeakStep, r.PeakPhase = ph.Step, ph.Name
	}
	for _, s := range d.Peak.Sites {
		r.Sites[s.Label] += s.Bytes
	}
	if l := d.Leak; l != nil {
		r.LeakFound = l.Found
		for _, s := range l.Sites {
			r.Leak += s.Bytes
		}
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
	// MedianPeak is the median allocated peak (MedianWorst's rule), MAD
	// the median absolute deviation from it; Typical the rank whose peak
	// is nearest the median, outliers last (an index into Ranks), Worst
	// the highest peak.
	MedianPeak, MAD int64
	Typical, Worst  int
	// Z holds each rank's robust z-score in the number it stands out in
	// most (the signal of largest |z|; see RankSignal), 0 for a rank like
	// the others in every one.
	Z []float64
	// Outliers are the ranks with |Z| > OutlierZ, largest |Z| first, each
	// with the signals that make it one and what differs by site from
	// the typical rank.
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

// The floors of a signal's spread. Ranks of one job are near-identical, so
// their median absolute deviation can be a few KiB, and a rank 2% above
// the rest would be many deviations out: the spread is at least
// noiseFraction of the median (and noiseBytes) for a size, noiseCount for a
// count, so a rank must be OutlierZ × that away — 7% of the median, or one
// retry, OOM or leak finding more than the median rank — to stand out.
const (
	noiseFraction = 0.02
	noiseBytes    = 1 << 20
	noiseCount    = 0.25
)

// Rank signals: the numbers an outlier stands out in.
const (
	SignalAllocated  = "peak allocated"
	SignalReserved   = "peak reserved"
	SignalDeviceUsed = "device used"
	SignalRetries    = "alloc retries"
	SignalOOMs       = "OOMs"
	SignalLeak       = "kept from step to step"
	SignalLeakFound  = "leak finding"
)

// RankSignal is one number of a rank against the fleet's median of it:
// Z = (Value − Median) / spread, the spread 1.4826 × the median absolute
// deviation (the standard deviation of normal noise) or the signal's
// floor, whichever is larger. A leak finding's Value is 1 for a finding,
// 0 for none.
type RankSignal struct {
	What          string
	Value, Median int64
	Z             float64
}

// RankOutlier is one outlying rank: the signals beyond OutlierZ, largest
// |Z| first, and its difference by site from the typical rank (B: the
// outlier; A: the typical rank), largest change first.
type RankOutlier struct {
	Index   int // into Fleet.Ranks
	Z       float64
	Signals []RankSignal
	Sites   []Delta
}

// RankGroup is the ranks that share one value of a parallel coordinate.
type RankGroup struct {
	Coord      string
	Value      int
	Ranks      []int // indexes into Fleet.Ranks
	MedianPeak int64
	Worst      int // index into Fleet.Ranks
}

// MedianWorst is the one rule for "the median rank and the worst": the
// median of values (the mean of the middle two for an even count) and the
// index of the highest (the first of equals). values is not empty.
func MedianWorst(values []int64) (median int64, worst int) {
	s := slices.Clone(values)
	slices.Sort(s)
	m := len(s) / 2
	median = s[m]
	if len(s)%2 == 0 {
		median = s[m-1] + (s[m]-s[m-1])/2
	}
	for i, v := range values {
		if v > values[worst] {
			worst = i
		}
	}
	return median, worst
}

// median is MedianWorst's median.
func median(values []int64) int64 {
	m, _ := MedianWorst(values)
	return m
}

// signal is one signal's values over the ranks: get returns a rank's
// value and whether the rank has one; floor the spread's floor for the
// median.
type signal struct {
	what  string
	get   func(r *RankStats) (int64, bool)
	floor func(median int64) float64
}

func bytesFloor(median int64) float64 {
	return max(noiseFraction*math.Abs(float64(median)), noiseBytes)
}

func countFloor(int64) float64 { return noiseCount }

var rankSignals = []signal{
	{SignalAllocated, func(r *RankStats) (int64, bool) { return r.PeakAllocated, true }, bytesFloor},
	{SignalReserved, func(r *RankStats) (int64, bool) { return r.PeakReserved, true }, bytesFloor},
	{SignalDeviceUsed, func(r *RankStats) (int64, bool) { return r.DeviceUsed, r.DeviceUsed >= 0 }, bytesFloor},
	{SignalRetries, func(r *RankStats) (int64, bool) { return r.Retries, r.Retries >= 0 }, countFloor},
	{SignalOOMs, func(r *RankStats) (int64, bool) { return r.OOMs, r.OOMs >= 0 }, countFloor},
	{SignalLeak, func(r *RankStats) (int64, bool) { return r.Leak, r.Leak >= 0 }, bytesFloor},
	{SignalLeakFound, func(r *RankStats) (int64, bool) {
		if r.LeakFound {
			return 1, true
		}
		return 0, true
	}, countFloor},
}

// signals returns each rank's signals (in rankSignals' order; a signal a
// rank has no value of is left out) and the allocated peaks' MAD.
func signals(ranks []RankStats) ([][]RankSignal, int64) {
	out := make([][]RankSignal, len(ranks))
	var mad int64
	for k, sg := range rankSignals {
		var idx []int
		var vals []int64
		for i := range ranks {
			if v, ok := sg.get(&ranks[i]); ok {
				idx, vals = append(idx, i), append(vals, v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		med := median(vals)
		dev := make([]int64, len(vals))
		for i, v := range vals {
			dev[i] = abs(v - med)
		}
		d := median(dev)
		if k == 0 {
			mad = d
		}
		spread := max(1.4826*float64(d), sg.floor(med))
		for i, v := range vals {
			out[idx[i]] = append(out[idx[i]], RankSignal{What: sg.what, Value: v, Median: med, Z: float64(v-med) / spread})
		}
	}
	return out, mad
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
	f.MedianPeak, f.Worst = MedianWorst(peaks)
	sigs, mad := signals(f.Ranks)
	f.MAD = mad
	f.Z = make([]float64, n)
	for i, ss := range sigs {
		var out []RankSignal
		for _, s := range ss {
			if math.Abs(s.Z) > math.Abs(f.Z[i]) {
				f.Z[i] = s.Z
			}
			if math.Abs(s.Z) > OutlierZ {
				out = append(out, s)
			}
		}
		if len(out) > 0 {
			sort.SliceStable(out, func(a, b int) bool { return math.Abs(out[a].Z) > math.Abs(out[b].Z) })
			f.Outliers = append(f.Outliers, RankOutlier{Index: i, Z: f.Z[i], Signals: out})
		}
	}
	outlier := func(i int) bool { return math.Abs(f.Z[i]) > OutlierZ }
	for i, p := range peaks {
		a, b := abs(p-f.MedianPeak), abs(peaks[f.Typical]-f.MedianPeak)
		if outlier(f.Typical) && !outlier(i) || outlier(f.Typical) == outlier(i) && a < b {
			f.Typical = i
		}
	}
	for k := range f.Outliers {
		o := &f.Outliers[k]
		o.Sites = Deltas(f.Ranks[f.Typical].Sites, f.Ranks[o.Index].Sites)
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
