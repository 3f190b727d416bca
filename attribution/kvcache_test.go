package attribution

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// requestedBy returns the requested bytes of m's allocated blocks by
// category: the tensors' own bytes, what truth.json counts.
func requestedBy(m *Moment) [NumCategories]int64 {
	var out [NumCategories]int64
	for i := range m.Live {
		if !m.Live[i].PendingFree {
			out[m.Category[i]] += m.Live[i].Requested
		}
	}
	return out
}

// TestInferKVCacheTruth: in generate() with a DynamicCache (grown by
// torch.cat per token) and a StaticCache (preallocated), the kv cache
// category at the end holds torch's count of every tensor the cache
// holds, and parameters the model's parameter bytes, each within 2%; the
// static run's frames with line 2^64−1 read as having no line.
func TestInferKVCacheTruth(t *testing.T) {
	for _, name := range []string{"infer-dynamic", "infer-static"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("../fixtures/advise", name)
			tr := readTruth(t, dir)
			d := fixtureAnalysis(t, dir).Devices[0]
			if tr.KVCacheBytes == 0 || tr.ParamBytes == 0 {
				t.Fatalf("truth.json has no kv_cache_bytes or param_bytes")
			}
			got := requestedBy(d.End)
			t.Logf("at the end: kv cache %d B (torch %d), parameter %d B (torch %d), requested", got[KVCache], tr.KVCacheBytes, got[Parameter], tr.ParamBytes)
			for _, c := range []struct {
				cat  Category
				want int64
			}{{KVCache, tr.KVCacheBytes}, {Parameter, tr.ParamBytes}} {
				if g := got[c.cat]; math.Abs(float64(g-c.want)) > 0.02*float64(c.want) {
					t.Errorf("%s at the end = %d B requested, want %d (torch) ±2%%", c.cat, g, c.want)
				}
			}
			if kv := d.Peak.Categories[KVCache].Bytes; kv == 0 {
				t.Errorf("kv cache at the peak (prefill) = 0, want the prefill's keys and values")
			}
			st := fixtureAnalysis(t, dir).Snapshot.Stacks
			for i := range st.Frames {
				fr := &st.Frames[i]
				if fr.Line < 0 || fr.Line > math.MaxInt32 {
					t.Errorf("frame %s %s has line %d", fr.Filename, fr.Name, fr.Line)
				}
			}
		})
	}
}

// allSnapshots returns every snapshot pickle under ../fixtures, at any
// depth (the advise and sweep fixtures sit below the top level).
func allSnapshots(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("../fixtures", func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasPrefix(e.Name(), "snapshot") && strings.HasSuffix(e.Name(), ".pickle") {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 30 {
		t.Fatalf("%d snapshots under ../fixtures, want every fixture's", len(out))
	}
	return out
}

// TestNoKVCacheOutsideInference: no fixture but the two generate() runs
// and the hand-written decode loop holds kv cache bytes at its peak or its end — the training Llamas build
// a DynamicCache in every forward (use_cache), and those are activations.
func TestNoKVCacheOutsideInference(t *testing.T) {
	for _, p := range allSnapshots(t) {
		if strings.Contains(p, "advise/infer-") || strings.Contains(p, "workloads/decode-loop") {
			continue
		}
		s, err := snapshot.Open(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, d := range Analyze(s, Options{Device: -1}).Devices {
			for _, m := range []*Moment{d.Peak, d.End} {
				if kv := m.Categories[KVCache]; kv.Count > 0 {
					t.Errorf("%s device %d: kv cache at the %s = %d B in %d blocks, want none", p, d.Device, m.Label, kv.Bytes, kv.Count)
				}
			}
		}
	}
}

// pools builds a stackless recording: weights loaded (four of them of one
// size, one after another), a forward whose activations are freed, then n
// pool tensors of 4 MiB with an 8-byte tensor after each, all kept, and a
// decode step; with train, a backward and optimizer range follow.
func pools(n int, train bool) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Stacks: snapshot.NewStacks(), HasTraces: true}
	var ev []snapshot.Event
	tm, addr := int64(1_000_000), uint64(1<<30)
	add := func(a snapshot.Action, size int64, at uint64) uint64 {
		tm += 10
		if a == snapshot.ActionAlloc {
			addr += 1 << 24
			at = addr
		}
		ev = append(ev, snapshot.Event{Action: a, Addr: at, Size: size, TimeUS: tm})
		return at
	}
	for _, size := range []int64{3 << 20, 2 << 20, 2 << 20, 2 << 20, 2 << 20, 5 << 20} {
		add(snapshot.ActionAlloc, size, 0)
	}
	for range 3 {
		a := add(snapshot.ActionAlloc, 6<<20, 0)
		add(snapshot.ActionFreeRequested, 6<<20, a)
	}
	for range n {
		add(snapshot.ActionAlloc, 4<<20, 0)
		add(snapshot.ActionAlloc, 8, 0)
	}
	a := add(snapshot.ActionAlloc, 1<<20, 0)
	add(snapshot.ActionFreeRequested, 1<<20, a)
	if train {
		s.Annotations = append(s.Annotations, snapshot.Annotation{Name: "Optimizer.step#AdamW.step", Start: true, TimeUS: tm + 5},
			snapshot.Annotation{Name: "Optimizer.step#AdamW.step", TimeUS: tm + 6})
	}
	s.Traces = [][]snapshot.Event{ev}
	return s
}

// TestKVPoolByShape: with no cache site recorded, an even number (≥ 4) of
// equal tensors allocated together after the model has run and kept to
// the end is the cache; the weights' equal tensors (loaded before anything
// is freed), an odd count, and any training recording are not.
func TestKVPoolByShape(t *testing.T) {
	for _, c := range []struct {
		name  string
		n     int
		train bool
		want  int64
	}{
		{"eight pools", 8, false, 8 * 4 << 20},
		{"five pools", 5, false, 0},
		{"two pools", 2, false, 0},
		{"training", 8, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Analyze(pools(c.n, c.train), Options{Device: -1}).Devices[0]
			if g := d.End.Categories[KVCache].Bytes; g != c.want {
				t.Errorf("kv cache at the end = %d B, want %d", g, c.want)
			}
		})
	}
}

