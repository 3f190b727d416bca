package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/memscope/memscope/attribution"
	sg "github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// stepsRun is a run of steps marked like the capture harness's: in each,
// the forward phase allocates one 1 MiB block from each of stacks distinct
// user lines and the backward phase frees them, in one 20 MiB segment
// reserved before recording. Every step is alike, so a profile's samples
// follow from stacks and steps alone.
func stepsRun(t testing.TB, steps, stacks int) (*attribution.Analysis, *attribution.Device) {
	t.Helper()
	const mib, seg = int64(1) << 20, int64(0x7f0000000000)
	var trace, annots []map[string]any
	annot := func(stage, name string, us int64) map[string]any {
		return map[string]any{"stage": stage, "name": name, "device": 0, "time_us": us}
	}
	for s := range steps {
		base := int64(1_000_000 + 10_000*s)
		for _, ph := range []struct {
			name  string
			start int64
		}{{"forward", 0}, {"backward", 5000}} {
			name := fmt.Sprintf("memscope/step/%d/%s", s, ph.name)
			annots = append(annots, annot("START", name, base+ph.start), annot("END", name, base+ph.start+4000))
		}
		for k := range stacks {
			fr := sg.Frame("forward", "train.py", 100+k)
			trace = append(trace, sg.Ev("alloc", seg+int64(k)*mib, mib, base+100+int64(k), fr))
		}
		for k := range stacks {
			fr := sg.Frame("backward", "train.py", 900)
			trace = append(trace, sg.Ev("free_requested", seg+int64(k)*mib, mib, base+5100+2*int64(k), fr),
				sg.Ev("free_completed", seg+int64(k)*mib, mib, base+5101+2*int64(k), fr))
		}
	}
	syn := &sg.Synth{
		Segments:    []map[string]any{sg.Seg(seg, sg.Blk(20*mib, 0, "inactive"))},
		Traces:      [][]map[string]any{trace},
		Annotations: annots,
	}
	snap, err := syn.Decode("steps.pickle")
	if err != nil {
		t.Fatal(err)
	}
	an := attribution.Analyze(snap, attribution.Options{Device: -1})
	return an, an.Devices[0]
}

// peakProfile renders the profile at the peak and parses it back with
// pprof's own reader.
func peakProfile(t testing.TB, an *attribution.Analysis, d *attribution.Device) (*profile.Profile, int) {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, PProf, &Profile{Analysis: an, Device: d, Moment: d.Peak, Allocs: d.EachAllocation()}); err != nil {
		t.Fatalf("PProf: %v", err)
	}
	n := buf.Len()
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("profile.Parse: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	return p, n
}

// TestPProfSteps: a profile has one sample per stack and step label, and
// at most maxStepLabels step labels whatever the steps: each step its own
// label up to maxStepLabels steps (step 0 included), then the first step
// alone and the rest in runs ("step=1-31"). The values add up to the input's.
func TestPProfSteps(t *testing.T) {
	const stacks, mib = 5, int64(1) << 20
	for _, steps := range []int{3, maxStepLabels, maxStepLabels + 1, 1000} {
		t.Run(strconv.Itoa(steps), func(t *testing.T) {
			an, d := stepsRun(t, steps, stacks)
			if got := len(d.Phases.Steps); got != steps {
				t.Fatalf("the analysis found %d steps, want %d", got, steps)
			}
			p, _ := peakProfile(t, an, d)
			groups := min(steps, maxStepLabels)
			if got, want := len(p.Sample), stacks*groups; got != want {
				t.Errorf("len(Sample) = %d, want %d (%d stacks × %d step labels)", got, want, stacks, groups)
			}
			var sums [4]int64
			stepLabels := map[string]bool{}
			for _, s := range p.Sample {
				for i := range sums {
					sums[i] += s.Value[i]
				}
				if v, ok := s.Label["step"]; ok {
					stepLabels["step="+v[0]] = true
				}
				if v := s.NumLabel["stream"]; len(v) != 1 || v[0] != 0 {
					t.Errorf("sample stream label %v, want [0] (the default stream)", v)
				}
				if len(s.Location) != 1 {
					t.Errorf("sample with %d locations, want 1 (its train.py line)", len(s.Location))
				}
			}
			if want := [4]int64{stacks * mib, stacks, int64(steps*stacks) * mib, int64(steps * stacks)}; sums != want {
				t.Errorf("inuse_space, inuse_objects, alloc_space, alloc_objects = %v, want %v", sums, want)
			}
			if len(stepLabels) != groups {
				t.Errorf("%d distinct step labels, want %d: %v", len(stepLabels), groups, stepLabels)
			}
			if steps > maxStepLabels {
				last := strconv.Itoa(steps - 1)
				if !stepLabels["step=0"] || !slices.ContainsFunc(sortedKeys(stepLabels), func(k string) bool { return strings.HasSuffix(k, "-"+last) || k == "step="+last }) {
					t.Errorf("step labels %v: want step=0 alone and a run ending at step %d", sortedKeys(stepLabels), steps-1)
				}
			}
		})
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// BenchmarkPProfSteps writes the profile of stepsRun at three step counts
// with 50 stacks: samples and bytes stay flat once the steps pass
// maxStepLabels (a label per step made them grow with stacks × steps).
//
//	go test ./report -run '^$' -bench PProfSteps -benchtime 3x
func BenchmarkPProfSteps(b *testing.B) {
	for _, steps := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			an, d := stepsRun(b, steps, 50)
			b.ReportAllocs()
			var samples, size int
			for b.Loop() {
				p, n := peakProfile(b, an, d)
				samples, size = len(p.Sample), n
			}
			b.ReportMetric(float64(samples), "samples")
			b.ReportMetric(float64(size), "profile-bytes")
		})
	}
}

