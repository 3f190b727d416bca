package fit

import (
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/truth"
)

// TestFixesAlongTheCurve: on the Llama workload (fit-lm, recorded at 1, 2
// and 4) advise's fixes on the template are carried along the curve where
// advise words them as smaller requests (the losses', the optimizer
// state's, half the micro-batch's): each one's batch fits through the
// allocator model with those requests shrunk, under the cap less what
// else it adds, and the next does not; one not carried says why. No fix
// finds less than the frontier without one, a larger cap never a smaller
// batch;
// and the chunked loss's frontier is within 8% of torch's, measured on the
// H200 with the loss in 8 chunks under both caps (fixtures/fit-lm/
// fix-chunked: 47 and 51).
func TestFixesAlongTheCurve(t *testing.T) {
	ins := openInputs(t, "lm", []int{1, 2, 4})
	largest := map[budget.FixKind]int{}
	replayed := 0
	for _, c := range []struct {
		cap int64
		dir string
	}{{12 << 30, "cap12288MiB"}, {13 << 30, "cap13312MiB"}} {
		cap := c.cap
		m, err := New(ins, 0, Options{MemoryLimit: cap})
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.Run([]Setting{{Settings: m.RecordedSettings()}}, cap, 1<<12)
		if err != nil {
			t.Fatal(err)
		}
		base := res.Frontiers[0]
		fixes, err := m.Fixes(cap, 1<<12)
		if err != nil {
			t.Fatal(err)
		}
		if len(fixes) < 3 {
			t.Fatalf("cap %d: %d fixes along the curve, want advise's (chunked and fused losses, the optimizer's)", cap, len(fixes))
		}
		for _, f := range fixes {
			name := f.Advice.Kind
			if !f.Carried {
				if f.Why == "" {
					t.Errorf("fix %v not carried, and no reason given", name)
				}
				continue
			}
			if f.LargestFit < base.LargestFit {
				t.Errorf("fix %v: largest batch %d, below the frontier without it (%d)", name, f.LargestFit, base.LargestFit)
			}
			replayed++
			change, n := m.shrinker(f.Advice.Shrinks)
			if n != f.Shrunk || n == 0 {
				t.Errorf("fix %v: %d requests shrunk, reported %d", name, n, f.Shrunk)
			}
			set := m.RecordedSettings()
			set.MemoryLimit = cap - f.Advice.MovesBytes
			p, err := m.at(f.LargestFit, set, nil, change)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Fits || p.PeakReserved != f.Need || p.PeakReserved > cap {
				t.Errorf("fix %v replayed at %d: fits %v, reserved %d (reported %d), cap %d", name, f.LargestFit, p.Fits, p.PeakReserved, f.Need, cap)
			}
			if f.LargestFit < f.Max && (f.FirstFail == nil || f.FirstFail.Fits || f.FirstFail.Batch != f.LargestFit+1) {
				t.Errorf("fix %v replayed: first fail %+v, want an OOM at %d", name, f.FirstFail, f.LargestFit+1)
			}
			if prev, ok := largest[name]; ok && f.LargestFit < prev {
				t.Errorf("fix %v: %d under the larger cap %d, %d under the smaller", name, f.LargestFit, cap, prev)
			}
			largest[name] = f.LargestFit
			if name == budget.FixChunkedLoss {
				torch, _ := readFrontier(t, filepath.Join("../fixtures/fit-lm/fix-chunked", c.dir))
				e := float64(f.LargestFit-torch) / float64(torch)
				t.Logf("cap %s: chunked loss %d, torch %d (%+.1f%%), ", c.dir, f.LargestFit, torch, 100*e)
				if e > 0.08 || e < -0.08 {
					t.Errorf("cap %s: the chunked loss's largest batch %d, torch's %d: want the replay within 8%%", c.dir, f.LargestFit, torch)
				}
			}
			t.Logf("cap %d: %-2d with fix %v (needs %d)", cap, f.LargestFit, name, f.Need)
		}
	}
	if replayed < 6 {
		t.Errorf("%d fixes carried under the two caps, want the losses', the optimizer state's and the micro-batch's", replayed)
	}
}

// TestNeed: the step's need at a batch is the model's run with no cap
// (at torch's largest batch under the 12 GiB cap, 24, within 1% and 3% of
// torch's peaks there, as the frontier's run is) and says whether it fits
// that cap: 24 fits, 25 does not.
func TestNeed(t *testing.T) {
	ins := openInputs(t, "lm", []int{1, 2, 4})
	const cap = 12884901888
	m, err := New(ins, 0, Options{MemoryLimit: cap})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := truth.Read(filepath.Join("../fixtures/fit-lm/cap12288MiB/b24/truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	alloc, reserved, _ := runPeaks(tr)
	p, err := m.Need(24, cap)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Fits || p.OOM != nil || !within(p.PeakAllocated, alloc, 0.01) || !within(p.PeakReserved, reserved, 0.03) {
		t.Errorf("need at 24: fits %v, allocated %d (torch %d), reserved %d (torch %d)", p.Fits, p.PeakAllocated, alloc, p.PeakReserved, reserved)
	}
	q, err := m.Need(25, cap)
	if err != nil {
		t.Fatal(err)
	}
	full, err := m.At(25, m.Uncapped())
	if err != nil {
		t.Fatal(err)
	}
	if q.Fits || q.OOM == nil || q.PeakReserved != full.PeakReserved || q.PeakReserved <= cap {
		t.Errorf("need at 25: fits %v (OOM %+v), reserved %d (uncapped run %d): want an OOM under the cap and the uncapped need above it", q.Fits, q.OOM, q.PeakReserved, full.PeakReserved)
	}
}

func within(got, want int64, frac float64) bool {
	d := float64(got - want)
	return d <= frac*float64(want) && -d <= frac*float64(want)
}
