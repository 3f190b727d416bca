package report

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/snapshot"
)

// TestDiffWithoutModel: diff analyses its two files without the
// allocator model's verdicts (attribution.Options.NoModel, a quarter of
// the analysis on a real capture), and writes, text and JSON, byte for
// byte what it writes with them, on pairs of fixtures that hold OOMs, a
// fragmented peak, expandable segments and a capture with C++ frames.
func TestDiffWithoutModel(t *testing.T) {
	for _, pair := range [][2]string{
		{"llama-bf16/snapshot.pickle", "llama-ckpt/snapshot.pickle"},
		{"advise/train-none/snapshot.pickle", "advise/train-chunked-loss/snapshot.pickle"},
		{"oom/snapshot.pickle", "mlp-adamw/snapshot.pickle"},
		{"whatif-servelate/default/snapshot.pickle.gz", "whatif-servelate/expandable/snapshot.pickle.gz"},
		{"whatif-train-stacks-all/snapshot.pickle.gz", "stacks-all/snapshot.pickle"},
		{"workloads/fsdp2-oom/snapshot.pickle", "workloads/oom-first-step/snapshot.pickle"},
	} {
		var outs [2][2][]byte
		for k, noModel := range []bool{false, true} {
			var an [2]*attribution.Analysis
			for i, p := range pair {
				s, err := snapshot.Open("../fixtures/" + p)
				if err != nil {
					t.Fatal(err)
				}
				an[i] = attribution.Analyze(s, attribution.Options{Device: -1, NoModel: noModel})
			}
			r := &Diff{A: pair[0], B: pair[1], Diff: attribution.Compare(an[0], an[1]), Top: 15}
			for j, f := range []Format{Text, JSON} {
				var b bytes.Buffer
				if err := Write(&b, f, r); err != nil {
					t.Fatal(err)
				}
				outs[k][j] = b.Bytes()
			}
		}
		for j, f := range []string{"text", "JSON"} {
			if !bytes.Equal(outs[0][j], outs[1][j]) {
				t.Errorf("%s vs %s: the %s diff differs without the allocator model:\n%s\n---\n%s", pair[0], pair[1], f, outs[0][j], outs[1][j])
			}
		}
	}
}

// TestOutputsWithoutModel: peak, leaks and pprof analyse without the
// allocator model's verdicts too (none of them prints one): on every
// fixture, their text, JSON and profile are byte for byte what they are
// with the model.
func TestOutputsWithoutModel(t *testing.T) {
	var paths []string
	for _, g := range []string{"../fixtures/*/snapshot*.pickle", "../fixtures/*/*/snapshot*.pickle", "../fixtures/*/*/snapshot.pickle.gz"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	if len(paths) < 60 {
		t.Fatalf("%d fixtures found, want 60 and more", len(paths))
	}
	for _, p := range paths {
		s, err := snapshot.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var outs [2][]byte
		for k, noModel := range []bool{false, true} {
			an := attribution.Analyze(s, attribution.Options{Device: -1, AllocSizes: true, NoModel: noModel})
			var b bytes.Buffer
			at, err := an.At("peak", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []Result{&Peak{Source: p, Analysis: an, Devices: at, Top: 15, Phases: true}, &Leaks{Source: p, Analysis: an}} {
				for _, f := range []Format{Text, JSON} {
					if err := Write(&b, f, r); err != nil {
						t.Fatal(err)
					}
				}
			}
			if d := an.Primary(); d != nil {
				if err := Write(&b, PProf, &Profile{Analysis: an, Device: d, Moment: d.Peak, Allocs: d.EachAllocation()}); err != nil {
					t.Fatal(err)
				}
			}
			outs[k] = b.Bytes()
		}
		if !bytes.Equal(outs[0], outs[1]) {
			t.Errorf("%s: peak, leaks or pprof differ without the allocator model", p)
		}
	}
	t.Logf("%d fixtures", len(paths))
}
