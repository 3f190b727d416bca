package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report"
)

const (
	leakSnap  = "../../fixtures/leak/snapshot.pickle"
	mlpSnap   = "../../fixtures/mlp-adamw/snapshot.pickle"
	oomSnap   = "../../fixtures/oom/snapshot.pickle"
	llamaSnap = "../../fixtures/llama-bf16/snapshot.pickle"
	// The advise fixtures: a training run whose peak is at the loss, and
	// an inference run (no backward).
	adviseTrain = "../../fixtures/advise/train-none/snapshot.pickle"
	adviseInfer = "../../fixtures/advise/infer-dynamic/snapshot.pickle"
)

// TestCheck: check exits 1 naming the broken limit, and 0 when limits hold.
func TestCheck(t *testing.T) {
	tr := readFixtureTruth(t, "mlp-adamw")
	peak := tr.Window.MaxAllocated
	leak := readFixtureTruth(t, "leak").Leak.BytesPerStep
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"peak over", []string{"check", "--max-peak", itoa(peak - 1), mlpSnap}, 1, "exceeds --max-peak"},
		{"peak at limit", []string{"check", "--max-peak", itoa(peak), mlpSnap}, 0, "ok"},
		{"leak", []string{"check", "--max-leak", "0", leakSnap}, 1, "leak of " + units.Bytes(leak) + " per step"},
		{"no leak", []string{"check", "--max-leak", "0", mlpSnap}, 0, "ok"},
		{"leak under limit", []string{"check", "--max-leak", itoa(2 * leak), leakSnap}, 0, "ok"},
		{"no limit, no OOM", []string{"check", mlpSnap}, 0, "ok: 1 snapshot(s)"},
		{"OOM", []string{"check", oomSnap}, 1, "device 0: an out-of-memory event recorded (the first at event 618: a 128.00 MiB request from <repo>/capture/harness.py:271 train_steps failed, capacity); --allow-oom accepts it"},
		{"OOM allowed, nothing else", []string{"check", "--allow-oom", "--max-peak", "1GiB", oomSnap}, 0, "ok"},
		{"nothing to check", []string{"check", "--allow-oom", mlpSnap}, 2, "nothing to check"},
		{"capture run", []string{"check", "../../fixtures/capture-oom"}, 1, "a 256.00 MiB request from (no Python frame: C++ or autograd engine) failed"},
		{"sweep run", []string{"check", "../../fixtures/sweep-mlp"}, 2, "is a sweep run"},
		{"bad size", []string{"check", "--max-peak", "40G", mlpSnap}, 2, "--max-peak"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runMemscope(tt.args...)
			if r.code != tt.code {
				t.Fatalf("memscope %v: exit %d, want %d (err %v)", tt.args, r.code, tt.code, r.err)
			}
			got := r.stdout
			if r.err != nil {
				got = r.err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("memscope %v = %q, want it to mention %q", tt.args, got, tt.want)
			}
		})
	}
}

// TestCheckOOMFixtures: under default limits, check fails on every fixture
// whose run recorded an OOM (torch's truth.json or the harness's
// capture.json says so) and passes every other.
func TestCheckOOMFixtures(t *testing.T) {
	dirs, _ := filepath.Glob("../../fixtures/*")
	n := 0
	for _, dir := range dirs {
		var files []string
		for _, pat := range []string{"truth.json", "capture.json", "capture.rank*.json"} {
			m, _ := filepath.Glob(filepath.Join(dir, pat))
			files = append(files, m...)
		}
		if len(files) == 0 {
			continue
		}
		oom := false
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				OOM json.RawMessage `json:"oom"`
			}
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o := strings.TrimSpace(string(v.OOM)); o != "" && o != "null" && o != "[]" && o != "{}" {
				oom = true
			}
		}
		n++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			r := runMemscope("check", dir)
			want := 0
			if oom {
				want = 1
			}
			if r.code != want {
				t.Errorf("memscope check %s: exit %d, want %d (OOM recorded: %v); %v", dir, r.code, want, oom, r.err)
			}
			if oom && (r.err == nil || !strings.Contains(r.err.Error(), "out-of-memory event recorded")) {
				t.Errorf("memscope check %s: %v, want it to name the OOM", dir, r.err)
			}
		})
	}
	if n < 10 {
		t.Errorf("%d fixtures with torch's truth, want the repository's (≥ 10)", n)
	}
}

