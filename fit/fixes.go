package fit

import (
	"github.com/memscope/memscope/allocator"
	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/snapshot"
)

// This file carries advise's fixes along the curve: "with chunked
// cross-entropy, batch 64 fits". A fix advise words as smaller requests (a
// chunked loss keeps a slice of each logits tensor, bf16 moments half of
// each moment, sharding 1/N, half the micro-batch half of each
// activation: attribution.AdviceFix.Shrinks) is replayed: every request
// of the template made at one of those stacks, in every step, is shrunk by
// the fix's fraction at each batch, and the frontier searched as fit's
// own, through the allocator model, under the cap less what else the fix
// adds at the step's peak (a chunked loss makes the output projection's
// weight gradient early, and a buffer of its size). A fix that saves by
// dropping or moving blocks (checkpointing, a fused optimizer step, a
// leak's release) is not carried: a synthesized stream of the template's
// requests cannot say it, and a saving extrapolated from small batches,
// where another phase can hold the peak, was a third off on the H200.

// Fix is one of advise's fixes on the template and the largest batch that
// fits with it.
type Fix struct {
	// Advice is the fix as advise words it on the template.
	Advice attribution.AdviceFix
	// Carried says the fix was replayed along the curve (Shrunk of the
	// template's requests shrunk); Why, when not, says why.
	Carried bool
	Shrunk  int
	Why     string
	// LargestFit is the largest batch, up to Max, that fits with it (0:
	// none); Need the model's peak of reserved memory there (At its run),
	// FirstFail the run at LargestFit+1 (nil when Max fits).
	LargestFit int
	Need       int64
	At         *Point
	FirstFail  *Point
	Max        int
}

// Fixes runs advise (attribution.Device.Advise) on the template and
// searches, for each fix it can replay, the largest batch that fits with
// it under the recorded settings and capacity, up to maxBatch. A template
// that is not a training step (advise's fixes are for those) gives none.
func (m *Model) Fixes(capacity int64, maxBatch int) ([]Fix, error) {
	if capacity <= 0 {
		return nil, nil
	}
	if maxBatch <= 0 {
		maxBatch = 1 << 16
	}
	// The template's analysis New made for the phases.
	if <-m.phasesReady; m.dev == nil {
		return nil, nil
	}
	adv := m.dev.Advise(attribution.AdviseOptions{Ranks: budget.DefaultRanks, LossChunks: 8})
	if !adv.Training || adv.OOM != nil {
		return nil, nil
	}
	var out []Fix
	for _, af := range adv.Fixes {
		f := Fix{Advice: af, Max: maxBatch}
		change, shrunk := m.shrinker(af.Shrinks)
		switch {
		case shrunk == 0 || af.MovesSave:
			f.Why = "it saves by dropping or moving blocks, which the template's requests at another batch cannot say"
		case af.MovesBytes >= capacity:
			f.Why = "what else it adds at the peak is the whole cap"
		}
		if f.Why != "" {
			out = append(out, f)
			continue
		}
		set := m.recordedSet
		set.MemoryLimit = capacity - af.MovesBytes
		fr, err := m.frontier(set, maxBatch, change)
		if err != nil {
			return nil, err
		}
		f.Carried, f.Shrunk, f.LargestFit, f.At, f.FirstFail = true, shrunk, fr.LargestFit, fr.Fit, fr.FirstFail
		if fr.Fit != nil {
			f.Need = fr.Fit.PeakReserved
		}
		out = append(out, f)
	}
	return out, nil
}

// Need is the model's run at batch n under the recorded settings with no
// cap (what the step needs: "at batch 48 the step needs 25.1 GiB"), and
// whether it fits under capacity (0: no cap given), as a Point: Fits and
// OOM are then the capped run's.
func (m *Model) Need(n int, capacity int64) (*Point, error) {
	p, err := m.At(n, m.Uncapped())
	if err != nil || capacity <= 0 {
		return p, err
	}
	capped, err := m.At(n, m.recordedSet)
	if err != nil {
		return nil, err
	}
	p.Fits, p.OOM, p.Survived = capped.Fits, capped.OOM, capped.Survived
	return p, nil
}

// Uncapped is the recorded settings with no cap: the cap the model was
// made with (Options) does not hold.
func (m *Model) Uncapped() allocator.Settings {
	s := m.recordedSet
	s.MemoryLimit = 1 << 50
	return s
}

// shrinker returns the change that shrinks every template request made
// at one of the fix's stacks by its fraction (at least one byte is asked
// for: a size of 0 would keep the recorded one), and how many requests it
// shrinks.
func (m *Model) shrinker(shrinks []attribution.FixShrink) (func(n int, sizes []int64), int) {
	if len(shrinks) == 0 {
		return nil, 0
	}
	keep := map[snapshot.StackID][2]int64{}
	for _, x := range shrinks {
		if _, ok := keep[x.Stack]; !ok && x.Den > 0 {
			keep[x.Stack] = [2]int64{x.Den - x.Num, x.Den}
		}
	}
	type at struct {
		event    int
		keep, of int64
	}
	var idx []at
	for i := range m.Requests {
		r := &m.Requests[i]
		if k, ok := keep[r.Stack]; ok {
			idx = append(idx, at{r.Index, k[0], k[1]})
		}
	}
	return func(n int, sizes []int64) {
		for _, x := range idx {
			s := sizes[x.event]
			neg := s < 0 // a survivable request keeps its sign
			if neg {
				s = -s
			}
			s = max(1, s*x.keep/x.of)
			if neg {
				s = -s
			}
			sizes[x.event] = s
		}
	}, len(idx)
}
