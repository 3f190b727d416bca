package attribution

import (
	"github.com/memscope/memscope/snapshot"
)

// ViewOptions bound what a View keeps, so that a page made from it stays
// small whatever the input: every list a renderer shows is cut here.
type ViewOptions struct {
	Series      SeriesOptions
	Bands       int // phase bands on the timeline
	Steps       int // rows of the per-step phase table
	LeakSteps   int // bars of the leak staircase
	TopSites    int // rows of each top-sites table (peak, leak, OOM)
	StackFrames int // frames shown per site's stack
	TreeNodes   int // nodes of the peak's call tree
	TreeMin     float64
	Segments    int // segments per fragmentation moment
	Moments     int // fragmentation moments (peak, end, the first OOMs)
	OOMs        int // out-of-memory post-mortems
	Notes       int // findings and warnings
}

// MaxViewSections is the most device sections one page may hold: beyond it
// every section would shrink below use.
const MaxViewSections = 16

// ViewOptionsFor returns the bounds for one of n device sections sharing a
// page: the timeline's points are split between sections, the rest shrinks
// slower. With these bounds and its own limits on the length of names, a
// page of report.HTML stays under 3 MB for any n up to MaxViewSections.
func ViewOptionsFor(n int) ViewOptions {
	n = max(n, 1)
	shrink := func(full, least int) int { return max(full*2/(n+1), least) }
	return ViewOptions{
		Series:      SeriesOptions{MaxPoints: max(3200/n, 160), TopSites: 8},
		Bands:       shrink(240, 30),
		Steps:       shrink(40, 10),
		LeakSteps:   shrink(200, 30),
		TopSites:    shrink(15, 5),
		StackFrames: shrink(20, 6),
		TreeNodes:   shrink(200, 40),
		TreeMin:     0.002,
		Segments:    shrink(64, 12),
		Moments:     shrink(5, 3),
		OOMs:        shrink(3, 1),
		Notes:       shrink(12, 4),
	}
}

// View is everything a page shows of one snapshot, computed and bounded.
type View struct {
	Source   string
	Format   string
	Warnings []snapshot.Warning // about the file
	Stacks   *snapshot.Stacks
	Filter   *Filter
	Options  ViewOptions // the bounds it was made with
	Devices  []*DeviceView
}

// DeviceView is one device's section of a page.
type DeviceView struct {
	Device  *Device
	Summary DeviceSummary // TopSites cut to ViewOptions.TopSites
	Series  *Series
	Bands   []Band
	// FocusFrom is the event the timeline opens on (-1: the start): the
	// first step's, when what comes before it (setup, warm-up) takes more
	// than a quarter of the recording.
	FocusFrom int
	// StepRows indexes Phases.Steps: the steps the phase table shows, in
	// order; -1 stands for a run of steps left out.
	StepRows []int
	// LeakSteps and LeakFloors are the leak's floors per steady step,
	// downsampled to the lowest and highest of each run when there are more
	// than the bound.
	LeakSteps  []int
	LeakFloors []int64
	LeakSites  []LeakSite
	PeakTree   *TreeNode
	Frag       []FragView
	OOMs       []*OOM // the first ViewOptions.OOMs
}

// FragView is the fragmentation at one moment with its segments.
type FragView struct {
	*Fragmentation
	Segments SegmentFills
}

// Band is one shaded stretch of the timeline: a phase, a step, or a run of
// steps when there are too many to show one by one.
type Band struct {
	Name           string // forward, backward, …, "step 3", "steps 10–19"
	Phase          string // the phase name, "" for steps
	StartUS, EndUS int64  // µs after the first event
}

// NewView computes the view of every device of an analysis.
func NewView(an *Analysis, opt ViewOptions) *View {
	s := an.Snapshot
	v := &View{Source: s.Source, Format: s.Format.String(), Warnings: s.Warnings,
		Stacks: s.Stacks, Filter: an.Filter, Options: opt}
	for _, d := range an.Devices {
		v.Devices = append(v.Devices, d.view(opt))
	}
	return v
}

