package fit

import (
	"fmt"
	"slices"

	"github.com/memscope/memscope/allocator"
)

// Point is the allocator model's run of the job at one batch.
type Point struct {
	Batch         int
	PeakAllocated int64
	PeakReserved  int64
	Fits          bool
	// Survived counts the workspace requests that failed and were
	// survived (survivable): torch counts each in num_ooms.
	Survived int
	// OOM is where the run at this batch dies: the request the model
	// could not serve, its step and phase; nil when it fits.
	OOM *OOMAt
}

// OOMAt is the request a predicted run cannot serve.
type OOMAt struct {
	Index    int    // event index in the template
	Step     int    // -1 outside any step
	Phase    string // "" when not known
	Size     int64  // the request, rounded
	Reserved int64  // reserved when it failed
	Site     string // the request's stack, by its innermost user frame
}

// At drives the job's request stream at batch n through the allocator
// model under set.
func (m *Model) At(n int, set allocator.Settings) (*Point, error) {
	return m.at(n, set, nil, nil)
}

// at is At with the sizes' buffer (nil: a new one) and a change made to
// the synthesized sizes before the run (nil: none).
func (m *Model) at(n int, set allocator.Settings, buf []int64, change func(n int, sizes []int64)) (*Point, error) {
	if n <= 0 {
		return nil, fmt.Errorf("batch %d: a batch is 1 or more", n)
	}
	sizes := m.Sizes(n, buf)
	if change != nil {
		change(n, sizes)
	}
	out, err := m.rc.WhatIfSized(set, sizes)
	if err != nil {
		return nil, err
	}
	p := &Point{Batch: n, PeakAllocated: out.PeakAllocated, PeakReserved: out.PeakReserved, Fits: out.OOM == nil, Survived: out.Survived}
	if o := out.OOM; o != nil {
		at := &OOMAt{Index: o.Index, Step: -1, Size: o.Size, Reserved: o.Reserved}
		if o.Index >= 0 {
			evs := m.Inputs[m.Template].Snap.Traces[m.Device]
			at.Site = StackLabel(m.Inputs[m.Template].Snap.Stacks, evs[o.Index].Stack)
			if <-m.phasesReady; m.phases != nil {
				for _, ph := range m.phases.List {
					if ph.First <= o.Index && o.Index <= ph.Last {
						at.Step, at.Phase = ph.Step, ph.Name
						break
					}
				}
			}
		}
		p.OOM = at
	}
	return p, nil
}

// Frontier is the largest batch that fits under one setting and cap.
type Frontier struct {
	Settings   allocator.Settings
	LargestFit int    // 0: not even batch 1 fits
	Fit        *Point // the run at LargestFit (nil when 0)
	FirstFail  *Point // the run at LargestFit+1 (nil when Max fits)
	Max        int    // the bisection's upper end
	// Points are every batch the search ran, by batch.
	Points []*Point
}

// Frontier bisects for the largest batch in [1, max] that fits under set.
// The search doubles from the template's batch (or halves below it) and
// then bisects, each step one run of the model over the synthesized
// stream (its size buffer reused).
func (m *Model) Frontier(set allocator.Settings, maxBatch int) (*Frontier, error) {
	return m.frontier(set, maxBatch, nil)
}

// frontier is Frontier with a change made to every run's sizes (at).
func (m *Model) frontier(set allocator.Settings, maxBatch int, change func(n int, sizes []int64)) (*Frontier, error) {
	if maxBatch <= 0 {
		maxBatch = 1 << 16
	}
	f := &Frontier{Settings: set, Max: maxBatch}
	buf := make([]int64, len(m.Inputs[m.Template].Snap.Traces[m.Device]))
	runs := map[int]*Point{}
	run := func(n int) (*Point, error) {
		if p, ok := runs[n]; ok {
			return p, nil
		}
		p, err := m.at(n, set, buf, change)
		if err != nil {
			return nil, err
		}
		runs[n] = p
		f.Points = append(f.Points, p)
		return p, nil
	}
	lo, hi := 0, maxBatch+1 // lo fits (0: none known), hi fails
	n := min(m.Inputs[m.Template].Batch, maxBatch)
	p, err := run(n)
	if err != nil {
		return nil, err
	}
	if p.Fits {
		lo = n
		for lo < maxBatch {
			n = min(lo*2, maxBatch)
			p, err := run(n)
			if err != nil {
				return nil, err
			}
			if !p.Fits {
				hi = n
				break
			}
			lo = n
		}
	} else {
		hi = n
	}
	for hi-lo > 1 {
		n := lo + (hi-lo)/2
		p, err := run(n)
		if err != nil {
			return nil, err
		}
		if p.Fits {
			lo = n
		} else {
			hi = n
		}
	}
	f.LargestFit = lo
	if lo > 0 {
		f.Fit = runs[lo]
	}
	if hi <= maxBatch {
		if _, ok := runs[hi]; !ok {
			if _, err := run(hi); err != nil {
				return nil, err
			}
		}
		f.FirstFail = runs[hi]
	}
	slices.SortFunc(f.Points, func(a, b *Point) int { return a.Batch - b.Batch })
	return f, nil
}

// RecordedSettings is the template's allocator settings (its
// allocator_settings, or the defaults).
func (m *Model) RecordedSettings() allocator.Settings { return m.recordedSet }
