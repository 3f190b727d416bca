package attribution

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/truth"
)

type plainFixture struct {
	name  string
	truth *truth.File // with Plain set: written by capture/plain/truthlib.py
	an    *Analysis
}

// loadPlain returns the fixtures made without the harness (truth.json with
// "plain": true).
func loadPlain(t *testing.T) []*plainFixture {
	t.Helper()
	var out []*plainFixture
	for _, dir := range fixtureDirs(t) {
		f := &plainFixture{name: filepath.Base(dir)}
		if f.truth = readTruth(t, dir); !f.truth.Plain {
			continue
		}
		f.an = fixtureAnalysis(t, dir)
		out = append(out, f)
	}
	if len(out) < 9 {
		t.Fatalf("%d plain fixtures under ../fixtures, want 9", len(out))
	}
	return out
}

// TestPlainSteps: the steps found in a snapshot with no harness marks are
// the steps the script recorded, and each phase's peak is torch's
// max_memory_allocated for that phase (peak counters reset at each
// boundary) to the byte.
func TestPlainSteps(t *testing.T) {
	for _, f := range loadPlain(t) {
		t.Run(f.name, func(t *testing.T) {
			p := f.an.Devices[0].Phases
			if len(p.Steps) != f.truth.StepsRecorded {
				t.Fatalf("%d steps found (from %s), want %d", len(p.Steps), p.Source, f.truth.StepsRecorded)
			}
			got := map[[2]any]int64{}
			for _, ph := range p.List {
				k := [2]any{ph.Step, ph.Name}
				got[k] = max(got[k], ph.Peak.Allocated)
			}
			for _, row := range f.truth.Phases {
				if row.Step < 0 {
					continue
				}
				g, ok := got[[2]any{row.Step, row.Phase}]
				if !ok {
					t.Errorf("phase step %d %s not found", row.Step, row.Phase)
					continue
				}
				if g != row.PeakAllocated {
					t.Errorf("peak of step %d %s = %d, want %d (torch): off by %d", row.Step, row.Phase, g, row.PeakAllocated, g-row.PeakAllocated)
				}
			}
			// A step keeps the frees that follow its optimizer step up to
			// the next allocation; Lightning drops the batch after
			// on_train_batch_end, where the truth reads the floor, so
			// there the floor is lower by the same bytes every step but
			// the last, which the recording ends.
			var gap int64
			for i, st := range f.truth.Steps {
				if i >= len(p.Steps) {
					break
				}
				d := st.FloorEnd - p.Steps[i].FloorEnd
				if i == 0 && f.name == "plain-lightning" {
					gap = d
				}
				if (d != gap && d != 0) || d < 0 {
					t.Errorf("floor after step %d = %d, want %d (torch) - %d", i, p.Steps[i].FloorEnd, st.FloorEnd, gap)
				}
			}
		})
	}
}

// TestPlainLeaks: the planted leaks are found with their bytes per step
// (within 1%) and their site; the other fixtures have none.
func TestPlainLeaks(t *testing.T) {
	for _, f := range loadPlain(t) {
		t.Run(f.name, func(t *testing.T) { checkLeak(t, f.an, f.truth) })
	}
}

// checkLeak checks device 0's leak against truth's: none when truth has
// none, else found with torch's bytes per step (within 1%) at its line,
// and the top site keeping as much.
func checkLeak(t *testing.T, an *Analysis, tr *truth.File) {
	t.Helper()
	l := an.Devices[0].Leak
	if tr.Leak == nil {
		if l.Found {
			t.Errorf("leak found (%d B per step), want none", l.GrowthPerStep)
		}
		return
	}
	if !l.Found {
		t.Fatalf("no leak found (reason %d), want %d B per step", l.Reason, tr.Leak.BytesPerStep)
	}
	want := float64(tr.Leak.BytesPerStep)
	if d := math.Abs(float64(l.GrowthPerStep)-want) / want; d > 0.01 {
		t.Errorf("growth per step = %d, want %d ±1%%", l.GrowthPerStep, tr.Leak.BytesPerStep)
	}
	top := l.Sites[0]
	fr := an.Snapshot.Stacks.Frame(top.Site.Frame)
	if fr.Filename != tr.Leak.File || fr.Line != tr.Leak.Line {
		t.Errorf("leak site = %s:%d, want %s:%d", fr.Filename, fr.Line, tr.Leak.File, tr.Leak.Line)
	}
	if d := math.Abs(float64(top.BytesPerStep)-want) / want; d > 0.01 {
		t.Errorf("leak site keeps %d B per step, want %d ±1%%", top.BytesPerStep, tr.Leak.BytesPerStep)
	}
}