func (d *Device) view(opt ViewOptions) *DeviceView {
	v := &DeviceView{Device: d, Summary: summarizeDevice(d.an.Snapshot, d, opt.TopSites)}
	v.Series = d.Series(opt.Series)
	v.Bands = d.bands(opt.Bands)
	v.FocusFrom = d.focusFrom()
	v.StepRows = d.stepRows(opt.Steps)
	v.LeakSteps, v.LeakFloors = downsampleFloors(d.Leak.Steps, d.Leak.Floors, opt.LeakSteps)
	v.LeakSites = d.Leak.Sites[:min(len(d.Leak.Sites), opt.TopSites)]
	v.PeakTree = d.UserTree(d.Peak, opt.TreeMin, opt.TreeNodes)
	for i, f := range d.Frag {
		if i == opt.Moments {
			break
		}
		v.Frag = append(v.Frag, FragView{f, d.SegmentFills(d.moment(f), opt.Segments)})
	}
	v.OOMs = d.OOMs[:min(len(d.OOMs), opt.OOMs)]
	return v
}

// moment returns the moment a fragmentation result was measured at.
func (d *Device) moment(f *Fragmentation) *Moment {
	switch f {
	case d.Frag[0]:
		return d.Peak
	case d.Frag[1]:
		return d.End
	}
	for _, o := range d.OOMs {
		if o.Frag == f {
			return o.At
		}
	}
	panic("invariant violation: fragmentation result of no moment")
}

// bands shades the phases (Phases.Shades: one band each, or per step,
// or runs of steps past max), at their times after the first event.
func (d *Device) bands(maxBands int) []Band {
	p := d.Phases
	t := d.Timeline
	if len(t.Events) == 0 || len(p.List) == 0 {
		return []Band{}
	}
	t0 := t.Events[0].TimeUS
	all := make([]int, len(p.List))
	for i := range all {
		all[i] = i
	}
	out := []Band{}
	for _, s := range p.Shades(all, maxBands) {
		out = append(out, Band{Name: s.Name, Phase: s.Phase, StartUS: p.List[s.First].StartUS - t0, EndUS: p.List[s.Last].EndUS - t0})
	}
	return out
}

func (d *Device) focusFrom() int {
	ev := d.Timeline.Events
	if len(ev) < 2 {
		return -1
	}
	for _, ph := range d.Phases.List {
		if ph.Step < 0 || ph.First < 0 || ph.First >= len(ev) {
			continue
		}
		span := ev[len(ev)-1].TimeUS - ev[0].TimeUS
		if 4*(ev[ph.First].TimeUS-ev[0].TimeUS) > span {
			return ph.First
		}
		break
	}
	return -1
}

// stepRows picks the steps the phase table shows: all of them, or the
// first and last ones and the step holding the device's peak.
func (d *Device) stepRows(maxRows int) []int {
	steps := d.Phases.Steps
	out := []int{}
	if len(steps) <= maxRows {
		for i := range steps {
			out = append(out, i)
		}
		return out
	}
	peak := -1
	if pp := d.Phases.PeakPhase; pp >= 0 {
		for i, s := range steps {
			if s.Step == d.Phases.List[pp].Step {
				peak = i
			}
		}
	}
	head := (maxRows - 1) / 2
	tail := maxRows - 1 - head
	keep := func(i int) bool { return i < head || i >= len(steps)-tail || i == peak }
	for i := range steps {
		switch {
		case keep(i):
			out = append(out, i)
		case len(out) > 0 && out[len(out)-1] != -1:
			out = append(out, -1)
		}
	}
	return out
}

// downsampleFloors keeps at most about maxN floors: each run of steps keeps
// its lowest and highest floor, so the staircase's shape survives.
func downsampleFloors(steps []int, floors []int64, maxN int) ([]int, []int64) {
	if len(floors) <= maxN {
		return append([]int{}, steps...), append([]int64{}, floors...)
	}
	per := (2*len(floors) + maxN - 1) / max(maxN, 2)
	outS, outF := []int{}, []int64{}
	for i := 0; i < len(floors); i += per {
		j := min(i+per, len(floors))
		lo, hi := i, i
		for k := i; k < j; k++ {
			if floors[k] < floors[lo] {
				lo = k
			}
			if floors[k] > floors[hi] {
				hi = k
			}
		}
		for _, k := range []int{min(lo, hi), max(lo, hi)} {
			if len(outS) == 0 || outS[len(outS)-1] != steps[k] {
				outS, outF = append(outS, steps[k]), append(outF, floors[k])
			}
		}
	}
	return outS, outF
}
