package attribution

import (
	"fmt"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// generateRun builds a recording of calls generate() calls of a model of
// layers layers, each with a prompt of prompt tokens and steps decode
// steps, shaped like transformers' own: the weights moved by .to(), a
// DynamicCache grown by one torch.cat per layer and token (keys and values
// on two lines of cache_utils.py, the old tensor freed after the new one is
// made), activations and logits freed within each forward, and the cache
// dropped when the call returns (kept when keep). With train, each forward
// is followed by backward work on the engine's thread instead of decode
// steps.
func generateRun(calls, layers, prompt, steps int, keep, train bool) *snapshot.Snapshot {
	return generateCache(calls, layers, prompt, steps, keep, train, false)
}

// generateCache is generateRun; with static, the cache is allocated once,
// at its full length, in the prefill's layers (StaticCache's
// lazy_initialization), and decode steps allocate none of it.
func generateCache(calls, layers, prompt, steps int, keep, train, static bool) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Stacks: snapshot.NewStacks(), HasTraces: true}
	st := s.Stacks
	fr := func(name, file string, line int64) snapshot.FrameID {
		return st.InternFrame(snapshot.Frame{Name: name, Filename: file, Line: line})
	}
	const sp = "/env/lib/python3.12/site-packages/"
	mod := fr("<module>", "/home/u/serve.py", 50)
	load := st.InternStack([]snapshot.FrameID{fr("convert", sp+"torch/nn/modules/module.py", 1370),
		fr("_apply", sp+"torch/nn/modules/module.py", 965), fr("to", sp+"transformers/modeling_utils.py", 3706),
		fr("main", "/home/u/serve.py", 20), mod})
	call := fr("main", "/home/u/serve.py", 30)
	gen := func(frames ...snapshot.FrameID) snapshot.StackID {
		return st.InternStack(append(frames, fr("generate", sp+"transformers/generation/utils.py", 2802), call, mod))
	}
	fwd := fr("_call_impl", sp+"torch/nn/modules/module.py", 1790)
	act := gen(fr("forward", sp+"transformers/models/llama/modeling_llama.py", 175), fwd)
	logits := gen(fr("forward", sp+"transformers/models/llama/modeling_llama.py", 480), fwd)
	key := gen(fr("update", sp+"transformers/cache_utils.py", 146), fwd)
	val := gen(fr("update", sp+"transformers/cache_utils.py", 147), fwd)
	if static {
		key = gen(fr("lazy_initialization", sp+"transformers/cache_utils.py", 434), fwd)
		val = gen(fr("lazy_initialization", sp+"transformers/cache_utils.py", 439), fwd)
	}
	sample := gen(fr("_sample", sp+"transformers/generation/utils.py", 3042))
	var ev []snapshot.Event
	tm, addr := int64(1_000_000), uint64(1<<32)
	add := func(a snapshot.Action, stack snapshot.StackID, size int64, at uint64) uint64 {
		tm += 10
		if a == snapshot.ActionAlloc {
			addr += 1 << 26
			at = addr
		}
		ev = append(ev, snapshot.Event{Action: a, Addr: at, Size: size, Stack: stack, TimeUS: tm})
		if a == snapshot.ActionFreeRequested {
			tm += 10
			ev = append(ev, snapshot.Event{Action: snapshot.ActionFreeCompleted, Addr: at, Size: size, Stack: stack, TimeUS: tm})
		}
		return at
	}
	for range 3 * layers {
		add(snapshot.ActionAlloc, load, 1<<22, 0)
	}
	const perToken = 1 << 12 // one layer's keys (or values) for one token
	for range calls {
		cache := make([]uint64, 2*layers)
		forward := func(tokens, length int) {
			for l := range layers {
				a := add(snapshot.ActionAlloc, act, int64(tokens)<<14, 0)
				for j, stack := range []snapshot.StackID{key, val} {
					if static {
						if cache[2*l+j] == 0 {
							cache[2*l+j] = add(snapshot.ActionAlloc, stack, int64((prompt+steps)*perToken), 0)
						}
						continue
					}
					nw := add(snapshot.ActionAlloc, stack, int64(length*perToken), 0)
					if old := cache[2*l+j]; old != 0 {
						add(snapshot.ActionFreeRequested, stack, int64((length-tokens)*perToken), old)
					}
					cache[2*l+j] = nw
				}
				add(snapshot.ActionFreeRequested, act, int64(tokens)<<14, a)
			}
			lg := add(snapshot.ActionAlloc, logits, int64(tokens)<<18, 0)
			add(snapshot.ActionFreeRequested, logits, int64(tokens)<<18, lg)
			smp := add(snapshot.ActionAlloc, sample, 1<<10, 0)
			add(snapshot.ActionFreeRequested, sample, 1<<10, smp)
		}
		forward(prompt, prompt)
		if train {
			g := add(snapshot.ActionAlloc, 0, 1<<20, 0)
			add(snapshot.ActionFreeRequested, 0, 1<<20, g)
		} else {
			for k := 1; k <= steps; k++ {
				forward(1, prompt+k)
			}
		}
		if !keep {
			for j, a := range cache {
				add(snapshot.ActionFreeRequested, key, int64((prompt+steps)*perToken), a)
				cache[j] = 0
			}
		}
	}
	s.Traces = [][]snapshot.Event{ev}
	return s
}

