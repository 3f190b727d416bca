package snapgen

import (
	"bytes"
	"testing"

	"github.com/memscope/memscope/snapshot"
	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// TestWrite generates a file from the synthetic snapshot and checks that
// it decodes to the source's segments and its trace repeated, with time
// shifted forward and frames shared through the memo.
func TestWrite(t *testing.T) {
	src, err := snapshot.Open("../../snapshot/testdata/synthetic.pickle")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := Write(&buf, src, 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes != int64(buf.Len()) || st.Bytes < 2<<20 || st.Repeats < 2 {
		t.Fatalf("Write() = %+v for %d bytes, want ≥ 2 MiB and ≥ 2 repeats", st, buf.Len())
	}
	got, err := snapshot.Decode(bytes.NewReader(buf.Bytes()), "gen")
	if err != nil {
		t.Fatal(err)
	}
	// The first repetition whole, the others without the frees of blocks
	// live before recording and the allocations of blocks live at the end.
	orig := src.Traces[0]
	once := onceOnly(orig)
	var src1 []int // source index of each generated entry
	for r := range st.Repeats {
		for i := range orig {
			if r == 0 || !once[i] {
				src1 = append(src1, i)
			}
		}
	}
	if n := len(got.Traces[0]); n != len(src1) || int64(n) != st.Events {
		t.Fatalf("generated trace has %d entries (stats %d), want %d", n, st.Events, len(src1))
	}
	span := orig[len(orig)-1].TimeUS - orig[0].TimeUS + 1
	rep := 0
	for i, e := range got.Traces[0] {
		if i > 0 && src1[i] <= src1[i-1] {
			rep++
		}
		want := orig[src1[i]]
		want.TimeUS += int64(rep) * span
		if got.Strings.Get(e.CompileContext) != src.Strings.Get(want.CompileContext) ||
			got.Strings.Get(e.UserMetadata) != src.Strings.Get(want.UserMetadata) {
			t.Fatalf("entry %d strings differ", i)
		}
		// Stacks are compared by frames below; string IDs above.
		e.Stack, e.CompileContext, e.UserMetadata = 0, 0, 0
		want.Stack, want.CompileContext, want.UserMetadata = 0, 0, 0
		if e != want {
			t.Fatalf("entry %d = %+v, want %+v", i, e, want)
		}
	}
	for i := range orig {
		g, w := got.Traces[0][i].Stack, orig[i].Stack
		if len(got.Stacks.Stack(g)) != len(src.Stacks.Stack(w)) {
			t.Fatalf("entry %d stack depth = %d, want %d", i, len(got.Stacks.Stack(g)), len(src.Stacks.Stack(w)))
		}
		for j, f := range got.Stacks.Stack(g) {
			if *got.Stacks.Frame(f) != *src.Stacks.Frame(src.Stacks.Stack(w)[j]) {
				t.Fatalf("entry %d frame %d differs", i, j)
			}
		}
	}
	if len(got.Segments) != len(src.Segments) || len(got.Segments[0].Blocks) != len(src.Segments[0].Blocks) {
		t.Errorf("segments differ: %d vs %d", len(got.Segments), len(src.Segments))
	}
	if len(got.Stacks.Frames) != len(src.Stacks.Frames) {
		t.Errorf("generated file has %d distinct frames, want %d", len(got.Stacks.Frames), len(src.Stacks.Frames))
	}

	// An independent unpickler reads the same file.
	u := pickle.NewUnpickler(bytes.NewReader(buf.Bytes()))
	tree, err := u.Load()
	if err != nil {
		t.Fatalf("gopickle: %v", err)
	}
	traces, _ := tree.(*types.Dict).Get("device_traces")
	if n := (*traces.(*types.List))[0].(*types.List).Len(); n != len(got.Traces[0]) {
		t.Errorf("gopickle reads %d entries, want %d", n, len(got.Traces[0]))
	}
}

func TestSettingsOrder(t *testing.T) {
	got := settingsOrder(map[string]any{"roundup_power2_divisions": 0, "16": 0, "2": 0, "max_split_size": 0, "zz": 0, "PYTORCH_CUDA_ALLOC_CONF": 0})
	want := []string{"PYTORCH_CUDA_ALLOC_CONF", "max_split_size", "roundup_power2_divisions", "2", "16", "zz"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("settingsOrder() = %v, want %v", got, want)
		}
	}
}

// TestDeep: the generated snapshot replays without warnings to its own end
// state, every block live at the end.
func TestDeep(t *testing.T) {
	s := Deep(DeepOptions{Blocks: 1001, Variants: 3})
	tl := snapshot.Replay(s, 0, snapshot.ReplayOptions{})
	if len(tl.Warnings) > 0 {
		t.Fatalf("replay warnings: %v", tl.Warnings)
	}
	if got, want := tl.End.Allocated, int64(1001*2<<20); got != want || tl.PeakAllocated.Bytes != want {
		t.Fatalf("allocated at end, peak = %d, %d; want %d", got, tl.PeakAllocated.Bytes, want)
	}
	if got := len(s.Stacks.Stack(s.Traces[0][1].Stack)); got < 25 {
		t.Fatalf("stack depth %d, want deep stacks", got)
	}
}
