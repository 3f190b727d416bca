package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/units"
)

// The behaviours of 'memscope' a new user meets first, each as a test.

// TestRunDirectoryEverywhere: a capture run directory stands for its
// snapshot (or every rank's) in every command that reads snapshots, and a
// sweep run is refused, naming what to give instead.
func TestRunDirectoryEverywhere(t *testing.T) {
	for _, cmd := range []string{"summary", "peak", "leaks", "frag", "oom", "check"} {
		one, two := "capture-train/snapshot.pickle", "snapshot.rank1.pickle"
		if cmd == "check" { // it names files only when they break a limit
			one, two = "ok: 1 snapshot(s)", "ok: 2 snapshot(s)"
		}
		r := runMemscope(cmd, "../../fixtures/capture-train")
		if r.code != 0 || !strings.Contains(r.stdout+r.stderr, one) {
			t.Errorf("%s on a capture run: exit %d, %v\n%s", cmd, r.code, r.err, r.stdout)
		}
		r = runMemscope(cmd, "../../fixtures/capture-ddp")
		if r.code != 0 || !strings.Contains(r.stdout+r.stderr, two) {
			t.Errorf("%s on a 2-rank capture run: exit %d, %v; want both ranks", cmd, r.code, r.err)
		}
		r = runMemscope(cmd, "../../fixtures/sweep-llama")
		if r.code != 2 || r.err == nil || !strings.Contains(r.err.Error(), "memscope summary --run ../../fixtures/sweep-llama") {
			t.Errorf("%s on a sweep run: exit %d, %v; want 2 and the command to use", cmd, r.code, r.err)
		}
		if strings.Contains(r.stderr, "is a directory") {
			t.Errorf("%s on a directory prints the raw error: %s", cmd, r.stderr)
		}
	}
	if r := runMemscope("pprof", "-o", t.TempDir()+"/p.pb.gz", "../../fixtures/capture-ddp"); r.code != 2 || !strings.Contains(r.err.Error(), "one per rank") {
		t.Errorf("pprof of a 2-rank run: exit %d, %v; want 2 asking for one rank", r.code, r.err)
	}
}

// TestDeviceNotPresent: --device naming a device the file does not have
// exits 2 and names the devices it has, in every command that takes it.
func TestDeviceNotPresent(t *testing.T) {
	for _, cmd := range []string{"summary", "peak", "leaks", "frag", "oom", "check"} {
		r := runMemscope(cmd, "--device", "5", leakSnap)
		if r.code != 2 || r.err == nil || !strings.Contains(r.err.Error(), "--device 5") || !strings.Contains(r.err.Error(), "it has device 0") {
			t.Errorf("%s --device 5: exit %d, %v; want 2 naming device 0", cmd, r.code, r.err)
		}
	}
	r := runMemscope("ops", "--device", "5", "../../fixtures/llama-profiled/trace.json.gz")
	if r.code != 2 || !strings.Contains(r.err.Error(), "it has cuda:0") {
		t.Errorf("ops --device 5: exit %d, %v; want 2 naming cuda:0", r.code, r.err)
	}
}

// TestFocusMatchingNothing: a --focus that matches no frame warns that
// every site falls back to its innermost Python frame; one that matches
// does not warn.
func TestFocusMatchingNothing(t *testing.T) {
	for _, cmd := range []string{"summary", "peak", "check"} {
		r := runMemscope(cmd, "--focus", "no_such_module", llamaSnap)
		if r.code != 0 || !strings.Contains(r.stderr, `--focus "no_such_module" matches no frame`) {
			t.Errorf("%s --focus matching nothing: exit %d, stderr %q; want a warning", cmd, r.code, r.stderr)
		}
		r = runMemscope(cmd, "--focus", "modeling_llama", llamaSnap)
		if strings.Contains(r.stderr, "matches no frame") {
			t.Errorf("%s --focus modeling_llama warns: %s", cmd, r.stderr)
		}
	}
}

