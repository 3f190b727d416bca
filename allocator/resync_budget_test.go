package allocator

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// A trace the model keeps diverging from (gensnap -realistic adds segments
// held from before recording, with free room the real allocator never
// had, so the model places blocks there): each resync loads the whole
// recorded state, thousands of blocks, so after a sixteenth of the trace's
// length in loaded blocks (and the slack) checking stops, and says why.
// Unbounded, this file's check took 80 µs per entry.
func TestResyncsBounded(t *testing.T) {
	src, err := snapshot.Open(filepath.Join("..", "fixtures", "llama-bf16", "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := snapgen.WriteOptions(&buf, src, 4<<20, snapgen.Options{Stacks: 64, Frames: 12, Segments: 256, Blocks: 16}); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Decode(&buf, "realistic.pickle")
	if err != nil {
		t.Fatal(err)
	}
	r, err := runReplay(s, 0, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep := r.rep
	if rep.LostWhy != LostTooOften || rep.LostAt < 0 {
		t.Fatalf("checking did not stop for resyncs: %v (lost %v)", rep, rep.LostWhy)
	}
	if rep.Resyncs == 0 || rep.Divergences < rep.Resyncs {
		t.Errorf("%d resyncs, %d divergences", rep.Resyncs, rep.Divergences)
	}
	if rep.Unchecked != rep.Events-rep.LostAt-1 {
		t.Errorf("%d unchecked after event %d of %d", rep.Unchecked, rep.LostAt, rep.Events)
	}
	// The budget, plus the one resync that crossed it.
	if most := rep.Events/16 + resyncSlack + rep.StartBlocks + rep.StartSegments + 4096; r.loaded > most {
		t.Errorf("resyncs loaded %d blocks and segments, more than %d", r.loaded, most)
	}
	t.Logf("%v", rep)
}
