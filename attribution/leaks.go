package attribution

import (
	"slices"
	"sort"

	"github.com/memscope/memscope/snapshot"
)

// Leak is the verdict on step-over-step growth.
type Leak struct {
	// Found is true for a staircase: the floor after each steady step grew
	// monotonically over at least minLeakSteps steps, and blocks born in
	// those steps are still live at the end.
	Found bool
	// Reason says why there is no verdict either way (LeakDecided when
	// there is one). With LeakFewSteps and exactly two steady steps,
	// TwoSteps is set and Hint is the floor's growth between them: a hint,
	// not a verdict.
	Reason   LeakReason
	TwoSteps bool
	Hint     int64
	// Floors are allocated bytes after each step, steady steps only.
	Steps  []int
	Floors []int64
	// GrowthPerStep is the floor's median growth per steady step: a last
	// step that the recording ends before its tensors are dropped (an
	// evaluation loop's last batch still referenced) does not move it.
	GrowthPerStep int64
	// Sites are the allocation sites of blocks born in a steady step and
	// live at the end, largest first.
	Sites []LeakSite
}

// LeakSite is one site of surviving blocks.
type LeakSite struct {
	SiteBytes
	Steps        int   // distinct steady steps whose blocks survive
	BytesPerStep int64 // Bytes / Steps
}

// minLeakSteps is how many steady steps a staircase needs.
const minLeakSteps = 3

// Severity is how serious the verdict is: a problem when a leak was found,
// an all-clear when none was, no verdict when the input cannot tell.
func (l *Leak) Severity() Severity {
	switch {
	case l.Reason != LeakDecided:
		return SeverityNoVerdict
	case l.Found:
		return SeverityProblem
	}
	return SeverityOK
}

// findLeak looks for a staircase in the floors after each steady step. Step
// 0 of a recording is never steady when it creates optimizer state (that
// is lazy), so the first step found is skipped.
func (d *Device) findLeak() *Leak {
	l := &Leak{}
	if len(d.Timeline.Events) == 0 {
		l.Reason = LeakNoHistory
		return l
	}
	steps := d.Phases.Steps
	if len(steps) < minLeakSteps+1 {
		l.Reason = LeakFewSteps
		if len(steps) == minLeakSteps { // two steady steps: a hint, not a verdict
			l.TwoSteps, l.Hint = true, steps[2].FloorEnd-steps[1].FloorEnd
		}
		return l
	}
	steady := steps[1:]
	grows := true
	for i, s := range steady {
		l.Steps = append(l.Steps, s.Step)
		l.Floors = append(l.Floors, s.FloorEnd)
		if i > 0 && s.FloorEnd <= steady[i-1].FloorEnd {
			grows = false
		}
	}
	l.GrowthPerStep = medianGrowth(l.Floors)

	// Blocks born in a steady step and live at the end, by site.
	stepOf := func(i int) int {
		if i < 0 || i >= len(d.class.owner) || d.class.owner[i] < 0 {
			return -1
		}
		return d.Phases.List[d.class.owner[i]].Step
	}
	type acc struct {
		blocks []snapshot.LiveBlock
		steps  map[int]bool
	}
	bySite := map[Site]*acc{}
	first := steady[0].Step
	for i := range d.End.Live {
		b := &d.End.Live[i]
		st := stepOf(b.AllocIndex)
		if b.PendingFree || st < first {
			continue
		}
		site := d.an.Filter.SiteOf(d.an.Snapshot.Stacks, b.Stack)
		a := bySite[site]
		if a == nil {
			a = &acc{steps: map[int]bool{}}
			bySite[site] = a
		}
		a.blocks = append(a.blocks, *b)
		a.steps[st] = true
	}
	for _, a := range bySite {
		if len(a.steps) < minLeakSteps {
			continue
		}
		sb := TopSites(d.an.Snapshot.Stacks, a.blocks, d.an.Filter, d.End.Allocated, 1)[0]
		l.Sites = append(l.Sites, LeakSite{SiteBytes: sb, Steps: len(a.steps), BytesPerStep: sb.Bytes / int64(len(a.steps))})
	}
	sort.Slice(l.Sites, func(i, j int) bool { return l.Sites[i].Bytes > l.Sites[j].Bytes })
	l.Found = grows && len(l.Sites) > 0
	if !l.Found && len(l.Sites) > 0 {
		// Batches of varying sizes make the floor go up and down with
		// each batch's input, yet something is kept every step: a site
		// whose blocks from nine steady steps in ten live at the end,
		// and a floor that rose over the steady steps by half of them
		// at least, is the staircase under the noise.
		top := l.Sites[0]
		rose := l.Floors[len(l.Floors)-1] - l.Floors[0]
		if 10*top.Steps >= 9*len(steady) && 2*rose >= top.Bytes {
			l.Found = true
			l.GrowthPerStep = top.BytesPerStep // the floor's own steps are the batches' noise
		}
	}
	return l
}

// medianGrowth returns the median of the differences between consecutive
// floors (the lower middle of an even count), 0 for fewer than two.
func medianGrowth(floors []int64) int64 {
	if len(floors) < 2 {
		return 0
	}
	d := make([]int64, len(floors)-1)
	for i := range d {
		d[i] = floors[i+1] - floors[i]
	}
	slices.Sort(d)
	return d[(len(d)-1)/2]
}
