package budget

import "reflect"

// Combination is the cheapest run of predicted fixes that fits the device
// when no fix alone does: the fixes applied in their order (Suggest's),
// each with those before it, up to the first whose combined prediction
// fits; when none does, every fix, with by how much the run misses.
type Combination struct {
	// Fixes are positions in the fixes given, Kinds their kinds, in the
	// order applied; a fix that is another way of doing one already
	// applied (Alternatives) is left out.
	Fixes []int     `json:"fixes"`
	Kinds []FixKind `json:"-"`
	// Shape is the run with every fix of the combination; NewPeak its
	// predicted peak (allocated bytes) in phase NewPhase; Fit that
	// against the device.
	Shape    Shape  `json:"shape"`
	NewPeak  int64  `json:"new_peak"`
	NewPhase string `json:"new_phase"`
	Fit      Fit    `json:"fit"`
}

// Alternatives reports whether fixes a and b are two ways of doing one
// thing, so that applying both means nothing: the loss's two rewrites;
// selective and full checkpointing; the moments in bf16, in 8 bits, on
// the CPU, or none.
func Alternatives(a, b FixKind) bool {
	loss := func(k FixKind) bool { return k == FixFusedLoss || k == FixChunkedLoss }
	ckpt := func(k FixKind) bool { return k == FixSelectiveCkpt || k == FixFullCkpt }
	moments := func(k FixKind) bool {
		switch k {
		case FixBF16Moments, FixEightBitMoments, FixOffloadOptimizer, FixStatelessOptimizer:
			return true
		}
		return false
	}
	return a != b && (loss(a) && loss(b) || ckpt(a) && ckpt(b) || moments(a) && moments(b))
}

// Combine returns, when no fix of fixes (Suggest's for p) fits fit's
// device alone, the cheapest run of them that does (see Combination); nil
// when one fits alone, there is no device, or fewer than two combine. A
// fix fits when its need is within the device's memory (not DoesNotFit),
// as the fixes' list says it.
func Combine(p *Prediction, fixes []Fix, fit Fit) *Combination {
	if fit.Memory <= 0 {
		return nil
	}
	for _, f := range fixes {
		if FitNeed(fit.Device, fit.Memory, f.NewPeak+p.Outside).Verdict != DoesNotFit {
			return nil
		}
	}
	c := &Combination{Shape: p.Shape}
	for i, f := range fixes {
		alt := false
		for _, k := range c.Kinds {
			alt = alt || Alternatives(k, f.Kind)
		}
		if alt {
			continue
		}
		shape := withFix(c.Shape, p.Shape, f.Shape)
		np, err := Predict(p.Model, shape)
		if err != nil {
			continue
		}
		c.Fixes, c.Kinds = append(c.Fixes, i), append(c.Kinds, f.Kind)
		c.Shape, c.NewPeak, c.NewPhase = np.Shape, np.PeakBytes(), np.Phases[np.Peak].Phase
		c.Fit = np.FitOn(fit.Device, fit.Memory)
		if c.Fit.Verdict != DoesNotFit {
			break
		}
	}
	if len(c.Fixes) < 2 {
		return nil
	}
	return c
}

// withFix applies to run what a fix changed: each field of fixed (the
// shape with the fix) that differs from base (the shape without it).
func withFix(run, base, fixed Shape) Shape {
	r, b, f := reflect.ValueOf(&run).Elem(), reflect.ValueOf(base), reflect.ValueOf(fixed)
	for i := range r.NumField() {
		if !b.Field(i).Equal(f.Field(i)) {
			r.Field(i).Set(f.Field(i))
		}
	}
	return run
}
