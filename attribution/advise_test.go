package attribution

import (
	"bytes"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// TestAdviseTruth: on the plain run of fixtures/advise, each fix's
// predicted new peak, computed from the plain run's own blocks, is within
// tolerance of torch's max_memory_allocated for the same run with that fix
// applied in a fresh process (3% for checkpointing, the micro-batch and the
// moments; 10% for the loss); a loss fix comes first; and the peak's terms
// add up to the peak.
func TestAdviseTruth(t *testing.T) {
	const dir = "../fixtures/advise/"
	d := fixtureAnalysis(t, dir+"train-none").Primary()
	none := readTruth(t, dir+"train-none")
	run := none
	if run.Batch*run.Seq == 0 || run.Model.Layers == 0 {
		t.Fatal("train-none/truth.json has no run shape (batch, seq, model.layers)")
	}
	// The chunked-loss run cut its batch × seq tokens into chunks of 256
	// (capture/advise/train.py's chunked_backward).
	ad := d.Advise(AdviseOptions{LossChunks: run.Batch * run.Seq / 256})
	if !ad.Training {
		t.Fatal("Advise(train-none).Training = false, want true")
	}
	if ad.Peak != none.Window.MaxAllocated {
		t.Errorf("Advise(train-none).Peak = %d, want torch's %d", ad.Peak, none.Window.MaxAllocated)
	}
	var sum int64
	for k := range TermFragmentation {
		sum += ad.Holders[k].Bytes
	}
	if sum != ad.Peak {
		t.Errorf("Advise(train-none): the terms add up to %d, want the peak %d", sum, ad.Peak)
	}
	if want := none.LogitsBytesFP32; ad.LogitsBytes != want {
		t.Errorf("Advise(train-none).LogitsBytes = %d, want the script's fp32 logits %d", ad.LogitsBytes, want)
	}
	if int64(ad.Layers) != run.Model.Layers {
		t.Errorf("Advise(train-none).Layers = %d, want the script's %d", ad.Layers, run.Model.Layers)
	}
	if len(ad.Fixes) == 0 {
		t.Fatal("Advise(train-none) has no fixes")
	}
	if k := ad.Fixes[0].Kind; k != budget.FixFusedLoss && k != budget.FixChunkedLoss {
		t.Errorf("Advise(train-none).Fixes[0].Kind = %d, want a loss fix", k)
	}
	byKind := map[budget.FixKind]AdviceFix{}
	for _, f := range ad.Fixes {
		byKind[f.Kind] = f
	}
	for _, c := range []struct {
		fix  string
		kind budget.FixKind
		tol  float64
	}{
		{"checkpointing", budget.FixFullCkpt, 0.03},
		{"chunked-loss", budget.FixChunkedLoss, 0.10},
		{"bf16-moments", budget.FixBF16Moments, 0.03},
		{"micro-batch", budget.FixMicroBatch, 0.03},
	} {
		t.Run(c.fix, func(t *testing.T) {
			f, ok := byKind[c.kind]
			if !ok {
				t.Fatalf("Advise(train-none) has no fix of kind %d", c.kind)
			}
			want := readTruth(t, dir+"train-"+c.fix).Window.MaxAllocated
			e := float64(f.NewPeak-want) / float64(want)
			t.Logf("%s: removes %d at the peak, new peak %d, torch %d: %+.2f%%", c.fix, f.Removes, f.NewPeak, want, 100*e)
			if math.Abs(e) > c.tol {
				t.Errorf("NewPeak(%s) = %d, want %d within %.0f%% (off by %+.2f%%)", c.fix, f.NewPeak, want, 100*c.tol, 100*e)
			}
			if f.Removes <= 0 || f.Blocks == 0 {
				t.Errorf("%s: Removes = %d over %d blocks, want bytes removed at the peak", c.fix, f.Removes, f.Blocks)
			}
		})
	}
}

// TestAdviseNoTrainingFixes: a recording with no backward gets no fixes.
func TestAdviseNoTrainingFixes(t *testing.T) {
	d := fixtureAnalysis(t, "../fixtures/advise/infer-dynamic").Primary()
	ad := d.Advise(AdviseOptions{})
	if ad.Training || len(ad.Fixes) != 0 {
		t.Errorf("Advise(infer-dynamic) = training %v with %d fixes, want no training and no fixes", ad.Training, len(ad.Fixes))
	}
}

// TestAdviseFixedRuns: a run with a fix applied is not advised that fix
// again, and its first fix is still a loss fix where the logits remain.
func TestAdviseFixedRuns(t *testing.T) {
	for _, c := range []struct {
		fix  string
		kind budget.FixKind
	}{
		{"checkpointing", budget.FixFullCkpt},
		{"chunked-loss", budget.FixChunkedLoss},
		{"bf16-moments", budget.FixBF16Moments},
	} {
		t.Run(c.fix, func(t *testing.T) {
			ad := fixtureAnalysis(t, "../fixtures/advise/train-"+c.fix).Primary().Advise(AdviseOptions{})
			if len(ad.Fixes) == 0 {
				t.Fatalf("Advise(train-%s) has no fixes", c.fix)
			}
			for _, f := range ad.Fixes {
				if f.Kind == c.kind {
					t.Errorf("Advise(train-%s) advises fix kind %d again: %+v", c.fix, c.kind, f)
				}
			}
			if k := ad.Fixes[0].Kind; k != budget.FixFusedLoss {
				t.Errorf("Advise(train-%s).Fixes[0].Kind = %d, want the fused loss (%d)", c.fix, k, budget.FixFusedLoss)
			}
		})
	}
}

// TestAdviseLeak: on the leak fixture the leak's blocks are a term of the
// peak, whole steps of torch's planted bytes, and dropping them is the
// first fix.
func TestAdviseLeak(t *testing.T) {
	const dir = "../fixtures/leak"
	per := readTruth(t, dir).Leak.BytesPerStep
	ad := fixtureAnalysis(t, dir).Primary().Advise(AdviseOptions{})
	leak := ad.Holders[TermLeak].Bytes
	if leak <= 0 || leak%per != 0 {
		t.Errorf("Advise(leak).Holders[leak] = %d, want a positive multiple of the planted %d per step", leak, per)
	}
	if len(ad.Fixes) == 0 || ad.Fixes[0].Kind != budget.FixReleaseLeak || ad.Fixes[0].Removes != leak {
		t.Errorf("Advise(leak).Fixes = %+v, want first the leak's release removing %d", ad.Fixes, leak)
	}
}

// TestSummaryCarriesAdvice: a summary keeps advise's first three fixes of
// a training peak, in advise's order, and none for a snapshot with no
// backward.
func TestSummaryCarriesAdvice(t *testing.T) {
	for _, c := range []struct {
		path string
		want int
	}{{"../fixtures/advise/train-none/snapshot.pickle", SummaryFixes}, {"../fixtures/plain-inference/snapshot.pickle", 0}} {
		s, err := snapshot.Open(c.path)
		if err != nil {
			t.Fatal(err)
		}
		an := Analyze(s, Options{Device: -1})
		got := Summarize(an, 5).Devices[0].Fixes
		ad := an.Devices[0].Advise(AdviseOptions{})
		if len(got) != c.want {
			t.Fatalf("%s: %d fixes in the summary, want %d", c.path, len(got), c.want)
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], ad.Fixes[i]) {
				t.Errorf("%s: summary fix %d = %+v, advise's %+v", c.path, i, got[i], ad.Fixes[i])
			}
		}
	}
}

