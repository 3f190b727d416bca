package fit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/memscope/memscope/allocator"
	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/snapshot"
)

// fitMisses are the measured frontiers the model misses, with the cause;
// each is off by one batch at most.
var fitMisses = map[string]string{
	// At 45 cuDNN picks other algorithms: 216 of the requests both make
	// come in other sizes, every one a workspace, and 104 the small runs
	// never made appear (recorded-b45, TestFitCompareNamesTheMisses); torch
	// survived 67 failed workspace requests there and completed with 0.2%
	// of the cap to spare, while the model at 45 fails one forward request.
	"conv cap4096MiB": "cuDNN's workspaces at 45 follow no line from 2, 4 and 8",
	// At 24 generate() makes 756 fewer requests than at 4, one per layer
	// and decode step (recorded-b24); the model, which makes them, reaches
	// exactly the cap at 25 (1,610,612,736 B) and serves every request,
	// where torch's run at 25 failed in its first prefill.
	"gen cap1536MiB": "the program at 24 and above takes a path batch 4 did not",
}

type fitCase struct {
	name    string
	batches []int
	caps    []string
}

var fitCases = []fitCase{
	{"lm", []int{1, 2, 4}, []string{"cap6144MiB", "cap12288MiB", "cap6144MiB-expandable"}},
	{"conv", []int{2, 4, 8}, []string{"cap4096MiB", "cap8192MiB"}},
	{"gen", []int{1, 2, 4}, []string{"cap1536MiB", "cap3072MiB"}},
}

func openInputs(t testing.TB, name string, batches []int) []Input {
	t.Helper()
	var ins []Input
	for _, b := range batches {
		p := filepath.Join("../fixtures", "fit-"+name, fmt.Sprintf("b%d", b), "snapshot.pickle.gz")
		s, err := snapshot.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, Input{Path: p, Snap: s, Batch: b})
	}
	return ins
}

// runPeaks is torch's peak allocated and reserved over a fitwork.py run
// (the max of its phases, which partition the run) and whether it ran
// out of memory.
func runPeaks(tr *truth.File) (alloc, reserved int64, oom bool) {
	for _, ph := range tr.Phases {
		alloc = max(alloc, ph.PeakAllocated)
		reserved = max(reserved, ph.PeakReserved)
	}
	return alloc, reserved, tr.OOM != nil
}

func readFrontier(t *testing.T, dir string) (largest, first int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "frontier.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, _ := strconv.Atoi(v)
		switch k {
		case "largest_fit":
			largest = n
		case "first_fail":
			first = n
		}
	}
	return largest, first
}

// TestFitFrontier: three workloads of different kinds (a Llama with
// AdamW under autocast, resnet50 with SGD, a generate() server), each
// recorded at three small batches, fitted and searched for the largest
// batch that fits under the caps torch's frontier was measured at (one
// fresh process per batch, fixtures/fit-*/capN). The predicted largest
// batch is torch's, or fitMisses says why it is one off; at torch's
// largest batch the model's peak allocated is within 1% of torch's and
// its peak reserved within 3%; every batch torch ran in the search is
// called as torch had it (fits or OOM) except at a listed miss's edge.
func TestFitFrontier(t *testing.T) {
	for _, c := range fitCases {
		ins := openInputs(t, c.name, c.batches)
		for _, capDir := range c.caps {
			key := c.name + " " + capDir
			dir := filepath.Join("../fixtures", "fit-"+c.name, capDir)
			largest, first := readFrontier(t, dir)
			at, err := truth.Read(filepath.Join(dir, fmt.Sprintf("b%d", largest), "truth.json"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := New(ins, 0, Options{DeviceTotal: at.DeviceTotal, MemoryFraction: at.CapFraction})
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			set, err := allocator.ParseConf(at.AllocConf)
			if err != nil {
				t.Fatal(err)
			}
			f, err := m.Frontier(set, 4096)
			if err != nil {
				t.Fatal(err)
			}
			cause, miss := fitMisses[key]
			t.Logf("%-26s predicted %d, torch %d (first fail %d)", key, f.LargestFit, largest, first)
			switch {
			case f.LargestFit == largest && miss:
				t.Errorf("%s: predicted torch's frontier %d, but listed as a miss (%s)", key, largest, cause)
			case f.LargestFit != largest && !miss:
				t.Errorf("%s: predicted largest batch %d, torch's is %d", key, f.LargestFit, largest)
			case f.LargestFit != largest && (f.LargestFit-largest > 1 || largest-f.LargestFit > 1):
				t.Errorf("%s: predicted largest batch %d, more than one off torch's %d", key, f.LargestFit, largest)
			}
			p, err := m.At(largest, set)
			if err != nil {
				t.Fatal(err)
			}
			ta, tres, _ := runPeaks(at)
			ea, er := pct(p.PeakAllocated, ta), pct(p.PeakReserved, tres)
			t.Logf("%-26s at %d: allocated %d vs torch %d (%+.2f%%), reserved %d vs %d (%+.2f%%)", key, largest, p.PeakAllocated, ta, ea, p.PeakReserved, tres, er)
			if ea < -1 || ea > 1 {
				t.Errorf("%s at batch %d: peak allocated %d, torch's %d (%+.2f%%, want within 1%%)", key, largest, p.PeakAllocated, ta, ea)
			}
			if er < -3 || er > 3 {
				t.Errorf("%s at batch %d: peak reserved %d, torch's %d (%+.2f%%, want within 3%%)", key, largest, p.PeakReserved, tres, er)
			}
			// Every batch torch ran under this cap, called as torch had it.
			runs, _ := filepath.Glob(filepath.Join(dir, "b*", "truth.json"))
			for _, r := range runs {
				tr, err := truth.Read(r)
				if err != nil {
					t.Fatal(err)
				}
				_, _, oom := runPeaks(tr)
				n := int(tr.Batch)
				p, err := m.At(n, set)
				if err != nil {
					t.Fatal(err)
				}
				edge := miss && (n == largest || n == f.LargestFit || n == largest+1)
				if p.Fits == oom && !edge {
					t.Errorf("%s batch %d: model fits %v, torch ran out of memory %v", key, n, p.Fits, oom)
				}
			}
		}
	}
}

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a-b) / float64(b)
}

