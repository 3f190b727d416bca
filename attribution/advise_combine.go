package attribution

import (
	"sort"

	"github.com/memscope/memscope/budget"
)

// AdviceCombination is the cheapest run of fixes that fits the device (or
// an OOM'd step's limit) when no fix alone does: Advice.Fixes applied in
// their order, each with those before it, up to the first whose combined
// new peak fits.
type AdviceCombination struct {
	// Fixes are positions in Advice.Fixes, Kinds their kinds, in the order
	// applied. A fix that is another way of doing one already applied (a
	// chunked loss after a fused one, 8-bit moments after bf16 ones) is
	// left out.
	Fixes []int
	Kinds []budget.FixKind
	// NewPeak is the step's allocated peak with every fix of the run,
	// after event NewPeakIndex; their changes to each block are composed
	// (a block two fixes shrink keeps what both leave), not added.
	NewPeak      int64
	NewPeakIndex int
	// Fit holds NewPeak against the device (DeviceMemory); on an OOM'd
	// step Limit holds it against the step's limit instead and Fit is
	// zero. Either says it fits when a run fits; when none does, the run
	// is every fix and it says by how much it misses.
	Fit   budget.Fit
	Limit *LimitFit
}

// combination returns, when the device is given or the step ran out of
// memory (o), and no fix alone fits (budget.Fits, LimitFits), the cheapest
// run of fixes that does (see AdviceCombination); nil when neither is
// given, a fix fits alone, or fewer than two fixes combine. dss are the
// fixes' deltas.
func (st *adviseStep) combination(fixes []AdviceFix, dss [][]delta, opt AdviseOptions, o *AdviceOOM) *AdviceCombination {
	if opt.DeviceMemory <= 0 && o == nil {
		return nil
	}
	for _, f := range fixes {
		if f.Fit != nil && f.Fit.Verdict == budget.Fits || f.Limit != nil && f.Limit.Fits() {
			return nil
		}
	}
	c := &AdviceCombination{}
	var run [][]delta
	for i, f := range fixes {
		alt := false
		for _, k := range c.Kinds {
			alt = alt || budget.Alternatives(k, f.Kind)
		}
		if alt {
			continue
		}
		c.Fixes, c.Kinds = append(c.Fixes, i), append(c.Kinds, f.Kind)
		run = append(run, dss[i])
		c.NewPeak, c.NewPeakIndex = st.peakWith(st.combine(run))
		var fits bool
		if o != nil {
			lf := o.Limit.fit(c.NewPeak)
			c.Limit, fits = &lf, lf.Fits()
		} else {
			c.Fit = budget.FitNeed(opt.DeviceName, opt.DeviceMemory, c.NewPeak)
			fits = c.Fit.Verdict == budget.Fits
		}
		if len(c.Fixes) >= 2 && fits {
			break
		}
	}
	if len(c.Fixes) < 2 {
		return nil
	}
	return c
}

// combine composes the deltas of several fixes into one set: for each
// block, what every fix does to it at once. Shrinks multiply (a block one
// fix halves and another removes is gone once), drops and early starts
// join as intervals, and each counts the block at the size the shrinks
// leave; buffers of no block are kept as they are.
func (st *adviseStep) combine(dss [][]delta) []delta {
	type change struct {
		kept    int64
		drops   [][2]int
		early   int // the earliest start before its alloc; 0 with none
		isEarly bool
	}
	changes := map[int]*change{}
	var out []delta
	for _, ds := range dss {
		for _, d := range ds {
			if d.block < 0 || d.op == opAdd {
				out = append(out, d)
				continue
			}
			c := changes[d.block]
			if c == nil {
				c = &change{kept: st.blocks[d.block].size}
				changes[d.block] = c
			}
			switch d.op {
			case opShrink:
				c.kept -= c.kept * d.num / d.den
			case opDrop:
				c.drops = append(c.drops, [2]int{d.start, d.end})
			case opEarly:
				if !c.isEarly || d.start < c.early {
					c.early, c.isEarly = d.start, true
				}
			}
		}
	}
	blocks := make([]int, 0, len(changes))
	for k := range changes {
		blocks = append(blocks, k)
	}
	sort.Ints(blocks)
	for _, k := range blocks {
		c, b := changes[k], &st.blocks[k]
		if c.kept < b.size {
			out = append(out, delta{start: b.start, end: b.end, bytes: c.kept - b.size, block: k, op: opShrink})
		}
		sort.Slice(c.drops, func(i, j int) bool { return c.drops[i][0] < c.drops[j][0] })
		for i := 0; i < len(c.drops); {
			s, e := c.drops[i][0], c.drops[i][1]
			for i++; i < len(c.drops) && c.drops[i][0] <= e; i++ {
				e = max(e, c.drops[i][1])
			}
			if c.kept > 0 {
				out = append(out, delta{start: s, end: e, bytes: -c.kept, block: k, op: opDrop})
			}
		}
		if c.isEarly && c.kept > 0 {
			out = append(out, delta{start: c.early, end: b.start, bytes: c.kept, block: k, op: opEarly})
		}
	}
	return out
}