// TestAdviseCombination: on the plain run of fixtures/advise, on a device
// smaller than the best single fix's new peak needs, no fix fits alone and
// the cheapest run that fits is given; its new peak is the step's peak
// recomputed event by event from the base and the composed deltas, and
// the composed deltas never take more than a block's size from it (the
// fused loss and the smaller micro-batch both shrink the logits).
func TestAdviseCombination(t *testing.T) {
	// The best fix alone (the fused loss) peaks at 2.74 GiB; with
	// sharding 1.80 GiB, then with bf16 moments too 1.73 GiB (checkpointing
	// and the micro-batch take a few KiB more: the logits hold the peak).
	d := fixtureAnalysis(t, "../fixtures/advise/train-none").Primary()
	const GiB = 1 << 30
	for _, c := range []struct {
		name    string
		memory  int64
		fixes   int // fixes in the run, 0: no combination
		verdict budget.FitVerdict
	}{
		{"fused-fits", 3 * GiB, 0, 0},
		{"2.7GiB", 27 * GiB / 10, 2, budget.Fits},
		{"1.85GiB", 185 * GiB / 100, 3, budget.Fits}, // 1.80 GiB is tight there
		{"1.5GiB", 15 * GiB / 10, 5, budget.DoesNotFit},
	} {
		t.Run(c.name, func(t *testing.T) {
			ad, st, dss := d.advise(AdviseOptions{DeviceMemory: c.memory})
			for i, f := range ad.Fixes {
				// One fix composed alone is that fix.
				if p, _ := st.peakWith(st.combine([][]delta{dss[i]})); p != f.NewPeak {
					t.Errorf("combine(fix %d alone) peak = %d, want its NewPeak %d", i, p, f.NewPeak)
				}
			}
			cb := ad.Combination
			if c.fixes == 0 {
				if cb != nil {
					t.Errorf("Advise(%d B).Combination = %+v, want nil (a fix fits alone)", c.memory, cb)
				}
				return
			}
			if cb == nil {
				t.Fatalf("Advise(%d B).Combination = nil, want a run of %d fixes", c.memory, c.fixes)
			}
			for _, f := range ad.Fixes {
				if f.Fit == nil || f.Fit.Verdict == budget.Fits || f.Fit.Memory != c.memory {
					t.Errorf("fix %d alone: Fit = %+v, want it not to fit %d B", f.Kind, f.Fit, c.memory)
				}
			}
			t.Logf("%d B: fixes %v (kinds %v) → new peak %d at event %d, %+v", c.memory, cb.Fixes, cb.Kinds, cb.NewPeak, cb.NewPeakIndex, cb.Fit)
			if len(cb.Fixes) != c.fixes || cb.Fit.Verdict != c.verdict || len(cb.Kinds) != len(cb.Fixes) {
				t.Errorf("Advise(%d B).Combination: %d fixes, verdict %d; want %d, verdict %d", c.memory, len(cb.Fixes), cb.Fit.Verdict, c.fixes, c.verdict)
			}
			for _, k := range cb.Kinds {
				if k == budget.FixChunkedLoss {
					t.Errorf("Combination %v has the chunked loss with the fused one", cb.Kinds)
				}
			}
			var run [][]delta
			for _, i := range cb.Fixes {
				run = append(run, dss[i])
			}
			ds := st.combine(run)
			// The peak, event by event, with no prefix sums.
			var want int64
			at := -1
			for p := range st.base {
				v := st.base[p]
				for _, x := range ds {
					if st.pos(x.start) <= p && p < st.pos(x.end) {
						v += x.bytes
					}
				}
				if at < 0 || v > want {
					want, at = v, p+st.first-1
				}
			}
			if cb.NewPeak != want || cb.NewPeakIndex != at {
				t.Errorf("Combination new peak = %d after event %d, want %d after %d recomputed from the deltas", cb.NewPeak, cb.NewPeakIndex, want, at)
			}
			// No block loses more than itself anywhere.
			byBlock := map[int][]delta{}
			for _, x := range ds {
				if x.block >= 0 {
					byBlock[x.block] = append(byBlock[x.block], x)
				}
			}
			for k, xs := range byBlock {
				for _, at := range xs {
					var v int64
					for _, x := range xs {
						if x.start <= at.start && at.start < x.end {
							v += x.bytes
						}
					}
					if v < -st.blocks[k].size {
						t.Fatalf("block %d (%d B): the composed deltas take %d B after event %d", k, st.blocks[k].size, -v, at.start)
					}
				}
			}
		})
	}
}

