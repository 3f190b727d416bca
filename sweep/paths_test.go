package sweep

import (
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/capture"
)

// TestSweepPaths reads the sweeps of fixtures/sweep-paths, one through each
// remaining path of the harness, measured on H200s, and checks what follows
// from each path's own numbers.
func TestSweepPaths(t *testing.T) {
	read := func(name string) (*capture.Results, *Analysis) {
		t.Helper()
		dir := filepath.Join("../fixtures/sweep-paths", name)
		r, err := capture.ReadResults(dir)
		if err != nil {
			t.Fatal(err)
		}
		return r, Analyze(dir, r)
	}
	t.Run("micro-batch", func(t *testing.T) {
		// Micro-batches of 2 samples: the activations at the peak are those
		// of 2 samples whatever the batch, so the peak does not grow.
		r, a := read("mlp-microbatch")
		if r.MicroBatch != 2 || len(a.Fits) != 1 {
			t.Fatalf("micro_batch %d, %d fits; want 2, 1", r.MicroBatch, len(a.Fits))
		}
		if s := a.Fits[0].Slope; s < -1<<20 || s > 1<<20 {
			t.Errorf("slope with micro-batches = %.0f bytes per sample, want about 0", s)
		}
	})
	for _, name := range []string{"ddp", "fsdp"} {
		t.Run(name, func(t *testing.T) {
			// FSDP2 shards parameters and optimizer state over the two ranks,
			// DDP replicates them: the fixed part is smaller under FSDP.
			r, a := read(name)
			if r.Nproc != 2 || r.Parallel != name || len(a.Fits) != 1 {
				t.Fatalf("nproc %d parallel %q, %d fits; want 2 %s 1", r.Nproc, r.Parallel, len(a.Fits), name)
			}
		})
	}
	_, ddp := read("ddp")
	_, fsdp := read("fsdp")
	if fsdp.Fits[0].Fixed >= ddp.Fits[0].Fixed {
		t.Errorf("fixed memory under FSDP %.0f ≥ under DDP %.0f; sharding should save", fsdp.Fits[0].Fixed, ddp.Fits[0].Fixed)
	}
	for _, name := range []string{"vit-fp16-infer", "factory"} {
		if r, a := read(name); len(a.Fits) == 0 || len(r.Precisions) == 0 {
			t.Errorf("%s: %d fits over precisions %v", name, len(a.Fits), r.Precisions)
		}
	}
}