// TestFitRecordedBatches: at each recorded batch, with no cap, the
// synthesized run is the template's program at that batch: its peak
// allocated is torch's within 1% (resnet50 at batch 2 runs cuDNN
// algorithms of its own, whose requests the template lacks: −0.9%) and
// the Llama's, whose requests are all exact lines, to the byte at batch 2.
func TestFitRecordedBatches(t *testing.T) {
	for _, c := range fitCases {
		ins := openInputs(t, c.name, c.batches)
		m, err := New(ins, 0, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range c.batches {
			tr, err := truth.Read(filepath.Join("../fixtures", "fit-"+c.name, fmt.Sprintf("b%d", b), "truth.json"))
			if err != nil {
				t.Fatal(err)
			}
			p, err := m.At(b, m.RecordedSettings())
			if err != nil {
				t.Fatal(err)
			}
			ta, _, _ := runPeaks(tr)
			if e := pct(p.PeakAllocated, ta); e < -1 || e > 1 || c.name == "lm" && b == 2 && p.PeakAllocated != ta {
				t.Errorf("%s at recorded batch %d: peak allocated %d, torch's %d (%+.3f%%)", c.name, b, p.PeakAllocated, ta, e)
			}
		}
	}
}

// TestFitSizeKinds: the Llama's requests at batches 2 and 4 are the same
// program's (the same stacks in the same order); batch 1 takes other
// paths in 81 requests, which the alignment leaves out. Every request is
// then an exact line (constant or linear in the batch), and the per-sample
// bytes of the largest scaling stack is the logits' fp32 copy: 512 tokens
// × 32,000 × 4 B.
func TestFitSizeKinds(t *testing.T) {
	m, err := New(openInputs(t, "lm", []int{1, 2, 4}), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Kinds[SizeIrregular] != 0 || m.Kinds[SizeUnpaired] != 0 || m.Kinds[SizeQuadratic] != 0 {
		t.Errorf("kinds %v: want only constant and linear requests", m.Kinds)
	}
	if got := m.Kinds[SizeConstant] + m.Kinds[SizeLinear]; got != 3045 {
		t.Errorf("%d requests, the template has 3045 allocs", got)
	}
	if m.OnlyOthers[0] != 0 {
		t.Errorf("batch 1 has %d requests batch 4 lacks", m.OnlyOthers[0])
	}
}

func TestBatchFromName(t *testing.T) {
	for _, c := range []struct {
		path string
		want int
	}{{"fixtures/fit-lm/b4/snapshot.pickle", 4}, {"run_bs16.pickle", 16}, {"batch-32/snap.pickle", 32}, {"snapshot.pickle", 0}, {"b8/bs16.pickle", 0}, {"llama3b.pickle", 0}} {
		if got := BatchFromName(c.path); got != c.want {
			t.Errorf("BatchFromName(%q) = %d, want %d", c.path, got, c.want)
		}
	}
}

// TestFitRefuses: one recording, two at one batch, and two different
// programs are refused with the reason.
func TestFitRefuses(t *testing.T) {
	lm := openInputs(t, "lm", []int{2})
	conv := openInputs(t, "conv", []int{4})
	for _, c := range []struct {
		ins  []Input
		want string
	}{
		{lm, "two or more recordings"},
		{[]Input{lm[0], {Path: "x", Snap: lm[0].Snap, Batch: 2}}, "both recorded at batch 2"},
		{[]Input{lm[0], conv[0]}, "not recordings of one program"},
	} {
		_, err := New(c.ins, 0, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New: %v, want an error saying %q", err, c.want)
		}
	}
}

// TestFitSeqLength: the same Llama at batch 2 recorded at 256, 512 and
// 1024 tokens per sample, fitted to the sequence length (with SDPA's
// attention every request is constant or linear in it: no quadratic
// term), and run at 2048 tokens, which torch measured in a fresh process
// without recording (fixtures/fit-lm/seq2048): peak allocated within 0.1%
// of torch's, reserved within 1%.
func TestFitSeqLength(t *testing.T) {
	var ins []Input
	for _, c := range []struct {
		dir string
		seq int
	}{{"seq256", 256}, {"b2", 512}, {"seq1024", 1024}} {
		p := filepath.Join("../fixtures/fit-lm", c.dir, "snapshot.pickle.gz")
		s, err := snapshot.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, Input{Path: p, Snap: s, Batch: c.seq})
	}
	m, err := New(ins, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Kinds[SizeIrregular]+m.Kinds[SizeUnpaired]+m.Kinds[SizeQuadratic] != 0 {
		t.Errorf("kinds %v: want every request constant or linear in the length", m.Kinds)
	}
	tr, err := truth.Read("../fixtures/fit-lm/seq2048/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.At(2048, m.RecordedSettings())
	if err != nil {
		t.Fatal(err)
	}
	ta, tres, _ := runPeaks(tr)
	if e := pct(p.PeakAllocated, ta); e < -0.1 || e > 0.1 {
		t.Errorf("at 2048 tokens: peak allocated %d, torch's %d (%+.3f%%)", p.PeakAllocated, ta, e)
	}
	if e := pct(p.PeakReserved, tres); e < -1 || e > 1 {
		t.Errorf("at 2048 tokens: peak reserved %d, torch's %d (%+.3f%%)", p.PeakReserved, tres, e)
	}
	t.Logf("2048 tokens: allocated %d vs %d, reserved %d vs %d", p.PeakAllocated, ta, p.PeakReserved, tres)
}

// TestFitRefusesWhatTheModelCannotDrive: recordings made under
// backend:cudaMallocAsync have no caching allocator to model; fit says so
// instead of answering.
func TestFitRefusesWhatTheModelCannotDrive(t *testing.T) {
	ins := openInputs(t, "lm", []int{2, 4})
	for i := range ins {
		c := *ins[i].Snap
		c.Settings = map[string]any{"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}
		ins[i].Snap = &c
	}
	m, err := New(ins, 0, Options{MemoryLimit: 6 << 30})
	if err == nil {
		_, err = m.Frontier(m.RecordedSettings(), 64)
	}
	if err == nil || !strings.Contains(err.Error(), "cudaMallocAsync") {
		t.Fatalf("fit of cudaMallocAsync recordings: %v, want a refusal naming the backend", err)
	}
}

// TestFitCompareNamesTheMisses: the two frontiers the fit misses, held
// against a recording made at the batch in question (the same script
// under the same cap, recorded: fixtures/fit-gen/recorded-b24 and
// fixtures/fit-conv/recorded-b45, whose truth.json peaks equal the
// unrecorded runs'). generate() at 24 makes 756 fewer requests than the
// fit from batches 1, 2 and 4 predicts — one per layer (6) and decode
// step (63) of each of the two requests — all at the generate call; every
// request both make has the predicted size. resnet50 at 45 makes the
// requests the fit predicts, but cuDNN's workspaces (transient requests)
// come in other sizes: every mispredicted size is a workspace's.
func TestFitCompareNamesTheMisses(t *testing.T) {
	gen, err := New(openInputs(t, "gen", []int{1, 2, 4}), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open("../fixtures/fit-gen/recorded-b24/snapshot.pickle.gz")
	if err != nil {
		t.Fatal(err)
	}
	c, err := gen.Compare(Input{Path: "recorded-b24", Snap: s, Batch: 24})
	if err != nil {
		t.Fatal(err)
	}
	if c.Predicted-c.Recorded != 756 || len(c.PredictedOnly) != 1 || c.PredictedOnly[0].Count != 756 ||
		!strings.HasPrefix(c.PredictedOnly[0].Label, "fitwork.py:98 gen") || len(c.RecordedOnly) != 0 {
		t.Errorf("generate at 24: predicted %d, recorded %d, predicted only %+v, recorded only %+v", c.Predicted, c.Recorded, c.PredictedOnly, c.RecordedOnly)
	}
	if c.Exact != c.Matched {
		t.Errorf("generate at 24: %d of %d paired requests at the predicted size: %+v", c.Exact, c.Matched, c.Mispredicted)
	}
	conv, err := New(openInputs(t, "conv", []int{2, 4, 8}), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err = snapshot.Open("../fixtures/fit-conv/recorded-b45/snapshot.pickle.gz")
	if err != nil {
		t.Fatal(err)
	}
	c, err = conv.Compare(Input{Path: "recorded-b45", Snap: s, Batch: 45})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Mispredicted) == 0 {
		t.Fatal("resnet50 at 45: every size predicted")
	}
	for _, m := range c.Mispredicted {
		if !m.Transient {
			t.Errorf("resnet50 at 45: %s ×%d mispredicted (%d B, recorded %d B) and not a workspace", m.Label, m.Count, m.Bytes, m.RecordedBytes)
		}
	}
	t.Logf("resnet50 at 45: %d of %d paired requests exact, %d mispredicted stacks, %d predicted only, %d recorded only", c.Exact, c.Matched, len(c.Mispredicted), len(c.PredictedOnly), len(c.RecordedOnly))
}

// TestBatchRatioHint: with no batch given and none in the names, the
// refusal says how the files' batches relate, read from the requests that
// grow with the batch: resnet50's batch 8 and 2 recordings scale as 4 : 1,
// the generate() server's 2, 4 and 1 as 2 : 4 : 1.
func TestBatchRatioHint(t *testing.T) {
	for _, c := range []struct {
		name    string
		batches []int
		want    string
	}{{"conv", []int{8, 2}, "scale as 4 : 1, in the files' order: --batches 4,1"}, {"gen", []int{2, 4, 1}, "scale as 2 : 4 : 1"}} {
		ins := openInputs(t, c.name, c.batches)
		for i := range ins {
			ins[i].Path, ins[i].Batch = fmt.Sprintf("run%c.pickle", 'x'+i), 0
		}
		_, err := New(ins, 0, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v unnamed: %v, want %q", c.name, c.batches, err, c.want)
		}
	}
}

// TestFitPromptFrontier: the generate() server at batch 16 recorded at
// prompts of 128, 256 and 512 tokens (fixtures/fit-gen/b16-seq*), fitted
// to the prompt length (every request constant or linear in it), and the
// longest prompt that fits under 1.5 GiB searched: torch's, measured one
// fresh process per length (seq-b16-cap1536MiB), is 1559 tokens; the model
// says 1600 (+2.6%; held within 3%). At 1536 tokens (16 × 1536 = 24 × 1024 tokens) torch's
// peaks are those of batch 24 at 1,024 tokens, where the recording
// recorded-b24 shows the program taking another path (756 requests
// fewer): the likely cause, not checked with a recording at 1536. At 1024
// tokens the model's peak allocated is torch's within 0.1%.
func TestFitPromptFrontier(t *testing.T) {
	var ins []Input
	for _, L := range []int{128, 256, 512} {
		p := fmt.Sprintf("../fixtures/fit-gen/b16-seq%d/snapshot.pickle.gz", L)
		s, err := snapshot.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, Input{Path: p, Snap: s, Batch: L})
	}
	dir := "../fixtures/fit-gen/seq-b16-cap1536MiB"
	largest, _ := readFrontier(t, dir)
	tr, err := truth.Read(filepath.Join(dir, "L1024", "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(ins, 0, Options{DeviceTotal: tr.DeviceTotal, MemoryFraction: tr.CapFraction})
	if err != nil {
		t.Fatal(err)
	}
	if m.Kinds[SizeIrregular]+m.Kinds[SizeUnpaired]+m.Kinds[SizeQuadratic] != 0 {
		t.Errorf("kinds %v: want every request constant or linear in the prompt", m.Kinds)
	}
	f, err := m.Frontier(m.RecordedSettings(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	if e := 100 * float64(f.LargestFit-largest) / float64(largest); e < -3 || e > 3 {
		t.Errorf("longest prompt: model %d, torch %d (%+.1f%%, want within 3%%)", f.LargestFit, largest, e)
	}
	t.Logf("longest prompt: model %d, torch %d", f.LargestFit, largest)
	p, err := m.At(1024, m.RecordedSettings())
	if err != nil {
		t.Fatal(err)
	}
	ta, _, _ := runPeaks(tr)
	if e := pct(p.PeakAllocated, ta); e < -0.1 || e > 0.1 {
		t.Errorf("at 1024 tokens: peak allocated %d, torch's %d (%+.3f%%)", p.PeakAllocated, ta, e)
	}
}
