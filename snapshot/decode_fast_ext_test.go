package snapshot_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"

	"github.com/memscope/memscope/internal/testenv"
)

// fixture opens fixtures/NAME/snapshot.pickle.
func fixture(t testing.TB, name string) *snapshot.Snapshot {
	t.Helper()
	src, err := snapshot.Open(filepath.Join("..", "fixtures", name, "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// written is src written back by snapgen, at least minBytes, shaped by opt.
func written(t testing.TB, src *snapshot.Snapshot, minBytes int64, opt snapgen.Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := snapgen.WriteOptions(&buf, src, minBytes, opt); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fastSeeds are small snapshots whose traces are long enough for batches
// after the first (pickle.dump writes 1,000 entries a batch, the first
// read by the general machine): 3,100 entries from the middle of real
// fixtures' traces (where few frames are new), without the end state,
// written back as torch writes them, plus shapes that stress the fast
// path (stack variants, deeper stacks, two devices).
func fastSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, name := range []string{"plain-trainer-late", "llama-bf16"} {
		src := fixture(t, name)
		for d := range src.Traces {
			src.Traces[d] = src.Traces[d][len(src.Traces[d])/2:]
			src.Traces[d] = src.Traces[d][:min(len(src.Traces[d]), 3100)]
		}
		src.Segments = nil // small seeds: FuzzDecode has the segments
		for _, opt := range []snapgen.Options{{Repeats: 1}, {Repeats: 1, Stacks: 3, Frames: 2, Devices: 2}} {
			seeds = append(seeds, written(t, src, 0, opt))
		}
	}
	// Annotations after the first batch of them, with a short trace.
	return append(seeds, manyAnnotations(t, "llama-bf16", 2100))
}

// manyAnnotations is fixture name with a short trace and its annotations
// repeated to at least n.
func manyAnnotations(t testing.TB, name string, n int) []byte {
	src := fixture(t, name)
	src.Traces[0], src.Segments = src.Traces[0][:min(len(src.Traces[0]), 100)], nil
	base := src.Annotations
	for len(src.Annotations) < n {
		src.Annotations = append(src.Annotations, base...)
	}
	return written(t, src, 0, snapgen.Options{Repeats: 1})
}

func TestFastPathSeeds(t *testing.T) {
	annots := 0
	for i, data := range append(fastSeeds(t), fuzzSeeds(t)...) {
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
//
// Its seeds are fastSeeds' smallest shapes (fuzzSeeds), and each input is
// compared with one of the fast path's seven variants, picked by its
// length and last byte: seeds of 110-450 KB decoded eight times each held
// the fuzzer in minimizing for the whole minute (11 executions).
func FuzzFastPath(f *testing.F) {
	testenv.FuzzMinimize(f, 2*time.Second)
	for _, s := range append(fuzzSeeds(f), hostileSeeds(f)...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pick := len(data)
		if len(data) > 0 {
			pick += int(data[len(data)-1])
		}
		snapshot.DecodeSomeForTest(t, "fuzz", data, pick)
	})
}

// fuzzSeeds are small inputs that still reach the fast path: one device's
// trace just past pickle's first batch of 1,000 entries, and annotations past their first batch.
func fuzzSeeds(t testing.TB) [][]byte {
	src := fixture(t, "plain-trainer-late")
	for d := range src.Traces {
		src.Traces[d] = src.Traces[d][len(src.Traces[d])/2:]
		src.Traces[d] = src.Traces[d][:min(len(src.Traces[d]), 1010)]
	}
	src.Traces, src.Segments, src.Annotations = src.Traces[:1], nil, nil
	return [][]byte{written(t, src, 0, snapgen.Options{Repeats: 1}), manyAnnotations(t, "llama-bf16", 1010)}
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
		data := written(t, fixture(t, c.name), 6<<20, c.opt)
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

// TestFastAnnotations decodes snapshots with thousands of annotations:
// one generated from the harness's capture (its step ranges renumbered),
// and torch's own from the HF Trainer capture made without the harness
// (Optimizer.step, DataLoader ranges), repeated. After the first batch the
// fast path reads them, and the snapshot must be the general machine's,
// whole and cut short.
func TestFastAnnotations(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"llama-bf16, generated", written(t, fixture(t, "llama-bf16"), 16<<20, snapgen.Options{})},
		{"plain-trainer-late, annotations repeated", manyAnnotations(t, "plain-trainer-late", 3000)},
	} {
		s, err := snapshot.Decode(bytes.NewReader(c.data), c.name)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Annotations) < 2500 {
			t.Fatalf("%s: %d annotations: want thousands, in batches of 1,000", c.name, len(s.Annotations))
		}
		n := snapshot.FastAnnotsForTest(t, c.data)
		t.Logf("%s: %d annotations, %d batches of them read by the fast path", c.name, len(s.Annotations), n)
		if n < 1 {
			t.Fatalf("%s: %d annotations, none read by the fast path", c.name, len(s.Annotations))
		}
		snapshot.DecodeBothChunksForTest(t, c.name, c.data)
		for _, frac := range []int{50, 95, 99} {
			snapshot.DecodeBothChunksForTest(t, c.name, c.data[:len(c.data)*frac/100])
		}
	}
}

func init() {
	snapshot.SetBenchScanInput(func(t testing.TB) []byte {
		return written(t, fixture(t, "plain-trainer-late"), 8<<20, snapgen.Options{})
	})
}

// hostileSeeds are the hostile generators' shapes, small: a deep stack, many
// devices, wide containers, many distinct stacks, and strings and a list
// that claim far more bytes than the input holds (BINUNICODE8 of 1 TiB,
// BINBYTES8, a FRAME of 2^60).
func hostileSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, v := range []map[string]any{
		snapgen.DeepStack(400), snapgen.DevicesPickle(40), snapgen.Wide("device_traces", 300, false),
		snapgen.Wide("blocks", 300, true), snapgen.Wide("frames", 200, false), snapgen.DistinctStacks(30, 4),
	} {
		var buf bytes.Buffer
		if err := snapgen.Plain(&buf, v); err != nil {
			t.Fatal(err)
		}
		out = append(out, buf.Bytes())
	}
	le := func(op byte, n uint64, rest string) []byte {
		b := []byte{0x80, 4, op, 0, 0, 0, 0, 0, 0, 0, 0}
		for i := range 8 {
			b[3+i] = byte(n >> (8 * i))
		}
		return append(b, rest...)
	}
	return append(out,
		le(0x8d, 1<<40, "abc"), // BINUNICODE8
		le(0x8e, 1<<40, "abc"), // BINBYTES8
		le(0x95, 1<<60, "}."),  // FRAME
	)
}