// TestGeneratePhases: each generate() call is a step of prefill and
// decode, the cache holds 2 × layers × tokens × perToken bytes and grows
// 2 × layers × perToken a step; the same forwards with a backward hold no
// kv cache and no generate phases.
func TestGeneratePhases(t *testing.T) {
	const layers, prompt, steps = 3, 64, 5
	for _, c := range []struct {
		name  string
		calls int
		keep  bool
	}{{"one call, cache kept", 1, true}, {"three calls, cache dropped", 3, false}} {
		t.Run(c.name, func(t *testing.T) {
			d := Analyze(generateRun(c.calls, layers, prompt, steps, c.keep, false), Options{Device: -1}).Devices[0]
			p := d.Phases
			if p.Source != "kv cache" || len(p.Steps) != c.calls {
				t.Fatalf("%d steps from %s, want %d from the kv cache", len(p.Steps), p.Source, c.calls)
			}
			for _, s := range p.Steps {
				var names []string
				for _, pi := range s.Phases {
					names = append(names, p.List[pi].Name)
				}
				if len(names) != 2 || names[0] != "prefill" || names[1] != "decode" || s.PeakPhase != "prefill" {
					t.Errorf("step %d phases %v, peak in %s; want prefill, decode, peak in prefill", s.Step, names, s.PeakPhase)
				}
			}
			inf := d.Inference
			if inf == nil {
				t.Fatal("no Inference")
			}
			if inf.Calls != c.calls || !inf.Growing || inf.DecodeSteps != steps {
				t.Errorf("Inference: %d calls, growing %v, %d decode steps; want %d, true, %d", inf.Calls, inf.Growing, inf.DecodeSteps, c.calls, steps)
			}
			if want := int64(2 * layers * 1 << 12); inf.GrowthPerStep != want {
				t.Errorf("growth per step = %d, want %d", inf.GrowthPerStep, want)
			}
			if want := int64(2 * layers * prompt << 12); inf.KVAfterPrefill != want {
				t.Errorf("after the prefill = %d, want %d", inf.KVAfterPrefill, want)
			}
			if want := int64(2 * layers * (prompt + steps) << 12); inf.KVRequested != want {
				t.Errorf("kv cache at the end of the first call = %d, want %d", inf.KVRequested, want)
			}
			if want := int64(3*layers) << 22; inf.Weights.Bytes != want {
				t.Errorf("weights = %d, want %d", inf.Weights.Bytes, want)
			}
			if want := int64(prompt) << 18; inf.Activations != want {
				t.Errorf("prefill activations = %d, want the logits' %d", inf.Activations, want)
			}
		})
	}
	t.Run("training", func(t *testing.T) {
		d := Analyze(generateRun(2, layers, prompt, steps, true, true), Options{Device: -1}).Devices[0]
		if d.Phases.Source == "kv cache" || d.Inference != nil {
			t.Errorf("steps from %s, Inference %+v; want no generate phases and no Inference", d.Phases.Source, d.Inference)
		}
		for _, m := range []*Moment{d.Peak, d.End} {
			if kv := m.Categories[KVCache]; kv.Count > 0 {
				t.Errorf("kv cache at the %s = %d B, want none", m.Label, kv.Bytes)
			}
		}
	})
}

