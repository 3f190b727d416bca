package snapgen

import (
	"fmt"
	"slices"

	"github.com/memscope/memscope/snapshot"
)

// Options shape a generated snapshot beyond repeating its source: each
// field pushes one dimension of the input (the zero value changes
// nothing), so benchmarks can vary one dimension at a time.
type Options struct {
	// Stacks makes every traceback come in this many variants, which
	// differ from the source's by the outermost frame (a user's line,
	// <repo>/bench/variant_N.py), so the innermost user frame, the site,
	// is the same. Each block gets one (its alloc and frees, and the
	// segment_alloc it caused, share it), (its alloc's entry index +
	// repetition) mod Stacks: distinct stacks up to Stacks × the source's,
	// at any size.
	Stacks int
	// Frames adds this many library frames (nn.Module's _call_impl and
	// _wrapped_call_impl, as a deeper model has) just inside the outermost
	// frame of every traceback: frames per block and per entry.
	Frames int
	// Nesting makes every third added frame a module's forward of its own
	// for each of the source's call paths and each of its Stacks variants
	// (a folded torch file, <site-packages>/torch/nn/modules/bench_modules.py
	// or bench_modules_V.py, a line per path and level), as a larger
	// model's nesting is: its first steps then
	// defines hundreds to thousands of frames, each where it is first
	// used, so that the first entries of the trace carry most of the frame
	// definitions, as in real captures. Sites are unchanged (torch frames
	// are folded).
	Nesting bool
	// Segments adds this many segments to the end state, held from before
	// recording, each with Blocks active blocks of 64 KiB (1 without
	// Blocks) and the rest of its 2 MiB multiple inactive.
	Segments, Blocks int
	// Expandable makes every segment expandable, as
	// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True does: is_expandable
	// true, and the trace maps and unmaps (segment_map, segment_unmap)
	// where it allocated and freed segments.
	Expandable bool
	// Devices copies the trace, segments and annotations of the first
	// device to this many devices (1 or 0: as the source has them).
	Devices int
	// Repeats, when above 0, writes each trace exactly this many times,
	// whatever minBytes says: the other dimensions then vary alone.
	Repeats int
}

// Realistic returns the option values gensnap -realistic uses, by flag
// name: a larger model's run than the fixtures' small ones, with more code
// paths (stacks), deeper module nesting (frames) and more segments and
// blocks held across steps (parameters and optimizer state in many
// allocations). Expandable segments are left to -expandable, or to a
// source captured with them (fixtures/expandable).
func Realistic() map[string]int {
	return map[string]int{"stacks": 64, "frames": 12, "segments": 256, "blocks": 16}
}

// nestingFile holds Options.Nesting's modules (their variants: bench_modules_V.py).
const nestingFile = "<site-packages>/torch/nn/modules/bench_modules.py"

// RealisticOptions returns Realistic's values as Options, with Nesting.
func RealisticOptions() Options {
	r := Realistic()
	return Options{Stacks: r["stacks"], Frames: r["frames"], Segments: r["segments"], Blocks: r["blocks"], Nesting: true}
}

func (o Options) String() string {
	return fmt.Sprintf("stacks=%d frames=%d nesting=%v segments=%d blocks=%d expandable=%v devices=%d",
		o.Stacks, o.Frames, o.Nesting, o.Segments, o.Blocks, o.Expandable, o.Devices)
}

