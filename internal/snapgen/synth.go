package snapgen

import (
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/memscope/memscope/internal/pickle"
	"github.com/memscope/memscope/snapshot"
)

// This file builds small snapshots by hand for tests: the dicts and lists
// torch writes, as plain Go values, pickled with Plain and decoded like any
// file. Shapes torch never writes (negative sizes, missing keys, settings
// of builds not yet released) are as easy to build as the real ones.

// Tuple is a Python tuple for Plain (segment_pool_id is one).
type Tuple []any

// Raw is a value Plain writes by calling it on the pickle writer: shapes no
// map can spell cheaply (a list of 10^7 references to one memoized frame).
type Raw func(p *pickle.Writer)

// Plain writes v as a protocol-4 pickle. v is built of map[string]any
// (keys in torch's allocator_settings order, then numerically, then by
// name), []any, []map[string]any, Tuple, Raw, int, int64, float64, string,
// bool and nil.
func Plain(w io.Writer, v any) error {
	g := &writer{p: pickle.NewWriter(w, 4), shared: map[string]uint32{}, empty: math.MaxUint32}
	if err := g.value(v); err != nil {
		return err
	}
	return g.p.Stop()
}

func (g *writer) value(v any) error {
	p := g.p
	var err error
	each := func(n int, item func(i int) error) {
		p.List(n, func(i int) {
			if err == nil {
				err = item(i)
			}
		})
	}
	switch v := v.(type) {
	case nil, bool, int64, float64, string:
		g.plain(v)
	case int:
		p.Int(int64(v))
	case Raw:
		v(p)
	case []any:
		p.Raw(pickle.EmptyList)
		p.Memoize()
		each(len(v), func(i int) error { return g.value(v[i]) })
	case []map[string]any:
		p.Raw(pickle.EmptyList)
		p.Memoize()
		each(len(v), func(i int) error { return g.value(v[i]) })
	case Tuple:
		if len(v) != 2 {
			return fmt.Errorf("snapgen: a %d-tuple; Plain writes pairs only", len(v))
		}
		for _, x := range v {
			if err := g.value(x); err != nil {
				return err
			}
		}
		p.Tuple2()
		p.Memoize()
	case map[string]any:
		p.Raw(pickle.EmptyDict)
		p.Memoize()
		keys := settingsOrder(v)
		p.Dict(len(keys), func(i int) {
			if err == nil {
				g.key(keys[i])
				err = g.value(v[keys[i]])
			}
		})
	default:
		return fmt.Errorf("snapgen: cannot pickle %T", v)
	}
	return err
}

// Synth is a hand-built snapshot. A nil Traces leaves device_traces out (a
// state-only dump of segments); an empty inner list is a device with no
// recorded entries.
type Synth struct {
	Segments    []map[string]any
	Traces      [][]map[string]any
	Settings    map[string]any
	Annotations []map[string]any
	Extra       map[string]any // other top-level keys
}

// Decode pickles s and decodes it as the file name.
func (s *Synth) Decode(name string) (*snapshot.Snapshot, error) {
	top := map[string]any{"segments": s.Segments}
	if s.Segments == nil {
		top["segments"] = []any{}
	}
	if s.Traces != nil {
		traces := make([]any, len(s.Traces))
		for i, tr := range s.Traces {
			traces[i] = tr
			if tr == nil {
				traces[i] = []any{}
			}
		}
		top["device_traces"] = traces
	}
	if s.Settings != nil {
		top["allocator_settings"] = s.Settings
	}
	if s.Annotations != nil {
		top["external_annotations"] = s.Annotations
	}
	for k, v := range s.Extra {
		top[k] = v
	}
	var buf bytes.Buffer
	if err := Plain(&buf, top); err != nil {
		return nil, err
	}
	return snapshot.Decode(&buf, name)
}

// Seg is a segment of device 0 at addr holding blocks, laid out from addr
// in order; its sizes are the blocks' sums. A segment of 2 MiB is in the
// small pool.
func Seg(addr int64, blocks ...map[string]any) map[string]any {
	var total, alloc, active, req int64
	list := make([]any, len(blocks))
	for i, b := range blocks {
		b["address"] = addr + total
		size := b["size"].(int64)
		total += size
		switch b["state"] {
		case "active_allocated":
			alloc += size
			active += size
			req += b["requested_size"].(int64)
		case "active_pending_free":
			active += size
			req += b["requested_size"].(int64)
		}
		list[i] = b
	}
	kind := "large"
	if total == 2<<20 {
		kind = "small"
	}
	return map[string]any{"device": 0, "address": addr, "total_size": total,
		"allocated_size": alloc, "active_size": active, "requested_size": req,
		"stream": 0, "segment_type": kind, "segment_pool_id": Tuple{0, 0},
		"is_expandable": false, "frames": []any{}, "blocks": list}
}

// Blk is a block of size bytes; requested is its request (for an active
// block) and state one of active_allocated, active_pending_free, inactive.
func Blk(size, requested int64, state string) map[string]any {
	return map[string]any{"size": size, "requested_size": requested, "state": state, "frames": []any{}}
}

// Ev is a trace entry. For oom, addr is the device's free bytes. A
// negative timeUS leaves time_us out, as torch before 2.2 and torch_npu do.
func Ev(action string, addr, size, timeUS int64, frames ...map[string]any) map[string]any {
	e := map[string]any{"action": action, "size": size, "stream": 0}
	if action == "oom" {
		e["device_free"] = addr
	} else {
		e["addr"] = addr
	}
	if timeUS >= 0 {
		e["time_us"] = timeUS
	}
	if len(frames) > 0 {
		list := make([]any, len(frames))
		for i, f := range frames {
			list[i] = f
		}
		e["frames"] = list
	}
	return e
}

// Frame is a stack frame.
func Frame(name, file string, line int) map[string]any {
	return map[string]any{"name": name, "filename": file, "line": line}
}
