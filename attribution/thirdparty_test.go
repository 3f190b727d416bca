package attribution

import (
	"strings"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// TestThirdPartyStateOnly: verl's state-only dump (testdata/thirdparty)
// names its memory by the stacks its blocks carry: the kv cache is every
// block allocated under vLLM's cache_engine.py (summed from the file
// itself), the weights and the Megatron buffers are parameters and its
// distributed optimizer's main copies optimizer state; nothing is
// "before recording" (nothing was recorded), and what no stack names is
// under 1% of the whole.
func TestThirdPartyStateOnly(t *testing.T) {
	s, err := snapshot.Open("testdata/thirdparty/verl-state.pickle.gz")
	if err != nil {
		t.Fatal(err)
	}
	d := Analyze(s, Options{Device: -1}).Devices[0]
	// Megatron's buffer __init__ allocates param_data, then grad_data:
	// the file's last allocating line there is the gradients'.
	var gradLine int64
	for i := range d.End.Live {
		for _, f := range s.Stacks.Stack(d.End.Live[i].Stack) {
			if fr := s.Stacks.Frame(f); strings.HasSuffix(fr.Filename, megatronBuffers) {
				gradLine = max(gradLine, fr.Line)
			}
		}
	}
	var kv, opt, grad, buf int64
	for i := range d.End.Live {
		b := &d.End.Live[i]
		for _, f := range s.Stacks.Stack(b.Stack) {
			fr := s.Stacks.Frame(f)
			fn := fr.Filename
			if strings.HasSuffix(fn, "vllm/worker/cache_engine.py") {
				kv += b.Size
				break
			}
			if strings.HasSuffix(fn, "megatron/core/optimizer/distrib_optimizer.py") {
				opt += b.Size
				break
			}
			if strings.HasSuffix(fn, megatronBuffers) {
				if fr.Line == gradLine {
					grad += b.Size
				} else {
					buf += b.Size
				}
				break
			}
		}
	}
	m := d.End
	if kv == 0 || m.Categories[KVCache].Bytes != kv {
		t.Errorf("kv cache = %d, want %d (the blocks under cache_engine.py)", m.Categories[KVCache].Bytes, kv)
	}
	if opt == 0 || m.Categories[OptimizerState].Bytes != opt {
		t.Errorf("optimizer state = %d, want %d (the blocks under distrib_optimizer.py)", m.Categories[OptimizerState].Bytes, opt)
	}
	if grad == 0 || buf == 0 || m.Categories[Gradient].Bytes != grad || m.Categories[Parameter].Bytes < buf {
		t.Errorf("gradient = %d, parameter = %d; want grad_data's %d (line %d of %s) and at least param_data's %d",
			m.Categories[Gradient].Bytes, m.Categories[Parameter].Bytes, grad, gradLine, megatronBuffers, buf)
	}
	// The cache is vLLM's pool, told by its blocks' stacks alone: an
	// Inference allocated once, with the trainer beside it.
	if inf := d.Inference; inf == nil || inf.Engine != "vLLM" || inf.Growing || inf.KVCache.Bytes != kv ||
		inf.Trainer != grad+opt || inf.Weights != m.Categories[Parameter] {
		t.Errorf("Inference = %+v; want vLLM's pool of %d B, not growing, trainer %d, weights %d", inf, kv, grad+opt, m.Categories[Parameter].Bytes)
	} else if fr := s.Stacks.Frame(inf.PoolFrame); !strings.HasSuffix(fr.Filename, "vllm/worker/cache_engine.py") || fr.Name != "_allocate_kv_cache" {
		t.Errorf("pool frame %s %s, want cache_engine.py _allocate_kv_cache", fr.Filename, fr.Name)
	}
	if b := m.Categories[BeforeRecording].Bytes; b != 0 {
		t.Errorf("before recording = %d in a state-only dump, want none", b)
	}
	if u := m.Categories[Unknown].Bytes + m.Categories[GraphPool].Bytes; u > m.Allocated/100 {
		t.Errorf("unknown and pool-only = %d of %d allocated, want under 1%%", u, m.Allocated)
	}
}

// TestThirdPartyOneForward: one forward through a model's layers, in two
// course snapshots from public repositories, is one step (the repeats
// are its 32 and 24 layers), with no leak, and holds no kv cache.
func TestThirdPartyOneForward(t *testing.T) {
	for _, c := range []struct {
		file   string
		layers string
	}{
		{"testdata/thirdparty/cs336-2.7b-one-forward.pickle.gz", "×32"},
		{"testdata/thirdparty/cs336-medium-inference.pickle.gz", "×24"},
	} {
		t.Run(c.file, func(t *testing.T) {
			s, err := snapshot.Open(c.file)
			if err != nil {
				t.Fatal(err)
			}
			d := Analyze(s, Options{Device: -1}).Devices[0]
			if n := len(d.Phases.Steps); n != 1 || d.Phases.Source != "one pass" || !strings.HasSuffix(d.Phases.Range, c.layers) {
				t.Errorf("%d steps from %s (%q), want one pass through layers %s", n, d.Phases.Source, d.Phases.Range, c.layers)
			}
			if d.Leak.Found {
				t.Errorf("leak found: %d B per step", d.Leak.GrowthPerStep)
			}
			for _, m := range []*Moment{d.Peak, d.End} {
				if kv := m.Categories[KVCache].Bytes; kv != 0 {
					t.Errorf("kv cache at the %s = %d, want none", m.Label, kv)
				}
			}
		})
	}
}

// TestNoHistoryCategories: a state-only dump and a legacy one-entry
// recording (fixtures/quirks, torch's truth beside each) hold no history,
// so nothing is "before recording": their blocks are named by their
// stacks (AdamW's moments under torch/optim, the weights under a
// module's __init__), and parameter and optimizer-state bytes are
// torch's within 5%.
func TestNoHistoryCategories(t *testing.T) {
	for _, name := range []string{"state-only", "legacy-one-entry"} {
		t.Run(name, func(t *testing.T) {
			dir := "../fixtures/quirks/" + name
			tr := readTruth(t, dir)
			d := fixtureAnalysis(t, dir).Devices[0]
			m := d.End
			if b := m.Categories[BeforeRecording].Bytes; b != 0 {
				t.Errorf("before recording = %d, want none", b)
			}
			if got := m.Categories[Parameter].Bytes; !within(got, tr.ParamBytes, 0.05) {
				t.Errorf("parameter = %d, want %d (torch) ±5%%", got, tr.ParamBytes)
			}
			if got := m.Categories[OptimizerState].Bytes; !within(got, tr.OptimizerStateBytes, 0.05) {
				t.Errorf("optimizer state = %d, want %d (torch) ±5%%", got, tr.OptimizerStateBytes)
			}
		})
	}
}

// cs336Params is the parameter bytes of CS336's BasicsTransformerLM in
// fp32: two vocab × d_model embeddings (input and output), per layer four
// attention and three feed-forward matrices and two norms, a final norm.
func cs336Params(vocab, dm, layers, dff int64) int64 {
	return 4 * (2*vocab*dm + layers*(4*dm*dm+3*dm*dff+2*dm) + dm)
}

// TestThirdPartyPreexistingGradients: three CS336 benchmarks whose
// recording starts after warm-up steps, so the parameters, their
// gradients and the optimizer's moments predate it, with no stack:
//   - five warm-up backwards without zero_grad, then one recorded forward
//     and backward accumulating into the warm-up's gradients (no optimizer);
//   - ten warm-up steps of a hand-written AdamW that never zeroes the
//     gradients and replaces its moments out of place (state["m"] = m_t),
//     under torch.compile, then one recorded step;
//   - the last of ten recorded steps (each iteration re-enables the
//     history): zero_grad frees the last step's gradients, backward makes
//     new ones, and the moments made in an earlier recording keep their
//     stacks.
//
// In each, the parameters and the gradients come out at the script's model
// size at the peak and at the end, and the optimizer state at the end is
// Adam's two moments of each parameter.
func TestThirdPartyPreexistingGradients(t *testing.T) {
	for _, c := range []struct {
		file   string
		params int64
		adam   bool
	}{
		{"cs336-warmup-grads.pickle.gz", cs336Params(10000, 768, 12, 3072), false},
		{"cs336-handwritten-adam.pickle.gz", cs336Params(50257, 768, 12, 3072), true},
		{"cs336-zero-grad-late.pickle.gz", cs336Params(10000, 1280, 36, 5120), true},
	} {
		t.Run(c.file, func(t *testing.T) {
			s, err := snapshot.Open("testdata/thirdparty/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			d := Analyze(s, Options{Device: -1}).Devices[0]
			for _, m := range []*Moment{d.Peak, d.End} {
				r := requestedBy(m)
				if r[Parameter] != c.params || r[Gradient] != c.params {
					t.Errorf("at the %s: parameters %d B, gradients %d B requested; want the model's %d each", m.Label, r[Parameter], r[Gradient], c.params)
				}
			}
			want := int64(0)
			if c.adam {
				want = 2 * c.params
			}
			if got := requestedBy(d.End)[OptimizerState]; got != want {
				t.Errorf("optimizer state at the end %d B, want %d", got, want)
			}
		})
	}
}

// TestThirdPartyDataParallel: a torch_geometric DataParallel job over
// three GPUs whose device 1 ran out of memory in the forward. Every device
// is the same one pass; devices 0 and 2, with no OOM of their own, are
// said to be cut short by device 1's. The forward's kept blocks are
// activations, with nothing unknown. The replicas of the module that
// DataParallel broadcast to devices 1 and 2 are gathered parameters, the
// same bytes on each.
func TestThirdPartyDataParallel(t *testing.T) {
	s, err := snapshot.Open("testdata/thirdparty/dataparallel-oom.pickle.gz")
	if err != nil {
		t.Fatal(err)
	}
	a := Analyze(s, Options{Device: -1})
	if len(a.Devices) != 3 {
		t.Fatalf("%d devices, want 3", len(a.Devices))
	}
	replicas := map[int]int64{}
	for _, d := range a.Devices {
		p := d.Phases
		if len(p.Steps) != 1 || p.Source != "one pass" {
			t.Errorf("device %d: %d steps from %q, want one pass", d.Device, len(p.Steps), p.Source)
		}
		if cut := d.Device != 1; p.CutElsewhere != cut || cut && p.CutDevice != 1 {
			t.Errorf("device %d: cut elsewhere %v by %d, want %v by device 1", d.Device, p.CutElsewhere, p.CutDevice, cut)
		}
		if d.Device == 1 && (len(d.OOMs) != 1 || d.OOMs[0].Step != 0 || d.OOMs[0].Phase != "forward") {
			t.Errorf("device 1: OOMs %+v, want one in step 0 forward", d.OOMs)
		}
		if u := d.Peak.Categories[Unknown].Bytes; u != 0 {
			t.Errorf("device %d: unknown %d B at the peak, want none", d.Device, u)
		}
		for i := range d.Peak.Live {
			b := &d.Peak.Live[i]
			for _, f := range s.Stacks.Stack(b.Stack) {
				fr := s.Stacks.Frame(f)
				if strings.HasSuffix(fr.Filename, "torch/nn/parallel/replicate.py") {
					if d.Peak.Category[i] != GatheredParameter {
						t.Errorf("device %d: a replica block of %d B is %v, want a gathered parameter", d.Device, b.Size, d.Peak.Category[i])
					}
					replicas[d.Device] += b.Size
					break
				}
				if strings.HasSuffix(fr.Filename, "src/train/models.py") && fr.Name == "update_nodes" {
					if c := d.Peak.Category[i]; c != Activation && c != Temporary {
						t.Errorf("device %d: a forward block of %d B at update_nodes is %v, want activation", d.Device, b.Size, c)
					}
					break
				}
			}
		}
	}
	if replicas[0] != 0 || replicas[1] == 0 || replicas[1] != replicas[2] {
		t.Errorf("replica bytes by device %v, want none on device 0 and the same on 1 and 2", replicas)
	}
}