// TestOpsNamesStayDistinct: backward rows whose labels share a long start
// (--per-instance: one per module instance) still read apart once
// clipped, and every row of the ops table is shown with a distinct name.
// By default the instances are one row per operator and forward op.
func TestOpsNamesStayDistinct(t *testing.T) {
	const tr = "../../fixtures/llama-profiled/trace.json.gz"
	def := runMemscope("ops", "--top", "-1", tr)
	if def.err != nil {
		t.Fatal(def.err)
	}
	if strings.Contains(def.stdout, " in nn.Module: ") || !strings.Contains(def.stdout, "aten::mm (backward of aten::mm)") {
		t.Errorf("ops by default: backward rows should be one per operator (aten::mm (backward of aten::mm)), not per module instance:\n%s", def.stdout)
	}
	if r := runMemscope("ops", "--per-instance", "--no-backward-labels", tr); r.code != 2 {
		t.Errorf("ops --per-instance --no-backward-labels: exit %d, want 2", r.code)
	}
	r := runMemscope("ops", "--top", "-1", "--per-instance", tr)
	if r.err != nil {
		t.Fatal(r.err)
	}
	seen := map[string]bool{}
	rows := 0
	for _, line := range strings.Split(r.stdout, "\n") {
		f := regexp.MustCompile(`^\s*(?:\S+ \S+\s+){5}\d+ (.+)$`).FindStringSubmatch(line)
		if f == nil {
			continue
		}
		rows++
		if seen[f[1]] {
			t.Errorf("two ops rows read %q", f[1])
		}
		seen[f[1]] = true
	}
	if rows < 30 {
		t.Fatalf("parsed %d rows of the ops table", rows)
	}
	if !strings.Contains(r.stdout, "(backward of aten::mm in nn.Module: Linear_") {
		t.Errorf("backward labels lost their module:\n%s", r.stdout)
	}
}

// TestOpsByModuleType: --by module adds the totals per module type, with
// the number of instances.
func TestOpsByModuleType(t *testing.T) {
	r := runMemscope("ops", "--by", "module", "../../fixtures/llama-profiled/trace.json.gz")
	if r.err != nil {
		t.Fatal(r.err)
	}
	_, types, ok := strings.Cut(r.stdout, "by module type")
	if !ok || !regexp.MustCompile(`\s2 nn\.Module: LlamaAttention\n`).MatchString(types) {
		t.Errorf("no LlamaAttention row with its 2 instances in the module types:\n%s", r.stdout)
	}
}

// TestHelpPlaceholders: no command's help shows pflag's type names as
// placeholders or Go slice syntax as a default.
func TestHelpPlaceholders(t *testing.T) {
	bad := regexp.MustCompile(`--[a-z-]+ (int|int64|string|strings|float64|ints|uint)\s|default \[`)
	for _, c := range commands {
		r := runMemscope(c.name, "--help")
		if m := bad.FindString(r.stdout); m != "" {
			t.Errorf("memscope %s --help shows %q", c.name, m)
		}
	}
}

// TestFragSimulate: frag --simulate names the allocator setting that the
// model says lowers the reserved peak, with torch's peak under it (the
// variable-length what-if workload: expandable segments, 1.43 GiB).
func TestFragSimulate(t *testing.T) {
	// torch's reserved peaks of the two runs: the recorded and the one
	// under expandable segments.
	rec := readFixtureTruth(t, "whatif-varlen/default").MemoryStatsEnd["reserved_bytes.all.peak"]
	exp := readFixtureTruth(t, "whatif-varlen/expandable").MemoryStatsEnd["reserved_bytes.all.peak"]
	want := fmt.Sprintf("expandable_segments:True: reserved peak %s (−%.1f%%)", units.Bytes(exp), 100*float64(rec-exp)/float64(rec))
	r := runMemscope("frag", "--simulate", "../../fixtures/whatif-varlen/default/snapshot.pickle")
	if r.err != nil || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "reserved peak "+units.Bytes(rec)+" as recorded") {
		t.Errorf("frag --simulate: %v; want %q and torch's recorded peak %s\n%s", r.err, want, units.Bytes(rec), r.stdout)
	}
	if r := runMemscope("frag", leakSnap); strings.Contains(r.stdout, "simulated") {
		t.Errorf("frag without --simulate simulates")
	}
}
