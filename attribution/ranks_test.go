package attribution

import (
	"math"
	"testing"
)

// TestCompareRanks: the median, the robust z-scores (the deviation from
// the median over 1.4826 × the MAD, or over the noise floor, 2% of the
// median, where that is larger), the outlier with its diff by site against
// the rank nearest the median, and the groups by coordinate, on ranks whose
// numbers are given.
func TestCompareRanks(t *testing.T) {
	const gib, mib = int64(1) << 30, int64(1) << 20
	mk := func(rank int, peak int64, tp int, sites map[string]int64) RankStats {
		return RankStats{Name: "r", Rank: rank, PeakAllocated: peak, PeakReserved: peak, DeviceUsed: -1, PeakStep: -1,
			Retries: -1, OOMs: -1, Leak: -1, Sites: sites, Coords: map[string]int{"tp": tp, "local_rank": rank}}
	}
	base := map[string]int64{"a.py:1 f": 100}
	big := map[string]int64{"a.py:1 f": 100, "b.py:7 g": 900}
	// Peaks 10 GiB + i × 256 MiB (i = 0..7) and one of 20 GiB: the median
	// is the 5th of 9, 11 GiB; the deviations 0, 1, 1, 2, 2, 3, 3, 4 × 256
	// MiB and 9 GiB have the median 512 MiB, and 1.4826 × 512 MiB is above
	// 2% of 11 GiB, so z = (20 − 11) GiB / (1.4826 × 512 MiB).
	var ranks []RankStats
	for i := range 8 {
		ranks = append(ranks, mk(i, 10*gib+int64(i)*256*mib, i%2, base))
	}
	ranks = append(ranks, mk(8, 20*gib, 0, big))
	f := CompareRanks(ranks)
	if f.MedianPeak != 11*gib || f.MAD != 512*mib || f.Worst != 8 || f.Ranks[f.Typical].PeakAllocated != 11*gib {
		t.Errorf("median %d MAD %d worst %d typical peak %d; want 11 GiB, 512 MiB, rank 8, 11 GiB", f.MedianPeak, f.MAD, f.Worst, f.Ranks[f.Typical].PeakAllocated)
	}
	if want := float64(9*gib) / (1.4826 * float64(512*mib)); math.Abs(f.Z[8]-want) > 1e-9 {
		t.Errorf("z of rank 8 = %v, want %v", f.Z[8], want)
	}
	if len(f.Outliers) != 1 || f.Outliers[0].Index != 8 || f.Outliers[0].Sites[0].Name != "b.py:7 g" || f.Outliers[0].Sites[0].Change != 900 {
		t.Errorf("outliers %+v, want rank 8 with b.py:7 g +900", f.Outliers)
	}
	// tp groups (two values, shared); local_rank has one rank per value: none.
	if len(f.Groups) != 2 || f.Groups[0].Coord != "tp" || f.Groups[0].Value != 0 || len(f.Groups[0].Ranks) != 5 || f.Groups[0].Worst != 8 {
		t.Errorf("groups %+v, want tp=0 (5 ranks, worst rank 8) and tp=1", f.Groups)
	}
	// Most ranks equal: the MAD is 0 and the noise floor, 2% of the
	// median, is the spread.
	var same []RankStats
	for i := range 8 {
		same = append(same, mk(i, 10*gib, 0, base))
	}
	g := CompareRanks(append(same, mk(8, 12*gib, 0, big)))
	if want := float64(2*gib) / (0.02 * float64(10*gib)); g.MAD != 0 || math.Abs(g.Z[8]-want) > 1e-9 || len(g.Outliers) != 1 {
		t.Errorf("MAD %d z %v outliers %d; want 0, %v, 1", g.MAD, g.Z[8], len(g.Outliers), want)
	}
	// A rank 1% above the others is noise, not an outlier.
	if n := CompareRanks(append(same, mk(8, 10*gib+100*mib, 0, base))); len(n.Outliers) != 0 {
		t.Errorf("a rank 1%% above: outliers %+v", n.Outliers)
	}
	// All equal: no z, no outlier; one rank alone is its own median.
	if h := CompareRanks(same[:3]); len(h.Outliers) != 0 || h.Z[0] != 0 {
		t.Errorf("equal ranks: %+v", h)
	}
	if one := CompareRanks(same[:1]); one.MedianPeak != 10*gib || one.Typical != 0 || one.Worst != 0 {
		t.Errorf("one rank: %+v", one)
	}
}
