package snapshot_test

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// TestEventsFilledInPlace: the trace entries of a file of known size are
// sized as they are read (reserveEvents) and never copied at the end, on
// generated files whose first entries carry the frame definitions
// (-realistic's nesting) or that are dense (llama-bf16 repeated: 73 bytes
// an entry, where half the budget would hold too few), and on the real
// fixtures of more than a thousand entries.
func TestEventsFilledInPlace(t *testing.T) {
	src, err := snapshot.Open(filepath.Join("..", "fixtures", "llama-bf16", "snapshot.pickle"))
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	files := map[string]string{}
	for name, opt := range map[string]snapgen.Options{"realistic": snapgen.RealisticOptions(), "dense": {}} {
		path := filepath.Join(dir, name+".pickle")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		if _, err := snapgen.WriteOptions(w, src, 24<<20, opt); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		files[name] = path
	}
	for _, name := range []string{"workloads/fsdp2", "workloads/lora", "llama-ckpt", "plain-trainer-late", "workloads/decode-loop"} {
		files[name] = filepath.Join("..", "fixtures", filepath.FromSlash(name), "snapshot.pickle")
	}
	for name, path := range files {
		t.Run(name, func(t *testing.T) {
			before := snapshot.FlatCopiesForTest()
			s, err := snapshot.Open(path)
			if err != nil {
				t.Skip(err)
			}
			if got := snapshot.FlatCopiesForTest() - before; got != 0 {
				n := 0
				for _, tr := range s.Traces {
					n += len(tr)
				}
				t.Errorf("Open(%s): %d lists of entries copied at the end (%d entries), want 0", name, got, n)
			}
		})
	}
}