// TestInferPhases: generate() is one step, told by its cache: its peak is
// torch's max_memory_allocated over the script's generate phase and the
// setup's its setup's, to the byte; the DynamicCache run splits into
// prefill (holding the peak) and decode, and its cache grows by 2 × layers
// × batch × KV heads × head dim × 2 B per decode step over new tokens − 1
// steps, from the prompt's keys and values; the StaticCache run does not
// grow, and its prefill ends between its first forward and its second
// (compiled) one, whose warm-up holds the device's peak.
func TestInferPhases(t *testing.T) {
	for _, name := range []string{"infer-dynamic", "infer-static"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("../fixtures/advise", name)
			tr := readTruth(t, dir)
			shape := tr
			d := fixtureAnalysis(t, dir).Devices[0]
			p := d.Phases
			if p.Source != "kv cache" || len(p.Steps) != tr.StepsRecorded {
				t.Fatalf("%d steps from %s, want %d from the kv cache", len(p.Steps), p.Source, tr.StepsRecorded)
			}
			var setup int64
			for _, ph := range p.List {
				if ph.Step < 0 {
					setup = max(setup, ph.Peak.Allocated)
				}
			}
			for _, row := range tr.Phases {
				got := p.Steps[0].Peak
				if row.Step < 0 {
					got = setup
				}
				if got != row.PeakAllocated {
					t.Errorf("peak of %s = %d, want %d (torch)", row.Phase, got, row.PeakAllocated)
				}
			}
			inf := d.Inference
			if inf == nil {
				t.Fatal("no Inference")
			}
			perStep := 2 * shape.Model.Layers * shape.Batch * shape.Model.KVHeads * shape.Model.HeadDim * 2
			if name == "infer-static" {
				// The decode forward is compiled: its first call's
				// warm-up (CUDA graph capture) holds the device's peak.
				if inf.Growing || inf.PeakPhase != "prefill" || inf.DecodePeak != tr.Window.MaxAllocated || inf.Peak >= inf.DecodePeak {
					t.Errorf("static cache: growing %v, peak phase %q, prefill peak %d, decode peak %d; want a cache allocated once, a prefill below the decode's peak %d (torch)",
						inf.Growing, inf.PeakPhase, inf.Peak, inf.DecodePeak, tr.Window.MaxAllocated)
				}
				if pp := p.PeakPhase; pp < 0 || p.List[pp].Name != "decode" {
					t.Errorf("device peak in phase %d, want decode", pp)
				}
				return
			}
			if !inf.Growing || inf.DecodeSteps != int(shape.NewTokens-1) || inf.GrowthPerStep != perStep {
				t.Errorf("growing %v over %d decode steps, %d B a step; want %d steps of %d B", inf.Growing, inf.DecodeSteps, inf.GrowthPerStep, shape.NewTokens-1, perStep)
			}
			if want := perStep * shape.Prompt; inf.KVAfterPrefill != want {
				t.Errorf("kv cache after the prefill = %d B, want %d (the prompt's keys and values)", inf.KVAfterPrefill, want)
			}
			if inf.KVRequested != tr.KVCacheBytes {
				t.Errorf("kv cache requested at the end = %d, want %d (torch)", inf.KVRequested, tr.KVCacheBytes)
			}
			if pp := p.PeakPhase; inf.PeakPhase != "prefill" || pp < 0 || p.List[pp].Name != "prefill" || inf.Peak != tr.Window.MaxAllocated {
				t.Errorf("peak phase %q, peak %d; want the prefill holding torch's peak %d", inf.PeakPhase, inf.Peak, tr.Window.MaxAllocated)
			}
			if inf.Activations <= 0 || inf.Activations >= inf.Peak-inf.Weights.Bytes {
				t.Errorf("prefill activations = %d B of a %d B peak over %d B of weights", inf.Activations, inf.Peak, inf.Weights.Bytes)
			}
		})
	}
}
