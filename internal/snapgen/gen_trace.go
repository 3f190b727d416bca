package snapgen

import (
	"fmt"
	"math"
	"regexp"
	"strconv"

	"github.com/memscope/memscope/internal/pickle"
	"github.com/memscope/memscope/snapshot"
)

// segments writes the segments list with torch's key order: a segment with
// no stack gets the shared empty list before "blocks", one with a stack
// gets its list after (torch adds symbolized frames last).
func (g *writer) segments() {
	p := g.p
	p.Raw(pickle.EmptyList)
	p.Memoize()
	segs := g.s.Segments
	p.List(len(segs), func(i int) {
		sg := &segs[i]
		p.Raw(pickle.EmptyDict)
		p.Memoize()
		segType := "large"
		if sg.Small {
			segType = "small"
		}
		items := []func(){
			func() { g.item("device", g.int(int64(sg.Device))) },
			func() { g.item("address", g.int(int64(sg.Address))) },
			func() { g.item("total_size", g.int(sg.TotalSize)) },
			func() { g.item("allocated_size", g.int(sg.AllocatedSize)) },
			func() { g.item("active_size", g.int(sg.ActiveSize)) },
			func() { g.item("requested_size", g.int(sg.RequestedSize)) },
			func() { g.item("stream", g.int(sg.Stream)) },
			func() { g.item("segment_type", func() { g.key(segType) }) },
			func() {
				g.item("segment_pool_id", func() {
					p.Int(sg.Pool.A)
					p.Int(sg.Pool.B)
					p.Tuple2()
					p.Memoize()
				})
			},
			func() { g.item("is_expandable", func() { p.Bool(sg.Expandable) }) },
		}
		frames := func() { g.item("frames", func() { g.stack(sg.Stack, true) }) }
		blocks := func() { g.item("blocks", func() { g.blocks(sg.Blocks) }) }
		if sg.Stack == 0 {
			items = append(items, frames, blocks)
		} else {
			items = append(items, blocks, frames)
		}
		p.Dict(len(items), func(i int) { items[i]() })
	})
}

func (g *writer) blocks(blocks []snapshot.Block) {
	p := g.p
	p.Raw(pickle.EmptyList)
	p.Memoize()
	p.List(len(blocks), func(i int) {
		b := &blocks[i]
		p.Raw(pickle.EmptyDict)
		p.Memoize()
		p.Dict(5, func(j int) {
			switch j {
			case 0:
				g.item("address", g.int(int64(b.Address)))
			case 1:
				g.item("size", g.int(b.Size))
			case 2:
				g.item("requested_size", g.int(b.RequestedSize))
			case 3:
				g.item("state", func() { g.key(b.State.String()) })
			case 4:
				g.item("frames", func() { g.stack(b.Stack, true) })
			}
		})
	})
}

// traces writes device_traces with every device's entries repeated reps
// times (the first repetition whole, the others without onceOnly's
// entries) and returns the number of entries written. With variants, an
// entry of repetition r uses variant (r + its block key) mod g.variants.
func (g *writer) traces(reps int) int64 {
	p := g.p
	p.Raw(pickle.EmptyList)
	p.Memoize()
	var total int64
	p.List(len(g.s.Traces), func(d int) {
		tr := g.s.Traces[d]
		once := onceOnly(tr)
		var keys []int
		if g.variants > 1 {
			keys = blockKeys(tr)
		}
		kept := make([]int, 0, len(tr))
		for i := range tr {
			if !once[i] {
				kept = append(kept, i)
			}
		}
		p.Raw(pickle.EmptyList)
		p.Memoize()
		n := len(tr)
		if len(kept) > 0 {
			n += (reps - 1) * len(kept)
		}
		total += int64(n)
		// entry returns repetition and source index of output entry i.
		entry := func(i int) (int, int) {
			if i < len(tr) {
				return 0, i
			}
			j := i - len(tr)
			return 1 + j/len(kept), kept[j%len(kept)]
		}
		p.List(n, func(i int) {
			rep, k := entry(i)
			e := &tr[k]
			var prev snapshot.Action
			if i > 0 {
				_, pk := entry(i - 1)
				prev = tr[pk].Action
			}
			stack := e.Stack
			if g.variants > 1 {
				stack = variant(g.s.Stacks, g.vcache, e.Stack, (rep+keys[k])%g.variants)
			}
			g.event(e, stack, int64(rep)*g.span, sharesTraceback(e.Action, prev))
		})
	})
	return total
}

