package fit

import (
	"fmt"

	"github.com/memscope/memscope/allocator"
)

// Setting is one allocator setting a frontier is searched under: its
// PYTORCH_CUDA_ALLOC_CONF string ("" for the recorded settings).
type Setting struct {
	Conf     string
	Settings allocator.Settings
}

// Curve is peak ≈ Fixed + batch × PerSample through the model's runs that
// fit at or above the template's batch (least squares), for allocated and
// reserved memory, which differ by the allocator's rounding and cache.
type Curve struct {
	AllocatedFixed, AllocatedPerSample float64
	ReservedFixed, ReservedPerSample   float64
	Points                             int
}

// SettingFrontier is one setting's frontier and curve.
type SettingFrontier struct {
	Setting
	*Frontier
	Curve Curve
	// Margin is the capacity left at the largest batch that fits: the
	// cap minus its peak reserved.
	Margin int64
}

// Result is what 'memscope fit' found.
type Result struct {
	Model     *Model
	Capacity  int64 // the cap the frontiers are searched under
	Frontiers []SettingFrontier
}

// Run searches the frontier under each setting, in [1, maxBatch], under
// the capacity m was made with (Options).
func (m *Model) Run(settings []Setting, capacity int64, maxBatch int) (*Result, error) {
	res := &Result{Model: m, Capacity: capacity}
	for _, st := range settings {
		f, err := m.Frontier(st.Settings, maxBatch)
		if err != nil {
			if st.Conf != "" {
				return nil, fmt.Errorf("under %q: %w", st.Conf, err)
			}
			return nil, err
		}
		sf := SettingFrontier{Setting: st, Frontier: f, Curve: m.curve(f)}
		if f.Fit != nil && capacity > 0 {
			sf.Margin = capacity - f.Fit.PeakReserved
		}
		res.Frontiers = append(res.Frontiers, sf)
	}
	return res, nil
}

// curve fits the lines through f's fitting runs at or above the
// template's batch (below it another phase, the optimizer's step or the
// model's build, can hold the peak).
func (m *Model) curve(f *Frontier) Curve {
	var xs, ya, yr []float64
	for _, p := range f.Points {
		if p.Fits && p.Batch >= m.Inputs[m.Template].Batch {
			xs = append(xs, float64(p.Batch))
			ya = append(ya, float64(p.PeakAllocated))
			yr = append(yr, float64(p.PeakReserved))
		}
	}
	c := Curve{Points: len(xs)}
	c.AllocatedFixed, c.AllocatedPerSample = line(xs, ya)
	c.ReservedFixed, c.ReservedPerSample = line(xs, yr)
	return c
}

// line is the least-squares line y = a + b·x (b = 0 with fewer than two
// distinct x).
func line(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	if n == 0 {
		return 0, 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return sy / n, 0
	}
	b = (n*sxy - sx*sy) / den
	return (sy - b*sx) / n, b
}