// TestAdviseCombineOverlap: the fused loss and the smaller micro-batch both
// shrink the logits, and both make the output projection's gradient early;
// composed, each logits block goes once (the fused loss takes it all, the
// micro-batch's half of it is nothing more) and each block has at most one
// change of each kind, so the peak differs from the one of adding the two
// fixes' bytes (which removes the logits twice and the gradient comes twice).
func TestAdviseCombineOverlap(t *testing.T) {
	d := fixtureAnalysis(t, "../fixtures/advise/train-none").Primary()
	ad, st, dss := d.advise(AdviseOptions{})
	fused, micro := -1, -1
	for i, f := range ad.Fixes {
		switch f.Kind {
		case budget.FixFusedLoss:
			fused = i
		case budget.FixMicroBatch:
			micro = i
		}
	}
	if fused < 0 || micro < 0 {
		t.Fatalf("Advise(train-none) lacks the fused loss (%d) or the micro-batch (%d)", fused, micro)
	}
	ds := st.combine([][]delta{dss[fused], dss[micro]})
	logits := 0
	seen := map[[2]int]bool{}
	for _, x := range ds {
		if x.block >= 0 && x.op != opDrop {
			if key := [2]int{x.block, int(x.op)}; seen[key] {
				t.Errorf("block %d has two composed changes of op %d", x.block, x.op)
			} else {
				seen[key] = true
			}
		}
		if x.block < 0 || !st.blocks[x.block].logits || x.op != opShrink {
			continue
		}
		logits++
		if b := &st.blocks[x.block]; x.bytes != -b.size {
			t.Errorf("logits block %d (%d B): composed shrink %d, want −%d (gone once)", x.block, b.size, x.bytes, b.size)
		}
	}
	if logits == 0 {
		t.Fatal("the composed deltas shrink no logits block")
	}
	composed, _ := st.peakWith(ds)
	added, _ := st.peakWith(append(append([]delta{}, dss[fused]...), dss[micro]...))
	t.Logf("fused + micro-batch: composed %d, bytes added %d, fused alone %d, micro alone %d",
		composed, added, ad.Fixes[fused].NewPeak, ad.Fixes[micro].NewPeak)
	if composed == added {
		t.Errorf("composed peak %d = the peak of the bytes added, want the overlap counted once", composed)
	}
}

