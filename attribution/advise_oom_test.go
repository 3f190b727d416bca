package attribution

import (
	"strings"
	"testing"

	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// phasePeak is torch's allocated peak of one phase of a step (0 when the
// truth has no such row).
func phasePeak(tr *truth.File, step int, phase string) int64 {
	for _, p := range tr.Phases {
		if p.Step == step && p.Phase == phase {
			return p.PeakAllocated
		}
	}
	return 0
}

// limitVerdictOf is the verdict a peak gets against a known limit: what
// torch's numbers say of a fix.
func limitVerdictOf(peak, limit int64) LimitVerdict {
	switch {
	case peak > limit:
		return LimitDoesNotFit
	case float64(limit-peak) < budget.MinHeadroom*float64(limit):
		return LimitTight
	}
	return LimitFits
}

// agrees reports whether a verdict under the OOM's bracket of the cap
// agrees with the verdict torch's cap gives: a bracket verdict of fits or
// does not fit must be the cap's; "cannot tell" only inside the bracket.
func agrees(bracket LimitFit, l Limit, byCap LimitVerdict) bool {
	switch bracket.Verdict {
	case LimitFits, LimitTight:
		return byCap != LimitDoesNotFit
	case LimitDoesNotFit:
		return byCap == LimitDoesNotFit
	}
	return bracket.Peak > l.Low && bracket.Peak < l.High
}

// TestAdviseOOMFirstStep: at AdamW's first step under a 1600 MiB cap
// (fixtures/workloads/oom-first-step), the failed step's need is what was
// allocated at the OOM plus the rest of two moments per parameter
// (torch: 2 × param_bytes − optimizer_state_bytes), and each
// optimizer-state fix's step peak is torch's numbers with the moments
// kept at its share (bf16 ½, 8-bit ¼, 8 shards ⅛, none on the device for
// offload and a stateless optimizer), or the step's backward peak where
// that is higher. Held against torch's cap_bytes, each fix's verdict is
// the one those numbers give (bf16 moments need 1,683,358,208 B: 5.4 MiB
// over the cap; the others fit), fits come first, and no combination is
// offered since fixes fit alone; without the cap given, the OOM's bracket
// never contradicts it.
func TestAdviseOOMFirstStep(t *testing.T) {
	const dir = "../fixtures/workloads/oom-first-step"
	tr := readTruth(t, dir)
	d := fixtureAnalysis(t, dir).Primary()
	live := phasePeak(tr, tr.OOM.Step, tr.OOM.Phase) // nothing was freed in the step before the OOM
	if live != tr.Window.AllocatedEnd {
		t.Fatalf("truth: optimizer peak %d is not the allocated end %d", live, tr.Window.AllocatedEnd)
	}
	P, S, C := tr.ParamBytes, tr.OptimizerStateBytes, tr.CapBytes
	state := tr.OptimizerStateNeeded // 2P: the moments the step was making
	wantNeed := live + state - S
	bwd := max(phasePeak(tr, 0, "forward"), phasePeak(tr, 0, "backward"))
	keep := map[budget.FixKind][2]int64{ // the share of the moments each keeps
		budget.FixBF16Moments: {1, 2}, budget.FixEightBitMoments: {1, 4}, budget.FixShardOptimizer: {1, budget.DefaultRanks},
		budget.FixOffloadOptimizer: {0, 1}, budget.FixStatelessOptimizer: {0, 1},
	}
	for _, given := range []bool{true, false} {
		name := "cap-bracket"
		opt := AdviseOptions{}
		if given {
			name, opt.DeviceMemory = "cap-given", C
		}
		t.Run(name, func(t *testing.T) {
			ad := d.Advise(opt)
			o := ad.OOM
			if o == nil {
				t.Fatal("Advise.OOM = nil, want the failed step")
			}
			if o.Step != tr.OOM.Step || o.Phase != tr.OOM.Phase || ad.Step != o.Step || ad.Phase != o.Phase {
				t.Errorf("OOM step %d %s (advice %d %s), want step %d %s (torch)", o.Step, o.Phase, ad.Step, ad.Phase, tr.OOM.Step, tr.OOM.Phase)
			}
			if o.Live != live || o.Need != wantNeed || o.Partial {
				t.Errorf("OOM live %d, need %d (partial %v); want %d and %d = %d + 2×%d − %d (torch)", o.Live, o.Need, o.Partial, live, wantNeed, live, P, S)
			}
			if o.Fit.Verdict != LimitDoesNotFit || limitVerdictOf(o.Need, C) != LimitDoesNotFit {
				t.Errorf("the step's need %d: verdict %d, want does not fit (torch's cap %d)", o.Need, o.Fit.Verdict, C)
			}
			seen := map[budget.FixKind]AdviceFix{}
			lastClass := 0
			for _, f := range ad.Fixes {
				if f.Limit == nil {
					t.Fatalf("fix %d has no limit fit", f.Kind)
				}
				if c := fitClass(f.Limit.Verdict); c < lastClass {
					t.Errorf("fix %d (verdict %d) ranked after a worse fit", f.Kind, f.Limit.Verdict)
				} else {
					lastClass = c
				}
				seen[f.Kind] = f
			}
			for kind, k := range keep {
				f, ok := seen[kind]
				if !ok {
					t.Errorf("no fix of kind %d", kind)
					continue
				}
				want := max(live-S+state*k[0]/k[1], bwd)
				if f.NewPeak != want {
					t.Errorf("fix %d: step peak %d, want %d (torch: %d − %d + %d×%d/%d, or the backward's %d)", kind, f.NewPeak, want, live, S, state, k[0], k[1], bwd)
				}
				if removes := state - state*k[0]/k[1]; f.Removes != removes {
					t.Errorf("fix %d: removes %d at the OOM, want %d of the %d moments", kind, f.Removes, removes, state)
				}
				byCap := limitVerdictOf(want, C)
				if given && f.Limit.Verdict != byCap || !given && !agrees(*f.Limit, o.Limit, byCap) {
					t.Errorf("fix %d: verdict %d (limit %+v), want what torch's cap %d gives %d: %d", kind, f.Limit.Verdict, o.Limit, C, want, byCap)
				}
			}
			if f := seen[budget.FixBF16Moments]; limitVerdictOf(f.NewPeak, C) != LimitDoesNotFit {
				t.Errorf("bf16 moments: step peak %d fits torch's cap %d; the fixture's numbers say it does not", f.NewPeak, C)
			}
			if ad.Combination != nil {
				t.Errorf("Combination = %+v, want none: fixes fit alone", ad.Combination)
			}
		})
	}
}

// TestAdviseOOMForward: a training step that ran out of memory in its
// forward is advised as the forward it was (fixtures/workloads/fsdp2-oom,
// one forward of an 8-layer FSDP2 Llama under a 6 GiB cap, no backward
// recorded): the step and phase torch raised it in; live and the request
// as torch's message rounds them; the forward's 8 layers found though the
// last was cut short; full checkpointing and half the micro-batch among
// the fixes; the terms adding up to the step's need; and under torch's
// cap_bytes each fix's verdict the one its peak gives. The plain MLP's OOM
// in backward (fixtures/plain-oom) gets half the micro-batch, which fits
// the cap as torch's own step at half the batch (step 3) did, while the
// failed step itself does not fit it.
func TestAdviseOOMForward(t *testing.T) {
	for _, c := range []struct {
		dir        string
		noBackward bool
		fixes      []budget.FixKind
	}{
		{"../fixtures/workloads/fsdp2-oom", true, []budget.FixKind{budget.FixFullCkpt, budget.FixMicroBatch}},
		{"../fixtures/plain-oom", false, []budget.FixKind{budget.FixMicroBatch}},
	} {
		t.Run(c.dir, func(t *testing.T) {
			tr := readTruth(t, c.dir)
			d := fixtureAnalysis(t, c.dir).Primary()
			ad := d.Advise(AdviseOptions{DeviceMemory: tr.CapBytes})
			o := ad.OOM
			if !ad.Training || o == nil {
				t.Fatalf("Advise: training %v, OOM %v; want the failed step advised", ad.Training, o)
			}
			if o.Step != tr.OOM.Step || o.Phase != tr.OOM.Phase || o.NoBackward != c.noBackward || !o.Partial {
				t.Errorf("OOM step %d %s, no backward %v, partial %v; want step %d %s (torch), %v, true", o.Step, o.Phase, o.NoBackward, o.Partial, tr.OOM.Step, tr.OOM.Phase, c.noBackward)
			}
			m := torchOOM.FindStringSubmatch(tr.OOM.Message)
			if m == nil {
				t.Fatalf("cannot read torch's OOM message: %s", tr.OOM.Message)
			}
			if units.Bytes(o.Request) != m[1] || units.Bytes(o.Live) != m[2] || o.More != o.Request || o.Need < o.Live+o.Request {
				t.Errorf("OOM request %s, live %s, more %d, need %d; want %s and %s (torch's message), the request more, at least their sum",
					units.Bytes(o.Request), units.Bytes(o.Live), o.More, o.Need, m[1], m[2])
			}
			if o.Fit.Verdict != LimitDoesNotFit && c.dir == "../fixtures/plain-oom" {
				t.Errorf("the failed step's need %d fits torch's cap %d: verdict %d", o.Need, tr.CapBytes, o.Fit.Verdict)
			}
			var sum int64
			for k := range TermFragmentation {
				sum += ad.Holders[k].Bytes
			}
			if sum != o.Need {
				t.Errorf("the terms add up to %d, want the step's need %d", sum, o.Need)
			}
			if c.noBackward && int64(ad.Layers) != tr.Layers {
				t.Errorf("Layers = %d, want the script's %d", ad.Layers, tr.Layers)
			}
			byKind := map[budget.FixKind]AdviceFix{}
			for _, f := range ad.Fixes {
				byKind[f.Kind] = f
				if f.Limit == nil || f.Limit.Verdict != limitVerdictOf(f.NewPeak, tr.CapBytes) {
					t.Errorf("fix %d: limit fit %+v, want the verdict %d of %d against torch's cap %d", f.Kind, f.Limit, limitVerdictOf(f.NewPeak, tr.CapBytes), f.NewPeak, tr.CapBytes)
				}
			}
			for _, k := range c.fixes {
				if _, ok := byKind[k]; !ok {
					t.Errorf("no fix of kind %d among %+v", k, ad.Fixes)
				}
			}
			if c.dir == "../fixtures/plain-oom" {
				half := phasePeak(tr, 3, "backward") // batch 8192, the failed step's 16384 halved
				f := byKind[budget.FixMicroBatch]
				if f.Limit == nil || fitClass(f.Limit.Verdict) != fitClass(limitVerdictOf(half, tr.CapBytes)) {
					t.Errorf("half the micro-batch: %+v; want the fit torch's half-batch step (%d B) had under the cap %d", f.Limit, half, tr.CapBytes)
				}
			}
		})
	}
}

// TestAdviseForeachTemporaries: where foreach AdamW's temporaries (made
// under torch/optim inside an Optimizer.step range, freed inside it) are
// live at the peak, a fused step is advised first (it costs nothing),
// removing exactly those blocks' bytes, found here from the timeline's
// live blocks, frames and ranges; on fixtures/workloads/foreach-peak its
// new peak is within 0.1% of torch's peak for the same run with
// AdamW(fused=True) (foreach-peak-fused), which gets no such fix.
func TestAdviseForeachTemporaries(t *testing.T) {
	for _, dir := range []string{"../fixtures/workloads/foreach-peak", "../fixtures/workloads/reduce-overhead"} {
		t.Run(dir, func(t *testing.T) {
			an := fixtureAnalysis(t, dir)
			d := an.Primary()
			ad := d.Advise(AdviseOptions{})
			want := foreachTemporariesAt(an.Snapshot, d.Device, d.Timeline, ad.PeakIndex)
			if want == 0 {
				t.Fatal("no foreach temporaries live at the peak")
			}
			if len(ad.Fixes) == 0 || ad.Fixes[0].Kind != budget.FixFusedAdamW {
				t.Fatalf("Fixes = %+v, want the fused optimizer first", ad.Fixes)
			}
			f := ad.Fixes[0]
			if f.Removes != want || f.Optimizer != "AdamW" {
				t.Errorf("fused step: removes %d (optimizer %q), want %d, the temporaries live at the peak, of AdamW", f.Removes, f.Optimizer, want)
			}
			if !strings.HasSuffix(dir, "foreach-peak") {
				return
			}
			fused := readTruth(t, dir+"-fused").Window.MaxAllocated
			if !within(f.NewPeak, fused, 0.001) {
				t.Errorf("fused step: new peak %d, want torch's %d with fused=True within 0.1%%", f.NewPeak, fused)
			}
			for _, g := range fixtureAnalysis(t, dir+"-fused").Primary().Advise(AdviseOptions{}).Fixes {
				if g.Kind == budget.FixFusedAdamW {
					t.Errorf("the fused run is advised a fused step: %+v", g)
				}
			}
		})
	}
}

// foreachTemporariesAt sums the blocks live after event i that were
// allocated under torch/optim inside an Optimizer.step range and freed
// inside the same range, from the snapshot alone.
func foreachTemporariesAt(s *snapshot.Snapshot, device int, tl *snapshot.Timeline, i int) int64 {
	var steps []snapshot.Range
	for _, r := range s.Ranges(device) {
		if strings.HasPrefix(r.Name, "Optimizer.step#") {
			steps = append(steps, r)
		}
	}
	in := func(t int64) int {
		for k, r := range steps {
			if r.Contains(t) {
				return k
			}
		}
		return -1
	}
	optim := func(id snapshot.StackID) bool {
		for _, f := range s.Stacks.Stack(id) {
			if strings.Contains(s.Stacks.Frame(f).Filename, "torch/optim/") {
				return true
			}
		}
		return false
	}
	events := tl.Events
	var sum int64
	for _, b := range tl.LiveAt(i) {
		if b.AllocIndex < 0 || b.Stack == 0 || !optim(b.Stack) {
			continue
		}
		r := in(events[b.AllocIndex].TimeUS)
		if r < 0 {
			continue
		}
		for j := i + 1; j < len(events); j++ {
			if ev := &events[j]; ev.Action == snapshot.ActionFreeRequested && ev.Addr == b.Addr {
				if in(ev.TimeUS) == r {
					sum += b.Size
				}
				break
			}
		}
	}
	return sum
}