// TestPlainCategories: at the peak, and at the last step's peak,
// parameters and optimizer state hold torch's parameter and
// optimizer-state bytes within 2%. The optimizer's state is lazy: at a
// peak before the first optimizer phase began there is none.
func TestPlainCategories(t *testing.T) {
	for _, f := range loadPlain(t) {
		t.Run(f.name, func(t *testing.T) {
			d := f.an.Devices[0]
			check := func(m *Moment, what string, got, want int64) {
				t.Helper()
				if want == 0 && got == 0 {
					return
				}
				if want == 0 || math.Abs(float64(got-want))/float64(want) > 0.02 {
					t.Errorf("%s at %s = %d, want %d (torch) ±2%%", what, m.Label, got, want)
				}
			}
			last := d.Phases.Steps[len(d.Phases.Steps)-1]
			lastPeak, err := d.ParseMoment(fmt.Sprintf("step:%d:%s", last.Step, last.PeakPhase))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []*Moment{d.Peak, lastPeak} {
				check(m, "parameter", m.Categories[Parameter].Bytes, f.truth.ParamBytes)
				opt := f.truth.OptimizerStateBytes
				if m == d.Peak && d.Timeline.Start.Allocated == 0 && !optimizerBefore(d, m.Index) {
					opt = 0
				}
				if f.name != "plain-oom" { // torch's count is of the state after the failed step
					check(m, "optimizer state", m.Categories[OptimizerState].Bytes, opt)
				}
			}
		})
	}
}

// optimizerBefore reports whether an optimizer phase began before event i.
func optimizerBefore(d *Device, i int) bool {
	for _, ph := range d.Phases.List {
		// A peak inside the first optimizer.step counts: AdamW creates
		// every parameter's state at the start of its first step, before
		// the update's temporaries that make a peak there.
		if ph.Name == "optimizer" && ph.First < i {
			return true
		}
	}
	return false
}

// TestPlainCompiled: a compiled model's peak is in backward and its top
// site is the user's line, not an inductor file.
func TestPlainCompiled(t *testing.T) {
	for _, f := range loadPlain(t) {
		if f.name != "plain-compiled" {
			continue
		}
		d := f.an.Devices[0]
		if pp := d.Phases.PeakPhase; pp < 0 || d.Phases.List[pp].Name != "backward" {
			t.Errorf("peak phase = %d, want a backward phase", pp)
		}
		top := d.Peak.Sites[0]
		fr := f.an.Snapshot.Stacks.Frame(top.Site.Frame)
		if !strings.HasPrefix(fr.Filename, f.truth.Script) {
			t.Errorf("top site = %s, want a line of %s", top.Label, f.truth.Script)
		}
		return
	}
	t.Fatal("no plain-compiled fixture")
}

// TestPlainModelSites: in a run of the HF Trainer, whose model code lives
// in site-packages, the logits are charged to the model's lm_head line
// (truth.json's sites.logits), called from the user's script, at the
// forward peak of every recorded step.
func TestPlainModelSites(t *testing.T) {
	for _, f := range loadPlain(t) {
		logits, ok := f.truth.Sites["logits"]
		if !ok {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			d := f.an.Devices[0]
			st := f.an.Snapshot.Stacks
			for _, s := range d.Phases.Steps {
				m, err := d.ParseMoment(fmt.Sprintf("step:%d:forward", s.Step))
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, sb := range m.Sites {
					fr := st.Frame(sb.Site.Frame)
					if sb.Site.Kind != SiteLibrary || fr.Filename != logits.File || fr.Line != logits.Line {
						continue
					}
					found = true
					if !sb.Site.HasCaller || st.Frame(sb.Site.Caller).Filename != f.truth.Script {
						t.Errorf("step %d: the logits site %s has no caller in %s", s.Step, sb.Label, f.truth.Script)
					}
				}
				if !found {
					t.Errorf("step %d forward peak: no site at %s:%d (the logits)", s.Step, logits.File, logits.Line)
				}
			}
		})
	}
}

// TestPlainOOM: the out-of-memory error the script caught is found in the
// step and phase torch raised it in, and what the failed step had built
// keeps its category (activations, not unknown).
func TestPlainOOM(t *testing.T) {
	for _, f := range loadPlain(t) {
		if f.truth.OOM == nil {
			continue
		}
		d := f.an.Devices[0]
		if len(d.OOMs) != 1 {
			t.Fatalf("%s: %d OOMs, want 1", f.name, len(d.OOMs))
		}
		o := d.OOMs[0]
		if o.Step != f.truth.OOM.Step || o.Phase != f.truth.OOM.Phase {
			t.Errorf("%s: OOM in step %d %s, want step %d %s (torch)", f.name, o.Step, o.Phase, f.truth.OOM.Step, f.truth.OOM.Phase)
		}
		if act, unk := o.At.Categories[Activation].Bytes, o.At.Categories[Unknown].Bytes; act <= unk {
			t.Errorf("%s: at the OOM activations %d B, unknown %d B: the failed forward's tensors are activations", f.name, act, unk)
		}
	}
}
