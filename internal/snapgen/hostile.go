package snapgen

import (
	"compress/gzip"
	"io"
	"math"

	"github.com/memscope/memscope/internal/pickle"
)

// This file writes the shapes a hostile or broken writer makes cheaply and
// a real snapshot never holds, for the tests that hold the decoder and
// every command to a memory budget: a stack of millions of frames, a
// hundred thousand devices, containers of millions of empty items. Each is
// a few hundred KB gzipped and decodes, unbounded, to gigabytes.

// frameRefs is a list of n references to one memoized frame dict.
func frameRefs(n int) Raw { return frameRefsThen(n, nil) }

// frameRefsThen is frameRefs with the frame outer appended last (the
// outermost), when not nil.
func frameRefsThen(n int, outer map[string]any) Raw {
	return func(p *pickle.Writer) {
		p.Raw(pickle.EmptyList)
		p.Memoize()
		var first uint32 // the frame dict's memo entry
		p.List(n, func(i int) {
			if i == 0 {
				p.Raw(pickle.EmptyDict)
				first = p.Memoize()
				p.Raw(pickle.Mark)
				for _, kv := range [][2]any{{"name", "recurse"}, {"filename", "deep.py"}, {"line", 7}} {
					p.String(kv[0].(string))
					p.Memoize()
					switch v := kv[1].(type) {
					case string:
						p.String(v)
						p.Memoize()
					case int:
						p.Int(int64(v))
					}
				}
				p.Raw(pickle.SetItems)
				return
			}
			p.Get(first)
		})
		if outer != nil {
			g := &writer{p: p, shared: map[string]uint32{}, empty: math.MaxUint32}
			_ = g.value(outer)
			p.Raw(pickle.Append)
		}
	}
}

// DistinctStacks is a snapshot of n blocks alive, each allocated with its
// own stack of depth frames: depth−1 references to one frame under a
// distinct outermost frame, so that no two stacks share a prefix from the
// root: n × depth nodes in a call tree.
func DistinctStacks(n, depth int) map[string]any {
	blocks := make([]map[string]any, n)
	var events []any
	for i := range blocks {
		blocks[i] = Blk(512, 512, "active_allocated")
	}
	seg := Seg(1<<30, blocks...)
	for i, b := range seg["blocks"].([]any) {
		b := b.(map[string]any)
		b["frames"] = frameRefsThen(depth-1, Frame("main", "train.py", i+1))
		e := Ev("alloc", b["address"].(int64), 512, int64(i+2))
		e["frames"] = frameRefsThen(depth-1, Frame("main", "train.py", i+1))
		events = append(events, e)
	}
	tr := append([]any{Ev("segment_alloc", 1<<30, seg["total_size"].(int64), 1)}, events...)
	return map[string]any{"segments": []any{seg}, "device_traces": []any{tr}}
}

// DeepStack is a snapshot of one segment whose one block was allocated
// with a stack of frames frames: one trace entry (and the block) refer n
// times to one memoized frame.
func DeepStack(frames int) map[string]any {
	const addr, size = 1 << 30, 2 << 20
	seg := Seg(addr, Blk(size, size, "active_allocated"))
	seg["blocks"].([]any)[0].(map[string]any)["frames"] = frameRefs(frames)
	alloc := Ev("alloc", addr, size, 2)
	alloc["frames"] = frameRefs(frames)
	return map[string]any{"segments": []any{seg},
		"device_traces": []any{[]any{Ev("segment_alloc", addr, size, 1), alloc}}}
}

// DevicesPickle is a snapshot of n devices, each with one segment and its
// allocation in the trace.
func DevicesPickle(n int) map[string]any {
	segs := make([]any, n)
	traces := make([]any, n)
	for d := range n {
		addr := int64(1<<30 + d<<21)
		seg := Seg(addr, Blk(2<<20, 2<<20, "active_allocated"))
		seg["device"] = d
		segs[d] = seg
		traces[d] = []any{Ev("segment_alloc", addr, 2<<20, 1), Ev("alloc", addr, 2<<20, 2)}
	}
	return map[string]any{"segments": segs, "device_traces": traces}
}

// Wide is a snapshot whose key (one of the places a decoder keeps
// containers: "device_traces" entries, a block's "frames", a segment's
// "blocks", an unknown top-level key) holds n empty dicts or, with lists,
// n empty lists.
func Wide(key string, n int, lists bool) map[string]any {
	empties := Raw(func(p *pickle.Writer) {
		p.Raw(pickle.EmptyList)
		p.Memoize()
		p.List(n, func(int) {
			if lists {
				p.Raw(pickle.EmptyList)
			} else {
				p.Raw(pickle.EmptyDict)
			}
		})
	})
	seg := Seg(1<<30, Blk(2<<20, 2<<20, "active_allocated"))
	root := map[string]any{"segments": []any{seg}, "device_traces": []any{[]any{Ev("alloc", 1<<30, 2<<20, 1)}}}
	switch key {
	case "device_traces":
		root["device_traces"] = []any{empties}
	case "frames":
		seg["blocks"].([]any)[0].(map[string]any)["frames"] = empties
	case "blocks":
		seg["blocks"] = empties
	default:
		root[key] = empties
	}
	return root
}

// Gzip writes v (as Plain would) gzipped to w.
func Gzip(w io.Writer, v any) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	if err := Plain(zw, v); err != nil {
		return err
	}
	return zw.Close()
}
