package snapgen

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/snapshot"
)

// generate writes reps repetitions of the fixture shaped by opt and
// decodes the result.
func generate(t *testing.T, fixture string, reps int, opt Options) (src, got *snapshot.Snapshot) {
	t.Helper()
	src, err := snapshot.Open("../../fixtures/" + fixture + "/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := write(&buf, shape(src, opt), reps, max(opt.Stacks, 1)); err != nil {
		t.Fatal(err)
	}
	got, err = snapshot.Decode(&buf, "gen.pickle")
	if err != nil {
		t.Fatal(err)
	}
	return src, got
}

// replayClean replays every device and fails on any warning but a late
// start (the fixtures' recordings begin after the model was built).
func replayClean(t *testing.T, s *snapshot.Snapshot) {
	t.Helper()
	for d := range s.Traces {
		for _, w := range snapshot.Replay(s, d, snapshot.ReplayOptions{}).Warnings {
			if w.Kind != snapshot.WarnLateStart {
				t.Errorf("device %d: replay warning %s: %s", d, w.Kind, w.Message)
			}
		}
	}
}

func eventStacks(s *snapshot.Snapshot, d int) map[snapshot.StackID]bool {
	out := map[snapshot.StackID]bool{}
	for _, e := range s.Traces[d] {
		if e.Stack != 0 {
			out[e.Stack] = true
		}
	}
	return out
}