// sharesTraceback reports whether an entry reuses the frames list of the
// entry before it with the same stack, as measured in 2.11 captures:
// free_completed shares free_requested's traceback, and an alloc that
// caused a segment_alloc (or segment_map) shares that one's; every other
// entry has its own.
func sharesTraceback(a, prev snapshot.Action) bool {
	switch a {
	case snapshot.ActionFreeCompleted:
		return true
	case snapshot.ActionAlloc:
		return prev == snapshot.ActionSegmentAlloc || prev == snapshot.ActionSegmentMap
	}
	return false
}

func (g *writer) event(e *snapshot.Event, stack snapshot.StackID, shift int64, share bool) {
	p := g.p
	p.Raw(pickle.EmptyDict)
	p.Memoize()
	n := 7
	if stack != 0 {
		n++
	}
	p.Dict(n, func(j int) {
		switch j {
		case 0:
			g.item("action", func() { g.key(e.Action.String()) })
		case 1:
			if e.Action == snapshot.ActionOOM {
				g.item("device_free", g.int(int64(e.Addr)))
			} else {
				g.item("addr", g.int(int64(e.Addr)))
			}
		case 2:
			g.item("size", g.int(e.Size))
		case 3:
			g.item("stream", g.int(e.Stream))
		case 4:
			g.item("time_us", g.int(e.TimeUS+shift))
		case 5:
			g.item("compile_context", func() { g.fresh(g.s.Strings.Get(e.CompileContext)) })
		case 6:
			g.item("user_metadata", func() { g.fresh(g.s.Strings.Get(e.UserMetadata)) })
		case 7:
			g.item("frames", func() { g.stack(stack, share) })
		}
	})
}

var stepName = regexp.MustCompile(`^memscope/step/(-?\d+)/(\w+)$`)

// annotations writes external_annotations, repeated like the traces.
// torch makes new "stage" and "name" key strings for every entry. The
// capture harness's step ranges ("memscope/step/N/PHASE") are renumbered in
// each repetition, so the generated run has as many steps as it repeats.
func (g *writer) annotations(reps int) {
	p := g.p
	p.Raw(pickle.EmptyList)
	p.Memoize()
	as := g.s.Annotations
	lo, hi := math.MaxInt, math.MinInt
	for _, a := range as {
		if m := stepName.FindStringSubmatch(a.Name); m != nil {
			n, _ := strconv.Atoi(m[1])
			lo, hi = min(lo, n), max(hi, n)
		}
	}
	name := func(a *snapshot.Annotation, rep int) string {
		m := stepName.FindStringSubmatch(a.Name)
		if m == nil || rep == 0 {
			return a.Name
		}
		n, _ := strconv.Atoi(m[1])
		return fmt.Sprintf("memscope/step/%d/%s", n+rep*(hi-lo+1), m[2])
	}
	p.List(len(as)*reps, func(i int) {
		a := &as[i%len(as)]
		p.Raw(pickle.EmptyDict)
		p.Memoize()
		stage := "END"
		if a.Start {
			stage = "START"
		}
		p.Dict(4, func(j int) {
			switch j {
			case 0:
				g.fresh("stage")
				g.fresh(stage)
			case 1:
				g.fresh("name")
				g.fresh(name(a, i/len(as)))
			case 2:
				g.item("device", g.int(int64(a.Device)))
			case 3:
				g.item("time_us", g.int(a.TimeUS+int64(i/len(as))*g.span))
			}
		})
	})
}
