package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// TestPapercuts31: the messages issue 31 found unhelpful say what the user
// needs: a snapshot given to ops is named as one, with the commands that
// read it; budget --device names the devices the snapshot has; an empty
// predicted-vs-measured table says why it is empty.
func TestPapercuts31(t *testing.T) {
	t.Run("ops on a snapshot", func(t *testing.T) {
		for _, snap := range []string{mlpSnap, "../../fixtures/whatif-varlen/default/snapshot.pickle"} {
			r := runMemscope("ops", snap)
			if r.code != 2 || !strings.Contains(r.stderr, "a pickle (a CUDA allocator snapshot") ||
				!strings.Contains(r.stderr, "memscope summary, peak, diff and pprof read snapshots") || strings.Contains(r.stderr, "not JSON") {
				t.Errorf("ops %s: exit %d, %q; want exit 2 saying it is a snapshot and which commands read it", snap, r.code, r.stderr)
			}
		}
	})
	t.Run("budget --device", func(t *testing.T) {
		r := runMemscope("budget", "--device", "3", "--run", "../../fixtures/llama-bf16")
		if r.code != 2 || !strings.Contains(r.stderr, "--device 3: ../../fixtures/llama-bf16/snapshot.pickle has no such device; it has device 0") {
			t.Errorf("budget --device 3 --run llama-bf16: exit %d, %q; want exit 2 naming device 0", r.code, r.stderr)
		}
	})
	t.Run("budget --truth with nothing to compare", func(t *testing.T) {
		// A generate() server's truth has one phase, "run" at step -1: no
		// steady step to hold a training prediction against.
		const tr = "../../fixtures/whatif-servefull/default/truth.json"
		r := runMemscope("budget", "--truth", tr, "--vocab", "1000", "--hidden", "64", "--layers", "2", "--heads", "2",
			"--intermediate", "128", "--batch", "1", "--seq", "16")
		if r.err != nil {
			t.Fatal(r.err)
		}
		_, table, _ := strings.Cut(r.stdout, "predicted vs measured")
		if !strings.Contains(table, "nothing to compare: no measured phase matches a predicted one (forward, backward, optimizer): "+tr+" holds no phase of a steady step") {
			t.Errorf("budget --truth %s: the comparison reads %q, want it to say why it is empty", tr, table)
		}
	})
	t.Run("peak --at beyond the recording", func(t *testing.T) {
		// mlp-adamw's truth: steps 0 to 4 (and the setup, step -1).
		last := -1
		for _, p := range readFixtureTruth(t, "mlp-adamw").Phases {
			last = max(last, p.Step)
		}
		s, err := snapshot.Open(mlpSnap)
		if err != nil {
			t.Fatal(err)
		}
		ev := attribution.Analyze(s, attribution.Options{Device: -1}).Devices[0].Timeline.Events
		length := units.Duration(ev[len(ev)-1].TimeUS - ev[0].TimeUS)
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"peak", "--at", "step:9:forward"}, fmt.Sprintf(`moment "step:9:forward": no step 9: the steps are 0 to %d`, last)},
			{[]string{"peak", "--at", "99s"}, `moment "99s": past the recording's end: it lasts ` + length},
			{[]string{"pprof", "-o", t.TempDir() + "/p.pb.gz", "--at", "99s"}, `moment "99s": past the recording's end: it lasts ` + length},
		} {
			if r := runMemscope(append(tc.args, mlpSnap)...); r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("%v: exit %d, %q; want exit 2 and %q", tc.args, r.code, r.stderr, tc.want)
			}
		}
		if r := runMemscope("peak", "--at", "step:4:forward", mlpSnap); r.code != 0 {
			t.Errorf("peak --at step:4:forward: exit %d, %s", r.code, r.stderr)
		}
	})
}
