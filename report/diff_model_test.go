package report

import (
	"bytes"
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