// TestPProfFramelessSites: every live byte has a location. A block live
// before recording began, one the autograd engine's thread allocated in
// backward (no frame at all) and one whose frames are all torch's plumbing
// are charged to a leaf that names their site, so that the flat bytes of
// the profile's leaves add up to the allocated bytes at the moment.
func TestPProfFramelessSites(t *testing.T) {
	const mib, seg = int64(1) << 20, int64(0x7f0000000000)
	annot := func(stage, name string, us int64) map[string]any {
		return map[string]any{"stage": stage, "name": name, "device": 0, "time_us": us}
	}
	user := sg.Frame("forward", "train.py", 100)
	plumbing := sg.Frame("_call_impl", "/usr/lib/python3/site-packages/torch/nn/modules/module.py", 1750)
	syn := &sg.Synth{
		Segments: []map[string]any{sg.Seg(seg, sg.Blk(4*mib, 4*mib, "active_allocated"),
			sg.Blk(mib, mib, "active_allocated"), sg.Blk(mib, mib, "active_allocated"),
			sg.Blk(2*mib, 2*mib, "active_allocated"), sg.Blk(12*mib, 0, "inactive"))},
		Traces: [][]map[string]any{{
			sg.Ev("alloc", seg+4*mib, mib, 1_000_100, user),
			sg.Ev("alloc", seg+5*mib, mib, 1_000_200, plumbing),
			sg.Ev("alloc", seg+6*mib, 2*mib, 1_005_100), // the engine's thread: no frame; kept, a gradient
			// A backward temporary of a size no forward block has: nothing
			// names it.
			sg.Ev("alloc", seg+8*mib, 3*mib, 1_006_000),
			sg.Ev("free_requested", seg+8*mib, 3*mib, 1_007_000),
			sg.Ev("free_completed", seg+8*mib, 3*mib, 1_007_000),
		}},
		Annotations: []map[string]any{
			annot("START", "memscope/step/0/forward", 1_000_000), annot("END", "memscope/step/0/forward", 1_004_000),
			annot("START", "memscope/step/0/backward", 1_005_000), annot("END", "memscope/step/0/backward", 1_009_000),
		},
	}
	snap, err := syn.Decode("frameless.pickle")
	if err != nil {
		t.Fatal(err)
	}
	an := attribution.Analyze(snap, attribution.Options{Device: -1})
	d := an.Devices[0]
	p, _ := peakProfile(t, an, d)
	flat := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		if len(s.Location) == 0 {
			t.Errorf("sample %v (labels %v) has no location", s.Value, s.Label)
			continue
		}
		flat[s.Location[0].Line[0].Function.Name] += s.Value[0]
		total += s.Value[0]
	}
	want := map[string]int64{
		"(allocated before recording began)": 4 * mib,
		"forward":                            mib,
		"_call_impl":                         mib,
		"gradients (autograd engine, no Python frame)": 2 * mib,
		"(no Python frame: autograd engine, backward)": 3 * mib,
	}
	for name, n := range want {
		if flat[name] != n {
			t.Errorf("inuse_space of leaf %q = %d, want %d (all leaves: %v)", name, flat[name], n, flat)
		}
	}
	if pk := d.Timeline.PeakAllocated.Bytes; total != pk || pk != 11*mib {
		t.Errorf("Σ inuse_space = %d, want the peak's allocated %d = 11 MiB", total, pk)
	}
}

