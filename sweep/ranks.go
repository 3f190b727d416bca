package sweep

import (
	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/capture"
)

// RankSpread names the process with the highest peak allocated and how far
// it is above the median of all processes.
type RankSpread struct {
	Rank       int     `json:"rank"`
	Peak       int64   `json:"peak"`
	Median     int64   `json:"median"`
	Excess     int64   `json:"excess"`      // Peak − Median
	ExcessFrac float64 `json:"excess_frac"` // Excess / Median
	Ranks      int     `json:"ranks"`
}

// WorstRank returns the rank with the highest peak allocated among those
// that reported, and its excess over their median; false when fewer than
// two reported.
func WorstRank(ranks []capture.RankPeak) (RankSpread, bool) {
	var peaks []int64
	var which []int
	for i, r := range ranks {
		if !r.Missing {
			peaks, which = append(peaks, r.Peak.Allocated), append(which, i)
		}
	}
	if len(peaks) < 2 {
		return RankSpread{}, false
	}
	median, worst := attribution.MedianWorst(peaks) // the rule memscope ranks uses
	s := RankSpread{Rank: ranks[which[worst]].Rank, Peak: peaks[worst], Median: median, Ranks: len(peaks)}
	s.Excess = s.Peak - median
	if median > 0 {
		s.ExcessFrac = float64(s.Excess) / float64(median)
	}
	return s, true
}

// RunSummary is a capture run directory summarized: each phase's highest
// peaks over the ranks, and the worst rank.
type RunSummary struct {
	*capture.RunDir
	// Phases is the highest peak of each phase over the measured steps,
	// per phase name in first-seen order, over every rank ("other" and
	// "setup", outside the steps, left out).
	Phases []PhasePeak
	Spread *RankSpread // nil with fewer than two ranks
}

// PhasePeak is one phase's highest peaks over the measured steps.
type PhasePeak struct {
	Phase string          `json:"phase"`
	Steps int             `json:"steps"` // the steps it was measured in
	Peak  capture.Numbers `json:"peak"`
}

// SummarizeRun summarizes the capture run d; the summary holds d.
func SummarizeRun(d *capture.RunDir) *RunSummary {
	s := &RunSummary{RunDir: d}
	index := map[string]int{}
	steps := map[string]map[int]bool{}
	var peaks []capture.RankPeak
	for _, r := range d.Ranks {
		for _, row := range r.Phases {
			if row.Phase == "other" || row.Phase == "setup" {
				continue
			}
			i, ok := index[row.Phase]
			if !ok {
				i = len(s.Phases)
				index[row.Phase] = i
				s.Phases = append(s.Phases, PhasePeak{Phase: row.Phase})
				steps[row.Phase] = map[int]bool{}
			}
			n := capture.Numbers{Allocated: row.PeakAllocated, Requested: row.PeakRequested,
				Reserved: row.PeakReserved, Active: row.PeakActive}
			s.Phases[i].Peak = maxNumbers(s.Phases[i].Peak, n)
			steps[row.Phase][row.Step] = true
		}
		peaks = append(peaks, capture.RankPeak{Rank: r.Rank, Peak: r.Peak, DeviceUsed: r.DeviceUsed,
			Fits: r.Exception == nil || !r.Exception.OOM, OOM: len(r.OOM) > 0})
	}
	for i := range s.Phases {
		s.Phases[i].Steps = len(steps[s.Phases[i].Phase])
	}
	if w, ok := WorstRank(peaks); ok {
		s.Spread = &w
	}
	return s
}

func maxNumbers(a, b capture.Numbers) capture.Numbers {
	return capture.Numbers{Allocated: max(a.Allocated, b.Allocated), Requested: max(a.Requested, b.Requested),
		Reserved: max(a.Reserved, b.Reserved), Active: max(a.Active, b.Active)}
}
