package snapshot_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// fastSeeds are small snapshots whose traces are long enough for batches
// after the first (pickle.dump writes 1,000 entries a batch, the first
// read by the general machine): 3,100 entries from the middle of real
// fixtures' traces (where few frames are new), without the end state,
// written back as torch writes them, plus shapes that stress the fast
// path (stack variants, deeper stacks, two devices).
func fastSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, name := range []string{"plain-trainer-late", "llama-bf16"} {
		src, err := snapshot.Open(filepath.Join("..", "fixtures", name, "snapshot.pickle"))
		if err != nil {
			t.Fatal(err)
		}
		for d := range src.Traces {
			src.Traces[d] = src.Traces[d][len(src.Traces[d])/2:]
			src.Traces[d] = src.Traces[d][:min(len(src.Traces[d]), 3100)]
		}
		src.Segments = nil // small seeds: FuzzDecode has the segments
		for _, opt := range []snapgen.Options{{Repeats: 1}, {Repeats: 1, Stacks: 3, Frames: 2, Devices: 2}} {
			var buf bytes.Buffer
			if _, err := snapgen.WriteOptions(&buf, src, 0, opt); err != nil {
				t.Fatal(err)
			}
			seeds = append(seeds, buf.Bytes())
		}
	}
	// Annotations after the first batch of them, with a short trace.
	src, err := snapshot.Open(filepath.Join("..", "fixtures", "llama-bf16", "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	src.Traces[0], src.Segments = src.Traces[0][:100], nil
	base := src.Annotations
	for len(src.Annotations) < 2100 {
		src.Annotations = append(src.Annotations, base...)
	}
	var buf bytes.Buffer
	if _, err := snapgen.WriteOptions(&buf, src, 0, snapgen.Options{Repeats: 1}); err != nil {
		t.Fatal(err)
	}
	return append(seeds, buf.Bytes())
}

func TestFastPathSeeds(t *testing.T) {
	annots := 0
	for i, data := range fastSeeds(t) {
		n := snapshot.DecodeBothForTest(t, "seed", data)
		if n == 0 {
			t.Errorf("seed %d (%d bytes): no batch took the fast path", i, len(data))
		}
		annots += snapshot.FastAnnotsForTest(t, data)
	}
	if annots == 0 {
		t.Error("no seed has a batch of annotations the fast path reads")
	}
}

// FuzzFastPath mutates the seeds and checks that the fast path and the
// general machine agree on every input: the same snapshot or the same error;
// every snapshot and its replays pass CheckValid.
//
//	go test ./snapshot -run '^$' -fuzz FuzzFastPath -fuzztime 5m -fuzzminimizetime 10s
func FuzzFastPath(f *testing.F) {
	for _, s := range fastSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		snapshot.DecodeBothForTest(t, "fuzz", data)
	})
}

// TestChunksEqualGeneral decodes snapshots of several MB, big enough to be
// read by chunks ahead of the window at the default chunk size, whole and
// cut short, and requires the general machine's snapshot or error.
func TestChunksEqualGeneral(t *testing.T) {
	total := 0
	for _, c := range []struct {
		name string
		opt  snapgen.Options
	}{
		{"plain-trainer-late", snapgen.Options{}},
		{"llama-bf16", snapgen.Options{Stacks: 8, Frames: 4}},
	} {
		src, err := snapshot.Open(filepath.Join("..", "fixtures", c.name, "snapshot.pickle"))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := snapgen.WriteOptions(&buf, src, 6<<20, c.opt); err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()
		_, chunks := snapshot.DecodeBothChunksForTest(t, c.name, data)
		if chunks == 0 {
			t.Errorf("%s (%d bytes): no chunk read ahead was taken", c.name, len(data))
		}
		total += chunks
		for _, frac := range []int{10, 50, 90} {
			snapshot.DecodeBothChunksForTest(t, c.name, data[:len(data)*frac/100])
		}
	}
	t.Logf("%d chunks read ahead taken", total)
}

// TestFastAnnotations decodes a generated snapshot with thousands of step
// annotations (the harness's, renumbered, and torch's Optimizer.step
// ranges): after the first batch, the fast path reads them, and the
// snapshot must be the general machine's, whole and cut short.
func TestFastAnnotations(t *testing.T) {
	src, err := snapshot.Open(filepath.Join("..", "fixtures", "llama-bf16", "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := snapgen.WriteOptions(&buf, src, 16<<20, snapgen.Options{}); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	s, err := snapshot.Decode(bytes.NewReader(data), "annotations")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Annotations) < 2500 {
		t.Fatalf("%d annotations: want thousands, in batches of 1,000", len(s.Annotations))
	}
	n := snapshot.FastAnnotsForTest(t, data)
	t.Logf("%d annotations, %d batches of them read by the fast path", len(s.Annotations), n)
	if n < 1 {
		t.Fatalf("%d annotations, none read by the fast path", len(s.Annotations))
	}
	snapshot.DecodeBothChunksForTest(t, "annotations", data)
	for _, frac := range []int{50, 95, 99} {
		snapshot.DecodeBothChunksForTest(t, "annotations", data[:len(data)*frac/100])
	}
}

func init() {
	snapshot.SetBenchScanInput(func(t testing.TB) []byte {
		src, err := snapshot.Open(filepath.Join("..", "fixtures", "plain-trainer-late", "snapshot.pickle"))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := snapgen.WriteOptions(&buf, src, 8<<20, snapgen.Options{}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	})
}