// TestPProfUnrecorded: a snapshot with no recorded history (segments
// only) charges its live blocks to "(no history recorded)", as summary
// names their site.
func TestPProfUnrecorded(t *testing.T) {
	const mib, seg = int64(1) << 20, int64(0x7f0000000000)
	syn := &sg.Synth{Segments: []map[string]any{sg.Seg(seg, sg.Blk(3*mib, 3*mib, "active_allocated"), sg.Blk(mib, 0, "inactive"))}}
	snap, err := syn.Decode("state-only.pickle")
	if err != nil {
		t.Fatal(err)
	}
	an := attribution.Analyze(snap, attribution.Options{Device: -1})
	p, _ := peakProfile(t, an, an.Devices[0])
	if len(p.Sample) != 1 || len(p.Sample[0].Location) != 1 {
		t.Fatalf("%d samples, want 1 with one location", len(p.Sample))
	}
	s := p.Sample[0]
	if name := s.Location[0].Line[0].Function.Name; name != "(no history recorded)" || s.Value[0] != 3*mib {
		t.Errorf("sample %q of %d bytes, want (no history recorded) of %d", name, s.Value[0], 3*mib)
	}
}

// TestPProfNamedOrigins: on real snapshots made with the harness and
// without it, the peak's profile holds every allocated byte, and at most
// a tenth of them have a leaf with no named origin (the synthetic
// functions "(allocated before recording began)", "(no Python frame…)",
// "(no history recorded)"); the rest are frames, or blocks named by what
// they are. A backward block's leaf is its forward site's line, named
// "… (backward, autograd)", with that allocation's frames above it.
func TestPProfNamedOrigins(t *testing.T) {
	unnamed := map[string]bool{
		attribution.Site{Kind: attribution.SiteBefore}.Label(nil):     true,
		attribution.Site{Kind: attribution.SiteNone}.Label(nil):       true,
		attribution.Site{Kind: attribution.SiteUnrecorded}.Label(nil): true,
		"(no Python frame: autograd engine, backward)":                true,
	}
	for _, path := range []string{"llama-wide/snapshot.pickle", "llama-ckpt/snapshot.pickle", "advise/train-none/snapshot.pickle",
		"plain-trainer-late/snapshot.pickle", "plain-checkpointed/snapshot.pickle", "plain-lightning/snapshot.pickle",
		"workloads/fsdp2/snapshot.pickle", "workloads/lora/snapshot.pickle", "workloads/grad-accum/snapshot.pickle",
		"stacks-all/snapshot.pickle", "../attribution/testdata/thirdparty/cs336-2.7b-one-forward.pickle.gz"} {
		t.Run(path, func(t *testing.T) {
			s, err := snapshot.Open(filepath.Join("../fixtures", path))
			if err != nil {
				t.Fatal(err)
			}
			an := attribution.Analyze(s, attribution.Options{Device: -1, AllocSizes: true})
			d := an.Primary()
			p, _ := peakProfile(t, an, d)
			var total, bad, backward int64
			for _, smp := range p.Sample {
				leaf := smp.Location[0].Line[0].Function
				total += smp.Value[0]
				if unnamed[leaf.Name] {
					bad += smp.Value[0]
				}
				if strings.HasSuffix(leaf.Name, "(backward, autograd)") && smp.Value[0] > 0 {
					backward += smp.Value[0]
					if leaf.Filename == "" || smp.Location[0].Line[0].Line <= 0 || len(smp.Location) < 2 {
						t.Errorf("backward leaf %q at %s:%d with %d locations, want its forward line under that allocation's frames",
							leaf.Name, leaf.Filename, smp.Location[0].Line[0].Line, len(smp.Location))
					}
				}
			}
			if total != d.Peak.Allocated {
				t.Errorf("Σ inuse_space = %d, want the peak's allocated %d", total, d.Peak.Allocated)
			}
			if 10*bad > total {
				t.Errorf("%d B of %d (%.1f%%) under leaves with no named origin, want at most 10%%", bad, total, 100*float64(bad)/float64(total))
			}
			var want int64
			for _, st := range d.Peak.Sites {
				if st.Site.Kind == attribution.SiteBackward && !st.Site.Near && !st.Site.HasNode {
					want += st.Bytes
				}
			}
			if backward != want {
				t.Errorf("Σ inuse_space under '… (backward, autograd)' leaves = %d, want the backward sites' %d", backward, want)
			}
		})
	}
}