// TestOptions: each option changes its dimension by what it says and the
// result still replays to its own end state.
func TestOptions(t *testing.T) {
	const reps = 3
	for _, fixture := range []string{"llama-bf16", "plain-trainer-late"} {
		t.Run(fixture+"/none", func(t *testing.T) {
			_, got := generate(t, fixture, reps, Options{})
			replayClean(t, got)
		})
		t.Run(fixture+"/stacks", func(t *testing.T) {
			const variants = 50
			src, got := generate(t, fixture, 1, Options{Stacks: variants})
			replayClean(t, got)
			// Every stack is a source stack with its outermost frame moved
			// to a variant file; the number per source stack is bounded by
			// the variants and by its blocks.
			base := map[snapshot.StackID]map[snapshot.StackID]bool{}
			for i, e := range got.Traces[0] {
				w := src.Traces[0][i].Stack
				if w == 0 {
					continue
				}
				gs, ws := got.Stacks.Stack(e.Stack), src.Stacks.Stack(w)
				if len(gs) != len(ws) {
					t.Fatalf("entry %d: %d frames, want %d", i, len(gs), len(ws))
				}
				for j := range len(ws) - 1 {
					if *got.Stacks.Frame(gs[j]) != *src.Stacks.Frame(ws[j]) {
						t.Fatalf("entry %d: frame %d differs from the source's", i, j)
					}
				}
				if base[w] == nil {
					base[w] = map[snapshot.StackID]bool{}
				}
				base[w][e.Stack] = true
			}
			n, most := 0, 0
			for _, vs := range base {
				n += len(vs)
				most = max(most, len(vs))
			}
			if most > variants || most < variants/2 || n < 2*len(base) {
				t.Errorf("%d distinct stacks from %d source stacks, at most %d variants of one; want %d to %d of the busiest and more than twice the source's",
					n, len(base), most, variants/2, variants)
			}
			// A block's alloc and frees share their variant.
			at := map[uint64]snapshot.StackID{}
			for _, e := range got.Traces[0] {
				switch e.Action {
				case snapshot.ActionAlloc:
					at[e.Addr] = e.Stack
				case snapshot.ActionFreeRequested:
					if s, ok := at[e.Addr]; ok && len(got.Stacks.Stack(s)) > 0 && len(got.Stacks.Stack(e.Stack)) > 0 {
						fa, ff := got.Stacks.Stack(s), got.Stacks.Stack(e.Stack)
						if got.Stacks.Frame(fa[len(fa)-1]).Filename != got.Stacks.Frame(ff[len(ff)-1]).Filename {
							t.Fatalf("block at %#x: alloc and free_requested have different variants", e.Addr)
						}
					}
				}
			}
		})
		t.Run(fixture+"/frames", func(t *testing.T) {
			const extra = 40
			src, got := generate(t, fixture, reps, Options{Frames: extra})
			replayClean(t, got)
			for i, e := range got.Traces[0][:len(src.Traces[0])] {
				w := len(src.Stacks.Stack(src.Traces[0][i].Stack))
				if w > 0 {
					w += extra
				}
				if n := len(got.Stacks.Stack(e.Stack)); n != w {
					t.Fatalf("entry %d has %d frames, want %d", i, n, w)
				}
			}
		})
		t.Run(fixture+"/segments", func(t *testing.T) {
			src, got := generate(t, fixture, reps, Options{Segments: 1000, Blocks: 40})
			replayClean(t, got)
			blocks := func(s *snapshot.Snapshot) (n int) {
				for _, sg := range s.Segments {
					n += len(sg.Blocks)
				}
				return n
			}
			// 40 blocks of 64 KiB and the rest of 4 MiB inactive.
			if len(got.Segments) != len(src.Segments)+1000 || blocks(got) != blocks(src)+1000*41 {
				t.Errorf("%d segments, %d blocks; want %d, %d", len(got.Segments), blocks(got), len(src.Segments)+1000, blocks(src)+1000*41)
			}
		})
		t.Run(fixture+"/expandable", func(t *testing.T) {
			src, got := generate(t, fixture, reps, Options{Expandable: true})
			replayClean(t, got)
			for _, sg := range got.Segments {
				if !sg.Expandable {
					t.Fatalf("segment at %#x not expandable", sg.Address)
				}
			}
			count := func(s *snapshot.Snapshot, acts ...snapshot.Action) (n int) {
				for _, e := range s.Traces[0] {
					for _, a := range acts {
						if e.Action == a {
							n++
						}
					}
				}
				return n
			}
			if n := count(got, snapshot.ActionSegmentAlloc, snapshot.ActionSegmentFree); n != 0 {
				t.Errorf("%d segment_alloc/segment_free entries, want none", n)
			}
			if n, w := count(got, snapshot.ActionSegmentMap), count(src, snapshot.ActionSegmentAlloc); n != w*reps {
				t.Errorf("%d segment_map entries, want %d", n, w*reps)
			}
		})
		t.Run(fixture+"/devices", func(t *testing.T) {
			_, got := generate(t, fixture, reps, Options{Devices: 3})
			replayClean(t, got)
			an := attribution.Analyze(got, attribution.Options{Device: -1})
			if len(an.Devices) != 3 {
				t.Fatalf("%d devices analysed, want 3", len(an.Devices))
			}
			for _, d := range an.Devices {
				if n := len(d.Phases.Steps); n != len(an.Devices[0].Phases.Steps) || d.Phases.Source != an.Devices[0].Phases.Source {
					t.Errorf("device %d: %d steps from %s, want %d from %s", d.Device, n, d.Phases.Source,
						len(an.Devices[0].Phases.Steps), an.Devices[0].Phases.Source)
				}
			}
		})
	}
}

// TestStepsRepeat: a snapshot generated from a capture made without the
// harness (the HF Trainer's, six Optimizer.step ranges) has six steps per
// repetition, found from torch's own annotations; one made with the
// harness has its steps renumbered, three per repetition.
func TestStepsRepeat(t *testing.T) {
	for _, tc := range []struct {
		fixture, source string
		perRep          int
	}{
		{"plain-trainer-late", "optimizer", 6},
		{"llama-bf16", "harness", 3},
	} {
		for _, reps := range []int{1, 7} {
			t.Run(fmt.Sprintf("%s/%d", tc.fixture, reps), func(t *testing.T) {
				_, got := generate(t, tc.fixture, reps, Options{})
				d := attribution.Analyze(got, attribution.Options{Device: -1}).Devices[0]
				if n, want := len(d.Phases.Steps), reps*tc.perRep; n != want || d.Phases.Source != tc.source {
					t.Errorf("%d steps from %s, want %d from %s", n, d.Phases.Source, want, tc.source)
				}
				opt := 0
				for _, a := range got.Annotations {
					if a.Start && a.Name == "Optimizer.step#AdamW.step" {
						opt++
					}
				}
				if want := reps * 6; tc.fixture == "plain-trainer-late" && opt != want {
					t.Errorf("%d Optimizer.step ranges, want %d", opt, want)
				}
			})
		}
	}
}
