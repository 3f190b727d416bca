package attribution

import (
	"fmt"
	"math"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// fleetRanks makes n ranks from fixtures/capture-ddp's rank 0 (a real DDP
// training run, 8 steps), each with a temporary of up to 2 MiB at a place
// its seed chooses (noise bytes at most: the noise of ranks that run the
// same program), and,
// for the ranks in plant, what plant gives them: each rank is decoded from
// its own pickle and analysed as memscope ranks does. It returns the
// ranks and the source's own numbers.
func fleetRanks(t *testing.T, n int, noise int64, plant map[int]func(p *snapgen.Perturbation, d *Device)) ([]RankStats, RankStats) {
	t.Helper()
	src, err := snapshot.Open("../fixtures/capture-ddp/snapshot.rank0.pickle")
	if err != nil {
		t.Fatal(err)
	}
	d := Analyze(src, Options{Device: -1}).Primary()
	base := RankStatsOf(d, "source", 0)
	out := make([]RankStats, n)
	for i := range n {
		p := snapgen.Perturbation{Seed: uint64(i), Noise: noise}
		if f := plant[i]; f != nil {
			f(&p, d)
		}
		name := fmt.Sprintf("snapshot.rank%d.pickle", i)
		_, s, err := snapgen.Encode(snapgen.Perturb(src, p), name)
		if err != nil {
			t.Fatalf("rank %d: %v", i, err)
		}
		out[i] = RankStatsOf(Analyze(s, Options{Device: -1}).Primary(), name, i)
	}
	return out, base
}

// lastSteps returns the last event of each of d's last k steps.
func lastSteps(d *Device, k int) []int {
	var out []int
	steps := d.Phases.Steps
	for _, st := range steps[len(steps)-k:] {
		out = append(out, d.Phases.List[st.Phases[len(st.Phases)-1]].Last)
	}
	return out
}

// TestRanksFleet: among 1,000 near-identical ranks (one real rank with up
// to 2 MiB of noise each), ranks finds the rank that reserved 6 GiB more
// and never used it, and the rank with a young leak (16 MiB kept in each
// of the last three steps: 48 MiB, too few steps for the staircase, too
// little to move its peaks out of the noise), each by the number it
// differs in and by what the plant put there; it flags no other rank; and
// the median and the worst follow MedianWorst, the rule summary --run
// uses.
func TestRanksFleet(t *testing.T) {
	const n, reserved, leaky = 1000, 311, 677
	const extra, leak = 6 << 30, 16 << 20
	ranks, base := fleetRanks(t, n, 2<<20, map[int]func(*snapgen.Perturbation, *Device){
		reserved: func(p *snapgen.Perturbation, _ *Device) { p.Reserved = extra },
		leaky:    func(p *snapgen.Perturbation, d *Device) { p.Leak, p.LeakAt = leak, lastSteps(d, 3) },
	})
	for i, r := range ranks {
		if r.PeakAllocated < base.PeakAllocated || r.PeakAllocated > base.PeakAllocated+2<<20 {
			t.Fatalf("rank %d: peak allocated %d, want the source's %d plus at most 2 MiB of noise", i, r.PeakAllocated, base.PeakAllocated)
		}
	}
	if got := ranks[leaky].Leak; got != 3*leak || ranks[leaky].LeakFound {
		t.Errorf("the leaky rank keeps %d B from step to step (leak found %v), want %d, no staircase verdict", got, ranks[leaky].LeakFound, 3*leak)
	}
	f := CompareRanks(ranks)
	if len(f.Outliers) != 2 {
		for _, o := range f.Outliers {
			t.Logf("outlier rank %d z %.1f %+v", f.Ranks[o.Index].Rank, o.Z, o.Signals)
		}
		t.Fatalf("%d outliers, want 2 (ranks %d and %d)", len(f.Outliers), reserved, leaky)
	}
	want := map[int]struct {
		what  string
		delta int64
	}{reserved: {SignalReserved, extra}, leaky: {SignalLeak, 3 * leak}}
	for _, o := range f.Outliers {
		r := f.Ranks[o.Index]
		w, ok := want[r.Rank]
		if !ok {
			t.Errorf("rank %d is an outlier (z %.1f, %+v): it differs only by noise", r.Rank, o.Z, o.Signals)
			continue
		}
		s := o.Signals[0]
		if s.What != w.what || s.Value-s.Median < w.delta || s.Value-s.Median > w.delta+2<<20 || s.Z <= OutlierZ {
			t.Errorf("rank %d: first signal %+v, want %s about %d B over the median", r.Rank, s, w.what, w.delta)
		}
		for _, s := range o.Signals {
			if s.What == SignalAllocated {
				t.Errorf("rank %d stands out in its allocated peak (%+v): the plant did not move it out of the noise", r.Rank, s)
			}
		}
	}
	peaks := make([]int64, n)
	for i, r := range f.Ranks {
		peaks[i] = r.PeakAllocated
	}
	if m, w := MedianWorst(peaks); f.MedianPeak != m || f.Worst != w {
		t.Errorf("median %d, worst %d; MedianWorst gives %d, %d", f.MedianPeak, f.Worst, m, w)
	}
	if z := f.Z[f.Typical]; math.Abs(z) > OutlierZ {
		t.Errorf("the typical rank %d is an outlier (z %.1f)", f.Ranks[f.Typical].Rank, z)
	}
}

// TestRanksAlike: where the other ranks are exactly alike (their median
// absolute deviation 0), a rank holding 2% more through its peak is still
// no outlier (it stood at z 29 once), and one holding 10% more is, by its
// allocated peak, with z 5: the spread's floor is 2% of the median.
func TestRanksAlike(t *testing.T) {
	for _, tt := range []struct {
		frac    float64
		outlier bool
	}{{0.02, false}, {0.10, true}} {
		const n, odd = 50, 17
		ranks, base := fleetRanks(t, n, 0, nil)
		held := int64(tt.frac*float64(base.PeakAllocated)) >> 21 << 21 // whole segments: the block is the request
		ranks2, _ := fleetRanks(t, 1, 0, map[int]func(*snapgen.Perturbation, *Device){
			0: func(p *snapgen.Perturbation, _ *Device) { p.Held = held },
		})
		ranks[odd] = ranks2[0]
		ranks[odd].Rank = odd
		if got := ranks[odd].PeakAllocated - base.PeakAllocated; got != held {
			t.Fatalf("+%.0f%%: the odd rank's peak is %d B above the others', want %d", 100*tt.frac, got, held)
		}
		f := CompareRanks(ranks)
		wantZ := float64(held) / (noiseFraction * float64(base.PeakAllocated))
		if got := len(f.Outliers) == 1 && f.Ranks[f.Outliers[0].Index].Rank == odd; got != tt.outlier || math.Abs(f.Z[odd]-wantZ) > 0.01 {
			t.Errorf("+%.0f%%: %d outliers, the odd rank's z %.2f; want it an outlier %v, z %.2f", 100*tt.frac, len(f.Outliers), f.Z[odd], tt.outlier, wantZ)
		}
		if tt.outlier && (len(f.Outliers) != 1 || f.Outliers[0].Signals[0].What != SignalAllocated) {
			t.Errorf("+%.0f%%: outliers %+v, want the odd rank by its allocated peak", 100*tt.frac, f.Outliers)
		}
	}
}

func TestMedianWorst(t *testing.T) {
	for _, tt := range []struct {
		in     []int64
		median int64
		worst  int
	}{
		{[]int64{5}, 5, 0},
		{[]int64{2692383744, 2970244096}, 2831313920, 1}, // capture-ddp: summary --run's 2.64 GiB
		{[]int64{3, 1, 2}, 2, 0},
		{[]int64{4, 1, 3, 2}, 2, 0},
		{[]int64{7, 9, 9, 1}, 8, 1},
	} {
		m, w := MedianWorst(tt.in)
		if m != tt.median || w != tt.worst {
			t.Errorf("MedianWorst(%v) = %d, %d, want %d, %d", tt.in, m, w, tt.median, tt.worst)
		}
	}
}