// shape returns a copy of s with opt applied (variants aside: the writer
// makes those per repetition). The copy owns its stack table, so the writer
// may add variant stacks to it.
func shape(s *snapshot.Snapshot, opt Options) *snapshot.Snapshot {
	out := *s
	st := snapshot.NewStacks()
	var extra []snapshot.FrameID
	for k := range opt.Frames {
		f := snapshot.Frame{Filename: "<site-packages>/torch/nn/modules/module.py", Line: 1790, Name: "_call_impl"}
		if k%2 == 1 {
			f.Line, f.Name = 1779, "_wrapped_call_impl"
		}
		extra = append(extra, st.InternFrame(f))
	}
	remap := make([]snapshot.StackID, s.Stacks.Len())
	for id := range remap {
		old := s.Stacks.Stack(snapshot.StackID(id))
		fs := make([]snapshot.FrameID, 0, len(old)+len(extra))
		for i, f := range old {
			if i == len(old)-1 {
				for k, e := range extra {
					if opt.Nesting && k%3 == 0 {
						// Innermost first: forward, then _call_impl and
						// _wrapped_call_impl, one module level.
						e = st.InternFrame(snapshot.Frame{Filename: nestingFile,
							Line: int64(1 + id*opt.Frames + k), Name: "forward"})
					}
					fs = append(fs, e)
				}
			}
			fs = append(fs, st.InternFrame(*s.Stacks.Frame(f)))
		}
		remap[id] = st.InternStack(fs)
	}
	out.Stacks = st

	act := func(a snapshot.Action) snapshot.Action {
		switch {
		case !opt.Expandable:
		case a == snapshot.ActionSegmentAlloc:
			return snapshot.ActionSegmentMap
		case a == snapshot.ActionSegmentFree:
			return snapshot.ActionSegmentUnmap
		}
		return a
	}
	out.Traces = make([][]snapshot.Event, len(s.Traces))
	for d, tr := range s.Traces {
		out.Traces[d] = make([]snapshot.Event, len(tr))
		for i, e := range tr {
			e.Stack = remap[e.Stack]
			e.Action = act(e.Action)
			out.Traces[d][i] = e
		}
	}
	out.Segments = make([]snapshot.Segment, len(s.Segments))
	var top uint64
	for i, sg := range s.Segments {
		sg.Stack = remap[sg.Stack]
		sg.Expandable = sg.Expandable || opt.Expandable
		sg.Blocks = slices.Clone(sg.Blocks)
		for j := range sg.Blocks {
			sg.Blocks[j].Stack = remap[sg.Blocks[j].Stack]
		}
		out.Segments[i] = sg
		top = max(top, sg.End())
	}
	for _, tr := range out.Traces {
		for i := range tr {
			top = max(top, tr[i].Addr+uint64(max(tr[i].Size, 0)))
		}
	}
	out.Segments = append(out.Segments, extraSegments(top, opt, usedStacks(&out))...)
	if opt.Devices > 1 && len(out.Traces) > 0 {
		var segs []snapshot.Segment
		for d := range opt.Devices {
			for _, sg := range out.Segments {
				if sg.Device == 0 {
					sg.Device = d
					segs = append(segs, sg)
				}
			}
		}
		out.Segments = segs
		traces := make([][]snapshot.Event, opt.Devices)
		for d := range traces {
			traces[d] = out.Traces[0]
		}
		out.Traces = traces
		var ann []snapshot.Annotation
		for _, a := range s.Annotations {
			if a.Device != 0 {
				continue
			}
			for d := range opt.Devices {
				c := a
				c.Device = d
				ann = append(ann, c)
			}
		}
		out.Annotations = ann
	}
	return &out
}

// usedStacks lists the non-empty stacks the trace's allocations use, in
// order of first use.
func usedStacks(s *snapshot.Snapshot) []snapshot.StackID {
	seen := map[snapshot.StackID]bool{}
	var out []snapshot.StackID
	for _, tr := range s.Traces {
		for i := range tr {
			if e := &tr[i]; e.Action == snapshot.ActionAlloc && e.Stack != 0 && !seen[e.Stack] {
				seen[e.Stack] = true
				out = append(out, e.Stack)
			}
		}
	}
	return out
}

// extraSegments makes opt.Segments segments of device 0 above address
// top, each holding opt.Blocks (at least 1) active blocks of 64 KiB under
// the trace's stacks in turn, then one inactive block to the next 2 MiB.
func extraSegments(top uint64, opt Options, stacks []snapshot.StackID) []snapshot.Segment {
	if opt.Segments <= 0 {
		return nil
	}
	const block, page = 64 << 10, 2 << 20
	nb := max(opt.Blocks, 1)
	size := (int64(nb)*block + page - 1) / page * page
	addr := (top + 1<<30 + page - 1) / page * page
	out := make([]snapshot.Segment, opt.Segments)
	k := 0
	for i := range out {
		sg := snapshot.Segment{Address: addr, TotalSize: size, Small: size == page, Expandable: opt.Expandable}
		for j := range nb {
			b := snapshot.Block{Address: addr + uint64(j)*block, Size: block, RequestedSize: block, State: snapshot.BlockActiveAllocated}
			if len(stacks) > 0 {
				b.Stack = stacks[k%len(stacks)]
				k++
			}
			sg.Blocks = append(sg.Blocks, b)
		}
		if rest := size - int64(nb)*block; rest > 0 {
			sg.Blocks = append(sg.Blocks, snapshot.Block{Address: addr + uint64(nb)*block, Size: rest, State: snapshot.BlockInactive})
		}
		sg.AllocatedSize = int64(nb) * block
		sg.ActiveSize, sg.RequestedSize = sg.AllocatedSize, sg.AllocatedSize
		out[i] = sg
		addr += uint64(size)
	}
	return out
}

