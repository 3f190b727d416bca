package attribution

import (
	"fmt"
	"slices"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// TestUserTree: the pruned tree holds the peak's allocated bytes, every
// node's children add up to it, and it respects the node bound.
func TestUserTree(t *testing.T) {
	for _, f := range loadFixtures(t) {
		for _, maxNodes := range []int{5, 300} {
			t.Run(fmt.Sprintf("%s/%d", f.name, maxNodes), func(t *testing.T) {
				d := f.an.Devices[0]
				root := d.UserTree(d.Peak, 0.002, maxNodes)
				if root.Bytes != d.Peak.Allocated {
					t.Errorf("tree root = %d bytes, want allocated at the peak %d", root.Bytes, d.Peak.Allocated)
				}
				frames := 0
				var walk func(n *TreeNode)
				walk = func(n *TreeNode) {
					var sum int64
					for _, c := range n.Children {
						sum += c.Bytes
						if c.Kind == TreeFrame || c.Kind == TreeSite {
							frames++
						}
						walk(c)
					}
					if len(n.Children) > 0 && sum != n.Bytes {
						t.Errorf("node %q: children sum to %d, want %d", n.Name, sum, n.Bytes)
					}
				}
				walk(root)
				if frames > maxNodes {
					t.Errorf("%d frame nodes, want at most %d", frames, maxNodes)
				}
			})
		}
	}
}

// TestSegmentFills: the segments at a moment add up to its reserved,
// allocated, pending-free and free bytes.
func TestSegmentFills(t *testing.T) {
	for _, f := range loadFixtures(t) {
		d := f.an.Devices[0]
		for k, m := range []*Moment{d.Peak, d.End} {
			t.Run(f.name+"/"+m.Label, func(t *testing.T) {
				fills := d.SegmentFills(m, 4)
				var size, alloc, pending, free int64
				for _, s := range append(slices.Clone(fills.Shown), fills.Rest) {
					size, alloc, pending, free = size+s.Size, alloc+s.Allocated, pending+s.PendingFree, free+s.Free
					if s.Allocated+s.PendingFree+s.Free != s.Size {
						t.Errorf("segment %#x: %d + %d + %d ≠ size %d", s.Addr, s.Allocated, s.PendingFree, s.Free, s.Size)
					}
				}
				if len(fills.Shown) > 4 {
					t.Errorf("%d segments shown, want ≤ 4", len(fills.Shown))
				}
				want := [4]int64{m.Reserved, m.Allocated, m.Active - m.Allocated, d.Frag[k].Free}
				if got := [4]int64{size, alloc, pending, free}; got != want {
					t.Errorf("segments sum to reserved, allocated, pending, free = %v, want %v", got, want)
				}
			})
		}
	}
}

func TestDownsampleFloors(t *testing.T) {
	var steps []int
	var floors []int64
	for i := range 1000 {
		steps = append(steps, i)
		floors = append(floors, int64(1000+8*i+(i%7)*3)) // a staircase with noise
	}
	floors[500] = 1 // one deep valley
	gotS, gotF := downsampleFloors(steps, floors, 100)
	if len(gotF) > 110 {
		t.Errorf("downsampleFloors kept %d floors, want about 100", len(gotF))
	}
	if !slices.IsSorted(gotS) {
		t.Errorf("steps out of order: %v", gotS)
	}
	if slices.Min(gotF) != 1 || slices.Max(gotF) != slices.Max(floors) {
		t.Errorf("kept min %d max %d, want 1 and %d", slices.Min(gotF), slices.Max(gotF), slices.Max(floors))
	}
	if s, f := downsampleFloors(steps[:10], floors[:10], 100); len(s) != 10 || f[9] != floors[9] {
		t.Errorf("downsampleFloors of 10 floors = %v, want them all", f)
	}
}

// stepDevice is a device with n steps of forward and backward, events one
// µs apart, the peak in step peak.
func stepDevice(n, peak int) *Device {
	p := &Phases{Source: "harness", PeakPhase: -1}
	var ev []snapshot.Event
	for s := range n {
		si := Step{Step: s}
		for _, name := range []string{"forward", "backward"} {
			i := len(ev)
			ev = append(ev, snapshot.Event{TimeUS: int64(i)})
			if s == peak && name == "backward" {
				p.PeakPhase = len(p.List)
			}
			si.Phases = append(si.Phases, len(p.List))
			p.List = append(p.List, Phase{Step: s, Name: name, First: i, Last: i, StartUS: int64(i), EndUS: int64(i)})
		}
		p.Steps = append(p.Steps, si)
	}
	return &Device{Phases: p, Timeline: &snapshot.Timeline{Events: ev}}
}

func TestStepRows(t *testing.T) {
	d := stepDevice(100, 57)
	rows := d.stepRows(10)
	if len(rows) > 12 || !slices.Contains(rows, 0) || !slices.Contains(rows, 99) || !slices.Contains(rows, 57) || !slices.Contains(rows, -1) {
		t.Errorf("stepRows(10) of 100 steps, peak in 57 = %v; want ≤ 10 steps with the first, the last, 57 and gaps", rows)
	}
	if rows := stepDevice(5, 2).stepRows(10); !slices.Equal(rows, []int{0, 1, 2, 3, 4}) {
		t.Errorf("stepRows(10) of 5 steps = %v, want all", rows)
	}
}

func TestBands(t *testing.T) {
	for _, c := range []struct {
		steps, max, want int
		first            string
	}{
		{3, 100, 6, "step 0 forward"}, // one band per phase
		{30, 40, 30, "step 0"},        // one per step
		{1000, 40, 40, "steps 0–24"},  // runs of steps
		{1001, 40, 39, "steps 0–25"},  // the last run shorter
	} {
		b := stepDevice(c.steps, 0).bands(c.max)
		if len(b) != c.want || b[0].Name != c.first {
			t.Errorf("bands(%d) of %d steps: %d bands, first %q; want %d, first %q", c.max, c.steps, len(b), b[0].Name, c.want, c.first)
		}
		for i := 1; i < len(b); i++ {
			if b[i].StartUS < b[i-1].EndUS {
				t.Errorf("bands(%d) of %d steps: band %d starts at %d before %d ends at %d", c.max, c.steps, i, b[i].StartUS, i-1, b[i-1].EndUS)
			}
		}
	}
}

// TestShades: the one rule that shades phases (the report's bands and
// serve's shades both call it): a phase outside the steps, as setup, is a
// shade of its own when shading per step, and starts a run past that; a
// run names its steps; every phase of in is in exactly one shade, in
// order.
func TestShades(t *testing.T) {
	p := &Phases{}
	p.List = append(p.List, Phase{Step: -1, Name: "setup"})
	for s := range 10 {
		for _, n := range []string{"forward", "backward", "optimizer"} {
			p.List = append(p.List, Phase{Step: s, Name: n})
		}
	}
	p.List = append(p.List, Phase{Step: -1, Name: "eval"})
	all := make([]int, len(p.List))
	for i := range all {
		all[i] = i
	}
	for _, c := range []struct {
		in    []int
		max   int
		names []string
	}{
		{all[1:4], 3, []string{"step 0 forward", "step 0 backward", "step 0 optimizer"}},
		{all, 12, []string{"setup", "step 0", "step 1", "step 2", "step 3", "step 4", "step 5", "step 6", "step 7", "step 8", "step 9", "eval"}},
		{all, 5, []string{"steps 0–1", "steps 2–4", "steps 5–7", "steps 8–9"}},
		{[]int{0, 31}, 1, []string{"setup to eval"}},
		{all[4:31], 4, []string{"steps 1–3", "steps 4–6", "steps 7–9"}},
	} {
		got := p.Shades(c.in, c.max)
		var names []string
		next := 0
		for _, s := range got {
			names = append(names, s.Name)
			if s.First != c.in[next] || s.Last < s.First {
				t.Errorf("Shades(%d phases, %d): shade %q covers %d–%d, want it to start at %d", len(c.in), c.max, s.Name, s.First, s.Last, c.in[next])
			}
			for next < len(c.in) && c.in[next] <= s.Last {
				next++
			}
		}
		if next != len(c.in) || len(got) > c.max {
			t.Errorf("Shades(%d phases, %d): %d shades covering %d phases", len(c.in), c.max, len(got), next)
		}
		if len(c.names) > 0 && !slices.Equal(names, c.names) {
			t.Errorf("Shades(%d phases, %d) = %q, want %q", len(c.in), c.max, names, c.names)
		}
	}
}
