package attribution

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/snapshot"
)

// workload is one fixture under ../fixtures/workloads (issue 28): big-model
// workloads captured with plain torch, each with torch's truth.
type workload struct {
	name  string
	truth *truth.File
	an    *Analysis
}

func loadWorkloads(t *testing.T) []*workload {
	t.Helper()
	dirs, err := filepath.Glob("../fixtures/workloads/*/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 12 {
		t.Fatalf("%d workload fixtures, want 12", len(dirs))
	}
	var out []*workload
	for _, p := range dirs {
		dir := filepath.Dir(p)
		w := &workload{name: filepath.Base(dir), truth: readTruth(t, dir), an: fixtureAnalysis(t, dir)}
		out = append(out, w)
	}
	return out
}

// within reports whether got is within frac of want.
func within(got, want int64, frac float64) bool {
	if want == 0 {
		return got == 0
	}
	return math.Abs(float64(got-want)) <= frac*float64(want)
}

// TestWorkloadSteps: the steps found are the steps the script ran (no
// step from FSDP's per-module ranges, none from the layers of one
// forward), and every phase's peak is torch's max_memory_allocated for
// that phase, to the byte; a micro-batch's phase is read with
// step:N:PHASE:M, and step:N:PHASE is the highest of its micro-batches, as
// the phase table says. The hand-made CUDA graphs' replays allocate next to
// nothing, so no step is found there.
func TestWorkloadSteps(t *testing.T) {
	for _, w := range loadWorkloads(t) {
		t.Run(w.name, func(t *testing.T) {
			d := w.an.Devices[0]
			p := d.Phases
			want := w.truth.StepsRecorded
			if w.name == "cuda-graph" {
				want = 0
			}
			if len(p.Steps) != want {
				t.Fatalf("%d steps found (from %s %q), want %d", len(p.Steps), p.Source, p.Range, want)
			}
			if w.name == "cuda-graph" {
				return
			}
			top := map[[2]any]int64{}
			for _, row := range w.truth.Phases {
				if row.Step < 0 {
					continue
				}
				k := [2]any{row.Step, row.Phase}
				top[k] = max(top[k], row.PeakAllocated)
				spec := fmt.Sprintf("step:%d:%s", row.Step, row.Phase)
				if row.Micro != nil {
					spec = fmt.Sprintf("%s:%d", spec, *row.Micro)
				}
				m, err := d.ParseMoment(spec)
				if err != nil {
					t.Errorf("%s: %v", spec, err)
					continue
				}
				if m.Allocated != row.PeakAllocated {
					t.Errorf("--at %s: allocated %d, want %d (torch): off by %d", spec, m.Allocated, row.PeakAllocated, m.Allocated-row.PeakAllocated)
				}
			}
			for k, v := range top {
				spec := fmt.Sprintf("step:%d:%s", k[0], k[1])
				m, err := d.ParseMoment(spec)
				if err != nil {
					t.Errorf("%s: %v", spec, err)
					continue
				}
				if m.Allocated != v {
					t.Errorf("--at %s: allocated %d, want %d, the highest of its micro-batches (torch)", spec, m.Allocated, v)
				}
			}
		})
	}
}

// TestWorkloadCategories: at the peak, parameters (with FSDP2 their local
// shards; with adapters the frozen base too), optimizer state, kv cache
// and the private pools' reserved bytes are torch's within 5%. The
// optimizer's state is lazy: none at a peak before its first step.
func TestWorkloadCategories(t *testing.T) {
	for _, w := range loadWorkloads(t) {
		t.Run(w.name, func(t *testing.T) {
			d := w.an.Devices[0]
			m := d.Peak
			check := func(what string, got, want int64) {
				t.Helper()
				if !within(got, want, 0.05) {
					t.Errorf("%s at %s = %d, want %d (torch) ±5%%", what, m.Label, got, want)
				}
			}
			check("parameter", m.Categories[Parameter].Bytes, w.truth.ParamBytes)
			opt := w.truth.OptimizerStateBytes
			if d.Timeline.Start.Allocated == 0 && !optimizerBefore(d, m.Index) {
				opt = 0
			}
			check("optimizer state", m.Categories[OptimizerState].Bytes, opt)
			if w.truth.KVCacheBytes > 0 {
				check("kv cache", m.Categories[KVCache].Bytes, w.truth.KVCacheBytes)
			} else if kv := m.Categories[KVCache].Bytes; kv != 0 {
				t.Errorf("kv cache at the peak = %d, want none", kv)
			}
			var pools int64
			for _, pp := range d.Frag[1].Private { // at the end, as torch read them
				pools += pp.Reserved
			}
			check("private pools' reserved", pools, w.truth.PrivatePoolReserved)
			if b := m.Categories[BeforeRecording].Bytes; b > m.Allocated/20 {
				t.Errorf("before recording at the peak = %d of %d allocated: more than 5%% unnamed", b, m.Allocated)
			}
			if in := m.Categories[Input].Bytes; in > m.Allocated/10 {
				t.Errorf("input at the peak = %d of %d allocated: a step's batch is not a tenth of it", in, m.Allocated)
			}
		})
	}
}

// TestWorkloadLeaks: the evaluation loop's kept probabilities are found
// with torch's bytes per batch and their line; no other workload leaks.
func TestWorkloadLeaks(t *testing.T) {
	for _, w := range loadWorkloads(t) {
		t.Run(w.name, func(t *testing.T) { checkLeak(t, w.an, w.truth) })
	}
}