// TestAdviseInference: advise on a generate() recording gives its memory
// by the inference breakdown, the cache's growth per decode step being
// 2 × layers × batch × kv heads × head dim × 2 B of the fixture's model,
// and against a device the headroom at the peak and the decode steps of
// that growth it holds; a preallocated cache has no growth to count.
func TestAdviseInference(t *testing.T) {
	const mem = 8 << 30
	for _, c := range []struct {
		dir     string
		growing bool
	}{{"../fixtures/advise/infer-dynamic/", true}, {"../fixtures/advise/infer-static/", false}} {
		s, err := snapshot.Open(c.dir + "snapshot.pickle")
		if err != nil {
			t.Fatal(err)
		}
		tr := readTruth(t, c.dir)
		d := Analyze(s, Options{Device: -1}).Devices[0]
		ad := d.Advise(AdviseOptions{DeviceMemory: mem})
		ia := ad.Inference
		if ad.Training || ia == nil {
			t.Fatalf("%s: training %v, inference %v; want the inference advice", c.dir, ad.Training, ia)
		}
		if ia.Headroom != mem-d.Peak.Allocated {
			t.Errorf("%s: headroom %d, want %d − %d", c.dir, ia.Headroom, int64(mem), d.Peak.Allocated)
		}
		want := 2 * tr.Model.Layers * tr.Batch * tr.Model.KVHeads * tr.Model.HeadDim * 2
		switch {
		case c.growing && (ia.GrowthPerStep != want || ia.MoreSteps != ia.Headroom/want):
			t.Errorf("%s: growth %d per step (want %d), %d more steps (want %d)", c.dir, ia.GrowthPerStep, want, ia.MoreSteps, ia.Headroom/want)
		case !c.growing && ia.MoreSteps != 0:
			t.Errorf("%s: a preallocated cache counted %d more steps", c.dir, ia.MoreSteps)
		}
	}
}

