package attribution

import (
	"math"
	"testing"
)

// TestCompareRanks: the median, the MAD's robust z-scores (and the mean
// deviation's where half the ranks sit at the median), the outlier with
// its diff by site against the rank nearest the median, and the groups by
// coordinate, on ranks whose numbers are given.
func TestCompareRanks(t *testing.T) {
	mk := func(rank int, peak int64, tp int, sites map[string]int64) RankStats {
		return RankStats{Name: "r", Rank: rank, PeakAllocated: peak, DeviceUsed: -1, PeakStep: -1, Sites: sites,
			Coords: map[string]int{"tp": tp, "local_rank": rank}}
	}
	base := map[string]int64{"a.py:1 f": 100}
	big := map[string]int64{"a.py:1 f": 100, "b.py:7 g": 900}
	// Peaks 100..107 and one of 1000: median 104, MAD 2, so
	// z = 0.6745 × (1000 − 104) / 2.
	var ranks []RankStats
	for i := range 8 {
		ranks = append(ranks, mk(i, int64(100+i), i%2, base))
	}
	ranks = append(ranks, mk(8, 1000, 0, big))
	f := CompareRanks(ranks)
	// Sorted peaks: 100..107, 1000; the 5th of 9 is 104.
	if f.MedianPeak != 104 || f.MAD != 2 || f.Worst != 8 || f.Ranks[f.Typical].PeakAllocated != 104 {
		t.Errorf("median %d MAD %d worst %d typical peak %d; want 104, 2, rank 8, 104", f.MedianPeak, f.MAD, f.Worst, f.Ranks[f.Typical].PeakAllocated)
	}
	if want := 0.6745 * (1000 - 104) / 2.0; math.Abs(f.Z[8]-want) > 1e-9 {
		t.Errorf("z of rank 8 = %v, want %v", f.Z[8], want)
	}
	if len(f.Outliers) != 1 || f.Outliers[0].Index != 8 || f.Outliers[0].Sites[0].Name != "b.py:7 g" || f.Outliers[0].Sites[0].Change != 900 {
		t.Errorf("outliers %+v, want rank 8 with b.py:7 g +900", f.Outliers)
	}
	// tp groups (two values, shared); local_rank has one rank per value: none.
	if len(f.Groups) != 2 || f.Groups[0].Coord != "tp" || f.Groups[0].Value != 0 || len(f.Groups[0].Ranks) != 5 || f.Groups[0].Worst != 8 {
		t.Errorf("groups %+v, want tp=0 (5 ranks, worst rank 8) and tp=1", f.Groups)
	}
	// Most ranks equal: MAD 0, the mean absolute deviation scales.
	var same []RankStats
	for i := range 8 {
		same = append(same, mk(i, 500, 0, base))
	}
	g := CompareRanks(append(same, mk(8, 900, 0, big)))
	if want := 400 / (1.2533 * 400 / 9); g.MAD != 0 || math.Abs(g.Z[8]-want) > 1e-9 || len(g.Outliers) != 1 {
		t.Errorf("MAD %d z %v outliers %d; want 0, %v, 1", g.MAD, g.Z[8], len(g.Outliers), want)
	}
	// All equal: no z, no outlier; one rank alone is its own median.
	if h := CompareRanks(same[:3]); len(h.Outliers) != 0 || h.Z[0] != 0 {
		t.Errorf("equal ranks: %+v", h)
	}
	if one := CompareRanks(same[:1]); one.MedianPeak != 500 || one.Typical != 0 || one.Worst != 0 {
		t.Errorf("one rank: %+v", one)
	}
}