// TestWorkloadsTorchtitanName: torchtitan's per-rank OOM dump
// (memory_snapshot/iteration_N_exit/rankK_memory_snapshot.pickle) reads as
// the same file: one step, its OOM in forward.
func TestWorkloadsTorchtitanName(t *testing.T) {
	p := "../fixtures/workloads/fsdp2-oom/memory_snapshot/iteration_1_exit/rank0_memory_snapshot.pickle"
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	an := fixtureAnalysisFile(t, p)
	d := an.Devices[0]
	if len(d.Phases.Steps) != 1 || len(d.OOMs) != 1 || d.OOMs[0].Phase != "forward" || d.Leak.Found {
		t.Errorf("steps %d (%s), OOMs %d, leak %v: want one step, its OOM in forward, no leak", len(d.Phases.Steps), d.Phases.Source, len(d.OOMs), d.Leak.Found)
	}
}

// TestWorkloadOOMs: each OOM is found in the step and phase torch raised
// it in, for capacity (the allocator model, re-run under expandable
// segments with the same cap, also runs out); at AdamW's first step the
// step's remaining need is the rest of its moments, torch's state bytes
// short of two per parameter, within 1%.
func TestWorkloadOOMs(t *testing.T) {
	for _, w := range loadWorkloads(t) {
		if w.truth.OOM == nil {
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			d := w.an.Devices[0]
			if len(d.OOMs) != 1 {
				t.Fatalf("%d OOMs, want 1", len(d.OOMs))
			}
			o := d.OOMs[0]
			if o.Step != w.truth.OOM.Step || o.Phase != w.truth.OOM.Phase {
				t.Errorf("OOM in step %d %s, want step %d %s (torch)", o.Step, o.Phase, w.truth.OOM.Step, w.truth.OOM.Phase)
			}
			if o.Verdict.Kind != OOMCapacity || !o.Verdict.Simulated {
				t.Errorf("verdict kind %d (simulated %v), want capacity by simulation", o.Verdict.Kind, o.Verdict.Simulated)
			}
			want := w.truth.OptimizerStateNeeded - w.truth.OptimizerStateBytes
			if w.truth.OptimizerStateNeeded == 0 {
				if o.Needs != nil {
					t.Errorf("needs %d more, want nothing told", o.Needs.More)
				}
				return
			}
			if o.Needs == nil || !within(o.Needs.More, want, 0.01) {
				t.Errorf("needs %+v, want %d more (torch: %d of state to make, %d made)", o.Needs, want, w.truth.OptimizerStateNeeded, w.truth.OptimizerStateBytes)
			}
		})
	}
}

// TestWorkloadGradients: at the end of every backward phase the
// gradients are torch's gradient bytes within 5%: FSDP2's sharded
// gradients (its reduce-scatter outputs, not gathered parameters), the
// adapters' alone under LoRA (the autograd thread's cuBLAS workspace is
// none of them), and every parameter's before AdamW's first step.
func TestWorkloadGradients(t *testing.T) {
	for _, w := range loadWorkloads(t) {
		if w.truth.GradientBytes == 0 {
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			d := w.an.Devices[0]
			n := 0
			for _, ph := range d.Phases.List {
				if ph.Name != "backward" || ph.Step < 0 {
					continue
				}
				n++
				m := d.At(ph.Last, "end of backward")
				if got := m.Categories[Gradient].Bytes; !within(got, w.truth.GradientBytes, 0.05) {
					t.Errorf("gradient at the end of step %d's backward = %d, want %d (torch) ±5%%", ph.Step, got, w.truth.GradientBytes)
				}
			}
			if n == 0 {
				t.Fatal("no backward phase")
			}
		})
	}
}

// TestOnePassKeptIsActivation: a recording of one forward, dumped after
// it (the one-forward fixture under inference_mode; a CS336 forward with
// grad on), keeps the forward's output and what it saved for a backward
// that never ran: every block born in the recording and live at its end
// is an activation, none unknown, and the parameters are torch's count.
func TestOnePassKeptIsActivation(t *testing.T) {
	for _, dir := range []string{"../fixtures/workloads/one-forward", "testdata/thirdparty/cs336-2.7b-one-forward.pickle.gz"} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var d *Device
			if filepath.Ext(dir) == ".gz" {
				s, err := snapshot.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				d = Analyze(s, Options{Device: -1}).Devices[0]
			} else {
				d = fixtureAnalysis(t, dir).Devices[0]
				tr := readTruth(t, dir)
				if got := requestedBy(d.End)[Parameter]; !within(got, tr.ParamBytes, 0.05) {
					t.Errorf("parameters at the end %d, want torch's %d within 5%%", got, tr.ParamBytes)
				}
			}
			var kept, act int64
			for i := range d.End.Live {
				b := &d.End.Live[i]
				if b.AllocIndex < 0 || b.PendingFree {
					continue
				}
				kept += b.Size
				if c := d.End.Category[i]; c == Activation {
					act += b.Size
				} else {
					t.Errorf("block of %d B born at event %d, kept to the end: %v, want activation", b.Size, b.AllocIndex, c)
				}
			}
			if kept == 0 || act != kept || d.End.Categories[Unknown].Bytes != 0 {
				t.Errorf("kept %d B, activation %d B, unknown %d B at the end", kept, act, d.End.Categories[Unknown].Bytes)
			}
		})
	}
}