// TestAdviseSettingsMatchTorch: the allocator settings advise simulates
// say what torch reserved when the workload ran under them: on the
// variable-length workload, expandable segments' reserved peak is torch's
// (fixtures/whatif-varlen/expandable) within 2%, and the settings torch
// measured no saving for are not offered.
func TestAdviseSettingsMatchTorch(t *testing.T) {
	s, err := snapshot.Open("../fixtures/whatif-varlen/default/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	ad := Analyze(s, Options{Device: -1}).Devices[0].Advise(AdviseOptions{Settings: true})
	if len(ad.Settings) != 1 || ad.Settings[0].Conf != "expandable_segments:True" {
		t.Fatalf("settings %+v, want expandable segments alone (torch's maxsplit128 and gc06 runs reserved as the default did)", ad.Settings)
	}
	tr := readTruth(t, "../fixtures/whatif-varlen/expandable")
	got, want := ad.Settings[0].PeakReserved, tr.MemoryStatsEnd["reserved_bytes.all.peak"]
	if e := math.Abs(float64(got-want)) / float64(want); e > 0.02 {
		t.Errorf("expandable segments: reserved peak %d, torch's %d: off by %.1f%%", got, want, 100*e)
	}
}

// TestSimulateSettingsStopped: advise's settings stop as soon as their
// reserved peak cannot save 1% (allocator.WhatIfOptions.Stop), and keep
// exactly the settings, with the same peaks, that running each to the end
// keeps; on every fixture, generated snapshots included.
func TestSimulateSettingsStopped(t *testing.T) {
	stopped, kept, compared := 0, 0, 0
	paths, _ := filepath.Glob("../fixtures/*/snapshot.pickle")
	more, _ := filepath.Glob("../fixtures/*/*/snapshot.pickle")
	for _, path := range append(paths, more...) {
		s, err := snapshot.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range Analyze(s, Options{Device: -1}).Devices {
			rec := d.Timeline.PeakReserved.Bytes
			full := d.whatIfs(adviseSettings, nil, true, false)
			early := d.whatIfs(adviseSettings, func(p int64) bool { return 100*(rec-p) < rec }, true, false)
			for i := range full {
				if full[i].err != nil || early[i].err != nil {
					if (full[i].err == nil) != (early[i].err == nil) {
						t.Fatalf("%s device %d %s: errors %v and %v", path, d.Device, full[i].conf, full[i].err, early[i].err)
					}
					continue
				}
				compared++
				f, e := full[i].res, early[i].res
				if e.Stopped >= 0 {
					stopped++
					if 100*(rec-f.PeakReserved) >= rec || f.OOM != nil {
						t.Errorf("%s device %d %s: stopped at event %d, but run to the end it peaks at %d of %d recorded (oom %v): kept",
							path, d.Device, full[i].conf, e.Stopped, f.PeakReserved, rec, f.OOM != nil)
					}
					continue
				}
				if f.PeakReserved != e.PeakReserved || (f.OOM == nil) != (e.OOM == nil) {
					t.Errorf("%s device %d %s: not stopped, yet peak %d (oom %v) against %d (oom %v) run to the end",
						path, d.Device, full[i].conf, e.PeakReserved, e.OOM != nil, f.PeakReserved, f.OOM != nil)
				}
				kept++
			}
		}
	}
	if stopped == 0 || kept == 0 {
		t.Fatalf("%d what-ifs compared, %d stopped, %d run to the end: both kinds must be seen", compared, stopped, kept)
	}
	t.Logf("%d what-ifs compared: %d stopped early, %d run to the end", compared, stopped, kept)
}

// A setting the recording already runs under is not advised, though the
// model's replay of a divergent recording may reserve less under it: a
// run recorded with expandable_segments:True (fixtures/expandable, with
// segments and blocks held from before recording added, which the model
// lays out differently) is not told to set it, and, since the model does
// not match it, is told no setting.
func TestAdviseSkipsRecordedSetting(t *testing.T) {
	src, err := snapshot.Open(filepath.Join("..", "fixtures", "expandable", "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := snapgen.WriteOptions(&buf, src, 0, snapgen.Options{Segments: 256, Blocks: 16, Repeats: 2}); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Decode(&buf, "expandable-held")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Settings["PYTORCH_CUDA_ALLOC_CONF"].(string), "expandable_segments:True") {
		t.Fatalf("the source is not recorded with expandable segments: %v", s.Settings)
	}
	d := Analyze(s, Options{Device: 0}).Devices[0]
	// The model diverges on this file, so advise names no setting at all
	// (none is advised from a model that does not follow the recording);
	// the settings it would run are the two the recording does not hold.
	if adv, why := d.SimulateSettings(), d.SimulateSettingsWhy(); len(adv) != 0 || !strings.Contains(why, "the model does not match the recording") {
		t.Errorf("advised %+v (why %q) from a model that does not match the recording; want none, and why", adv, why)
	}
	ws := d.whatIfs(adviseSettings, nil, true, false)
	if len(ws) != len(adviseSettings)-1 {
		t.Errorf("%d settings run, want %d: all but the recorded one", len(ws), len(adviseSettings)-1)
	}
	for _, w := range ws {
		if w.conf == "expandable_segments:True" {
			t.Errorf("ran %s, which the recording runs under", w.conf)
		}
	}
}