// TestWeightsInAPhase: weights moved by .to() inside an annotated phase,
// and kept, are parameters; what a module's forward keeps is unknown.
func TestWeightsInAPhase(t *testing.T) {
	s := generateRun(1, 2, 8, 2, true, false)
	ev := s.Traces[0]
	s.Annotations = []snapshot.Annotation{{Name: "memscope/step/0/forward", Start: true, TimeUS: ev[0].TimeUS - 1},
		{Name: "memscope/step/0/forward", TimeUS: ev[len(ev)-1].TimeUS + 1}}
	d := Analyze(s, Options{Device: -1}).Devices[0]
	if got, want := d.End.Categories[Parameter].Bytes, int64(6)<<22; got != want {
		t.Errorf("parameters at the end = %d, want %d (the .to() weights)", got, want)
	}
}

// TestStaticCachePhases: a cache allocated once splits into prefill and
// decode at the model's forwards (the sampling between them), holds its
// full length from the prefill on, and does not grow; with one forward
// only, the step is one generate phase.
func TestStaticCachePhases(t *testing.T) {
	const layers, prompt, steps = 3, 64, 5
	for _, c := range []struct {
		name  string
		steps int
		want  []string
	}{{"decode steps", steps, []string{"prefill", "decode"}}, {"prefill only", 0, []string{"generate"}}} {
		t.Run(c.name, func(t *testing.T) {
			d := Analyze(generateCache(1, layers, prompt, c.steps, true, false, true), Options{Device: -1}).Devices[0]
			p := d.Phases
			if p.Source != "kv cache" || len(p.Steps) != 1 {
				t.Fatalf("%d steps from %s, want 1 from the kv cache", len(p.Steps), p.Source)
			}
			var names []string
			for _, pi := range p.Steps[0].Phases {
				names = append(names, p.List[pi].Name)
			}
			if fmt.Sprint(names) != fmt.Sprint(c.want) {
				t.Errorf("phases %v, want %v", names, c.want)
			}
			inf := d.Inference
			if inf == nil || inf.Growing || inf.DecodeSteps != 0 {
				t.Fatalf("Inference %+v, want a cache that does not grow", inf)
			}
			if want := int64(2 * layers * (prompt + c.steps) << 12); inf.KVRequested != want {
				t.Errorf("kv cache = %d, want %d", inf.KVRequested, want)
			}
			if want := int64(prompt) << 18; inf.Activations != want {
				t.Errorf("activations at the %s peak = %d, want the logits' %d", inf.PeakPhase, inf.Activations, want)
			}
		})
	}
}

// TestEvalLoopCache: an eval loop of forwards with use_cache, each making
// a DynamicCache of one size and dropping it, holds no kv cache and makes
// no generate() steps; a StaticCache dropped at each call's return is
// still the cache, and each call a step.
func TestEvalLoopCache(t *testing.T) {
	d := Analyze(generateRun(4, 3, 64, 0, false, false), Options{Device: -1}).Devices[0]
	if d.Phases.Source == "kv cache" || d.Inference != nil || d.Peak.Categories[KVCache].Count > 0 {
		t.Errorf("eval loop: steps from %s, kv cache at the peak %d B; want no generate steps and no kv cache", d.Phases.Source, d.Peak.Categories[KVCache].Bytes)
	}
	d = Analyze(generateCache(3, 3, 64, 5, false, false, true), Options{Device: -1}).Devices[0]
	if d.Phases.Source != "kv cache" || len(d.Phases.Steps) != 3 || d.Peak.Categories[KVCache].Bytes != 2*3*(64+5)<<12 {
		t.Errorf("dropped static caches: %d steps from %s, kv cache at the peak %d B; want 3 from the kv cache, %d B",
			len(d.Phases.Steps), d.Phases.Source, d.Peak.Categories[KVCache].Bytes, 2*3*(64+5)<<12)
	}
}