// variant returns stack id's variant v (0: id itself): its outermost frame
// replaced by a line of <repo>/bench/variant_v.py. The stack table grows.
func variant(st *snapshot.Stacks, cache map[[2]int]snapshot.StackID, id snapshot.StackID, v int) snapshot.StackID {
	if v == 0 || id == 0 {
		return id
	}
	k := [2]int{int(id), v}
	if n, ok := cache[k]; ok {
		return n
	}
	fs := slices.Clone(st.Stack(id))
	for i, f := range fs[:len(fs)-1] {
		// Nesting's modules come in variants too: a variant's first use
		// defines them, as a larger model's first step defines its frames.
		if fr := *st.Frame(f); fr.Filename == nestingFile {
			fr.Filename = fmt.Sprintf("<site-packages>/torch/nn/modules/bench_modules_%d.py", v)
			fs[i] = st.InternFrame(fr)
		}
	}
	last := *st.Frame(fs[len(fs)-1])
	fs[len(fs)-1] = st.InternFrame(snapshot.Frame{Filename: fmt.Sprintf("<repo>/bench/variant_%d.py", v), Line: last.Line, Name: last.Name})
	n := st.InternStack(fs)
	cache[k] = n
	return n
}

// onceOnly marks the entries of a trace that only the first repetition
// may hold: the frees of blocks live before the trace began (a late start
// frees some), the allocations of blocks still live at its end, and every
// other block entry at their addresses. A later repetition starts where
// the first ended, so those blocks are already freed, or still allocated.
func onceOnly(tr []snapshot.Event) []bool {
	once := make([]bool, len(tr))
	live := map[uint64][2]int{} // addr → its alloc entry and free_requested (-1: none yet)
	for i := range tr {
		e := &tr[i]
		switch e.Action {
		case snapshot.ActionAlloc:
			live[e.Addr] = [2]int{i, -1}
		case snapshot.ActionFreeRequested:
			if l, ok := live[e.Addr]; ok {
				l[1] = i
				live[e.Addr] = l
			} else {
				once[i] = true
			}
		case snapshot.ActionFreeCompleted:
			if _, ok := live[e.Addr]; !ok {
				once[i] = true
			}
			delete(live, e.Addr)
		}
	}
	for _, l := range live {
		once[l[0]] = true
		if l[1] >= 0 {
			once[l[1]] = true
		}
	}
	// The other blocks at those addresses go too: in a later repetition the
	// address is still taken (or was never free when the source used it).
	busy := map[uint64]bool{}
	for i := range tr {
		if once[i] {
			busy[tr[i].Addr] = true
		}
	}
	for i := range tr {
		switch tr[i].Action {
		case snapshot.ActionAlloc, snapshot.ActionFreeRequested, snapshot.ActionFreeCompleted:
			once[i] = once[i] || busy[tr[i].Addr]
		}
	}
	return once
}

// blockKeys returns, per entry of a trace, the number that picks its stack
// variant: for an alloc its own index, for a free that of the alloc it
// frees, for a segment_alloc or segment_map that of the alloc after it
// (torch gives them one traceback), else the entry's own index.
func blockKeys(tr []snapshot.Event) []int {
	keys := make([]int, len(tr))
	allocAt := map[uint64]int{}
	for i := range tr {
		keys[i] = i
		e := &tr[i]
		switch e.Action {
		case snapshot.ActionAlloc:
			allocAt[e.Addr] = i
		case snapshot.ActionFreeRequested, snapshot.ActionFreeCompleted:
			if a, ok := allocAt[e.Addr]; ok {
				keys[i] = a
			}
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			if i+1 < len(tr) && tr[i+1].Action == snapshot.ActionAlloc {
				keys[i] = i + 1
			}
		}
	}
	return keys
}