func TestPeakJSON(t *testing.T) {
	r := runMemscope("peak", "--json", "--top", "-1", mlpSnap)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var doc struct {
		Schema string `json:"schema"`
		Kind   string `json:"kind"`
		Files  []struct {
			Devices []struct {
				Numbers struct {
					Allocated int64 `json:"allocated"`
				} `json:"numbers"`
				Sites []struct {
					Bytes int64 `json:"bytes"`
				} `json:"sites"`
				Categories map[string]int64 `json:"categories"`
			} `json:"devices"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	tr := readFixtureTruth(t, "mlp-adamw")
	d := doc.Files[0].Devices[0]
	if doc.Schema != "memscope/v1" || doc.Kind != "peak" || d.Numbers.Allocated != tr.Window.MaxAllocated {
		t.Fatalf("peak JSON = %s %s allocated %d, want memscope/v1 peak %d", doc.Schema, doc.Kind, d.Numbers.Allocated, tr.Window.MaxAllocated)
	}
	var sites, cats int64
	for _, s := range d.Sites {
		sites += s.Bytes
	}
	for _, v := range d.Categories {
		cats += v
	}
	if sites != tr.Window.MaxAllocated || cats != tr.Window.MaxAllocated {
		t.Errorf("Σ sites = %d, Σ categories = %d; want both %d (peak allocated)", sites, cats, tr.Window.MaxAllocated)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestOpsAndPeakTrace(t *testing.T) {
	const tr = "../../fixtures/llama-profiled/trace.json.gz"
	r := runMemscope("ops", "--json", "--top", "-1", tr)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var doc struct {
		Kind  string `json:"kind"`
		Files []struct {
			Table struct {
				PeakBytes int64 `json:"peak_allocated"`
				Rows      []struct {
					Name string `json:"name"`
				} `json:"rows"`
			} `json:"table"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	truth := readFixtureTruth(t, "llama-profiled")
	if doc.Kind != "ops" || len(doc.Files) != 1 || doc.Files[0].Table.PeakBytes != truth.Window.MaxAllocated {
		t.Fatalf("ops JSON: kind %q, %d tables, peak %d; want ops, 1 (GPU only), %d", doc.Kind, len(doc.Files), doc.Files[0].Table.PeakBytes, truth.Window.MaxAllocated)
	}
	r = runMemscope("peak", "--json", "--trace", tr, "../../fixtures/llama-profiled/snapshot.pickle")
	if r.err != nil {
		t.Fatal(r.err)
	}
	var pk struct {
		Files []struct {
			Devices []struct {
				Ops []struct {
					Op    string `json:"op"`
					Bytes int64  `json:"bytes"`
				} `json:"ops"`
				Covered *float64 `json:"ops_covered"`
			} `json:"devices"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &pk); err != nil {
		t.Fatal(err)
	}
	d := pk.Files[0].Devices[0]
	if d.Covered == nil || *d.Covered < 0.95 || len(d.Ops) == 0 {
		t.Fatalf("peak --trace: covered %v, %d op rows; want ≥ 0.95 and rows", d.Covered, len(d.Ops))
	}
	r = runMemscope("summary", "--json", "--trace", tr, "../../fixtures/llama-profiled/snapshot.pickle")
	if r.err != nil {
		t.Fatal(r.err)
	}
	var sum struct {
		Files []struct {
			Devices []struct {
				Ops []struct {
					Op string `json:"op"`
				} `json:"ops_at_peak"`
				Covered *float64 `json:"ops_covered"`
			} `json:"devices"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if sd := sum.Files[0].Devices[0]; sd.Covered == nil || *sd.Covered < 0.95 || len(sd.Ops) == 0 {
		t.Errorf("summary --trace: covered %v, %d op rows; want ≥ 0.95 and rows", sd.Covered, len(sd.Ops))
	}
	// A trace without memory events is refused with the fix in the message.
	dir := t.TempDir()
	empty := dir + "/t.json"
	if err := os.WriteFile(empty, []byte(`{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runMemscope("ops", empty); r.code != 2 || !strings.Contains(r.err.Error(), "profile_memory=True") {
		t.Errorf("ops on a trace without memory events: exit %d, %v; want 2 and the profile_memory hint", r.code, r.err)
	}
}

// TestDiffRuns: diff takes run directories. Two sweeps compare point by
// point with values from their results.json; a capture run directory
// stands for its snapshot.
func TestDiffRuns(t *testing.T) {
	const ddp, fsdp = "../../fixtures/sweep-paths/ddp", "../../fixtures/sweep-paths/fsdp"
	r := runMemscope("diff", "--json", ddp, fsdp)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var doc struct {
		Result struct {
			Sweep struct {
				Points []struct {
					Name string `json:"name"`
					A    int64  `json:"a"`
					B    int64  `json:"b"`
				} `json:"points"`
			} `json:"sweep"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int64{}
	for i, dir := range []string{ddp, fsdp} {
		res, err := capture.ReadResults(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range res.Points {
			if p.Fits {
				k := fmt.Sprintf("%s batch %d", p.Precision, p.Batch)
				v := want[k]
				v[i] = p.Peak.Allocated
				want[k] = v
			}
		}
	}
	if len(doc.Result.Sweep.Points) != len(want) {
		t.Fatalf("diff rows = %d, want %d", len(doc.Result.Sweep.Points), len(want))
	}
	for _, p := range doc.Result.Sweep.Points {
		if w := want[p.Name]; p.A != w[0] || p.B != w[1] {
			t.Errorf("diff %s = %d → %d, want %d → %d (results.json)", p.Name, p.A, p.B, w[0], w[1])
		}
	}
	// Two capture run directories: each side's peak is the peak torch
	// measured over its run (capture.json).
	const co, ct = "../../fixtures/capture-oom", "../../fixtures/capture-train"
	var cd struct {
		Result struct {
			Devices []struct {
				PeakA numbersJSON `json:"peak_a"`
				PeakB numbersJSON `json:"peak_b"`
			} `json:"devices"`
		} `json:"result"`
	}
	runJSON(t, &cd, "diff", "--json", co, ct)
	for i, dir := range []string{co, ct} {
		run, err := capture.ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		got := cd.Result.Devices[0].PeakA
		if i == 1 {
			got = cd.Result.Devices[0].PeakB
		}
		if want := run.Ranks[0].Peak; got.Allocated != want.Allocated || got.Requested != want.Requested {
			t.Errorf("diff %s peak = %d allocated, %d requested; want %d, %d (capture.json)", dir, got.Allocated, got.Requested, want.Allocated, want.Requested)
		}
	}
	if r := runMemscope("diff", ddp, mlpSnap); r.code != 2 {
		t.Errorf("diff of a sweep and a snapshot: exit %d, want 2", r.code)
	}
}

// TestCheckPlainFixtures: on every fixture made without the harness,
// `check --max-leak 0` exits 1 exactly when truth.json plants a leak (or
// the run holds an OOM), naming it, and 0 otherwise.
func TestCheckPlainFixtures(t *testing.T) {
	dirs, _ := filepath.Glob("../../fixtures/plain-*")
	if len(dirs) < 9 {
		t.Fatalf("%d plain fixtures, want 9", len(dirs))
	}
	for _, dir := range dirs {
		name := dir[strings.LastIndex(dir, "/")+1:]
		t.Run(name, func(t *testing.T) {
			tr := readFixtureTruth(t, name)
			r := runMemscope("check", "--max-leak", "0", dir+"/snapshot.pickle")
			want, mention := 0, "ok"
			switch {
			case tr.Leak != nil:
				want, mention = 1, "leak of "+units.Bytes(tr.Leak.BytesPerStep)+" per step"
			case tr.OOM != nil:
				want, mention = 1, "out-of-memory event recorded"
			}
			if r.code != want {
				t.Fatalf("check --max-leak 0: exit %d, want %d (stdout %q, err %v)", r.code, want, r.stdout, r.err)
			}
			got := r.stdout
			if r.err != nil {
				got = r.err.Error()
			}
			if !strings.Contains(got, mention) {
				t.Errorf("check --max-leak 0 = %q, want it to mention %q", got, mention)
			}
		})
	}
}

// TestPeakTreeFoldsNativeFrames: with stacks="all" the call tree shows
// the Python frames only, says how many native frames it folded, and every
// line is indented one step deeper than its parent at most, however long
// its path.
func TestPeakTreeFoldsNativeFrames(t *testing.T) {
	for _, snap := range []string{"../../fixtures/stacks-all/snapshot.pickle", "../../fixtures/capture-ddp/snapshot.rank0.pickle"} {
		r := runMemscope("peak", "--tree", snap)
		if r.err != nil {
			t.Fatalf("peak --tree %s: %v", snap, r.err)
		}
		if strings.Contains(r.stdout, "??:0") {
			t.Errorf("%s: the tree prints native ??:0 frames", snap)
		}
		_, tree, ok := strings.Cut(r.stdout, "left out):\n")
		if !ok {
			t.Fatalf("%s: no call tree in\n%s", snap, r.stdout)
		}
		prev := -1
		for _, line := range strings.Split(strings.TrimRight(tree, "\n"), "\n") {
			if strings.HasPrefix(line, "  (") {
				continue // the folded-frames note
			}
			// "  %10s %5.1f%%  " is 21 columns; the indent follows.
			rest := line[21:]
			depth := (len(rest) - len(strings.TrimLeft(rest, " "))) / 2
			if depth > prev+1 {
				t.Errorf("%s: line %q is indented %d levels under a line of %d", snap, line, depth, prev)
			}
			prev = depth
		}
	}
	r := runMemscope("peak", "--tree", "../../fixtures/stacks-all/snapshot.pickle")
	if !regexp.MustCompile(`\(\d+ native frames of C\+\+ and CPython folded\)`).MatchString(r.stdout) {
		t.Errorf("stacks-all: no note of the folded native frames in\n%s", r.stdout)
	}
}

// TestPeakTraceDisjoint: a trace recorded at another time than the
// snapshot joins nothing, and peak and summary say so with both windows;
// the trace of the same run gets no such note.
func TestPeakTraceDisjoint(t *testing.T) {
	const tr = "../../fixtures/llama-profiled/trace.json.gz"
	for _, cmd := range []string{"peak", "summary"} {
		r := runMemscope(cmd, "--trace", tr, leakSnap)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if !strings.Contains(r.stdout, "do not overlap in time") || !strings.Contains(r.stdout, "2026-11-29 17:30:21.518 UTC") {
			t.Errorf("%s --trace of another run: no note naming both windows in\n%s", cmd, r.stdout)
		}
		r = runMemscope(cmd, "--trace", tr, "../../fixtures/llama-profiled/snapshot.pickle")
		if strings.Contains(r.stdout, "do not overlap") {
			t.Errorf("%s --trace of the same run says the windows do not overlap", cmd)
		}
	}
}

// TestDiffPeakReserved: diff keeps apart reserved at each allocated peak
// and each one's own peak of reserved bytes, which equals torch's
// max_memory_reserved over the recording; its changes are B − A.
func TestDiffPeakReserved(t *testing.T) {
	a, b := "llama-bf16", "oom"
	r := runMemscope("diff", "--json", "../../fixtures/"+a+"/snapshot.pickle", "../../fixtures/"+b+"/snapshot.pickle")
	if r.err != nil {
		t.Fatal(r.err)
	}
	var doc report.ResultDoc[report.DiffResultJSON]
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.Result.Devices[0]
	ta, tb := readFixtureTruth(t, a), readFixtureTruth(t, b)
	if d.ReservedPeakA != ta.Window.MaxReserved || d.ReservedPeakB != tb.Window.MaxReserved {
		t.Errorf("reserved peaks %d, %d; torch's max_memory_reserved %d, %d", d.ReservedPeakA, d.ReservedPeakB, ta.Window.MaxReserved, tb.Window.MaxReserved)
	}
	if d.PeakA.Allocated != ta.Window.MaxAllocated || d.PeakB.Allocated != tb.Window.MaxAllocated {
		t.Errorf("allocated peaks %d, %d; torch's max_memory_allocated %d, %d", d.PeakA.Allocated, d.PeakB.Allocated, ta.Window.MaxAllocated, tb.Window.MaxAllocated)
	}
	if d.PeakB.Reserved > d.ReservedPeakB || d.PeakB.Reserved == d.ReservedPeakB {
		t.Errorf("B: reserved at its allocated peak %d against its reserved peak %d: the oom fixture's reserved peaks later", d.PeakB.Reserved, d.ReservedPeakB)
	}
	text := runMemscope("diff", "../../fixtures/"+a+"/snapshot.pickle", "../../fixtures/"+b+"/snapshot.pickle").stdout
	for _, want := range []string{"reserved at that peak", "peak reserved", units.Bytes(d.ReservedPeakB), signed(d.ReservedPeakB - d.ReservedPeakA)} {
		if !strings.Contains(text, want) {
			t.Errorf("diff text lacks %q:\n%s", want, text)
		}
	}
}

func signed(n int64) string {
	if n >= 0 {
		return "+" + units.Bytes(n)
	}
	return units.Bytes(n)
}

// TestCheckUnjudged: a gate given a limit the recording cannot judge fails
// naming it and why (exit 1), unless --allow-unjudged: --max-leak on a
// state-only dump (verl's: no history) and on a run of one step (AdamW's
// OOM at its first step). A judged limit is unaffected: the eval loop's
// leak (torch's 256,000 B per step) still fails --max-leak 0 and passes
// --max-leak 1MiB. A --max-frag above 1 is a usage error.
func TestCheckUnjudged(t *testing.T) {
	for _, c := range []struct {
		snap, why string
		extra     []string
	}{
		{"../../attribution/testdata/thirdparty/verl-state.pickle.gz", "no allocation history recorded", nil},
		{"../../fixtures/workloads/oom-first-step/snapshot.pickle", "too few steps to tell", []string{"--allow-oom"}},
	} {
		r := runMemscope(append(append([]string{"check", "--max-leak", "0"}, c.extra...), c.snap)...)
		if r.code != 1 || r.err == nil || !strings.Contains(r.err.Error(), "--max-leak cannot be judged on this recording: "+c.why) {
			t.Errorf("check --max-leak 0 %s: exit %d, %v; want 1 naming --max-leak and %q", c.snap, r.code, r.err, c.why)
		}
		r = runMemscope(append(append([]string{"check", "--max-leak", "0", "--allow-unjudged"}, c.extra...), c.snap)...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "ok") {
			t.Errorf("check --max-leak 0 --allow-unjudged %s: exit %d, %q, %v; want ok", c.snap, r.code, r.stdout, r.err)
		}
	}
	tr := readFixtureTruth(t, "workloads/eval-leak")
	leak := "../../fixtures/workloads/eval-leak/snapshot.pickle"
	if r := runMemscope("check", "--max-leak", "0", leak); r.code != 1 || r.err == nil || !strings.Contains(r.err.Error(), "leak of "+units.Bytes(tr.Leak.BytesPerStep)+" per step") {
		t.Errorf("check --max-leak 0 (eval-leak): exit %d, %v; want the leak of torch's %d B per step", r.code, r.err, tr.Leak.BytesPerStep)
	}
	if r := runMemscope("check", "--max-leak", "1MiB", leak); r.code != 0 {
		t.Errorf("check --max-leak 1MiB (eval-leak): exit %d, %v; want ok", r.code, r.err)
	}
	if r := runMemscope("check", "--max-frag", "2", leak); r.code != 2 || r.err == nil || !strings.Contains(r.err.Error(), "from 0 to 1") {
		t.Errorf("check --max-frag 2: exit %d, %v; want a usage error", r.code, r.err)
	}
}

// TestPapercutsBudgetPprof: bare 'memscope budget' says what a model
// needs in one line, with no literal "\n"; a partial one lists what is
// missing, on one line; 'help pprof' gives --device's default once.
func TestPapercutsBudgetPprof(t *testing.T) {
	r := runMemscope("budget")
	if r.code != 2 || r.err == nil || strings.Contains(r.err.Error(), `\n`) || strings.Contains(r.err.Error(), "\n") ||
		!strings.Contains(r.err.Error(), "no model: give --config config.json") {
		t.Errorf("budget: exit %d, %q; want one usage line naming --config", r.code, r.err)
	}
	r = runMemscope("budget", "--vocab", "10")
	if r.code != 2 || r.err == nil || strings.Contains(r.err.Error(), `\n`) || !strings.Contains(r.err.Error(), "hidden size is 0, want > 0; layers is 0") {
		t.Errorf("budget --vocab 10: exit %d, %q; want the missing sizes on one line", r.code, r.err)
	}
	r = runMemscope("help", "pprof")
	var device string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, "--device N") {
			device = line
		}
	}
	if r.code != 0 || strings.Count(device, "default") != 1 {
		t.Errorf("help pprof: --device's line %q, want its default given once", device)
	}
}
