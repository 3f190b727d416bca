package snapshot

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/nlpodyssey/gopickle/types"
)

// This file is the differential oracle: it reads the generic tree that
// gopickle builds and applies the snapshot schema to it by position,
// written independently of the decoder's by-shape conversion. It yields
// the same normalized view as view() in decode_test.go.
//
// The rules it restates: a dict in a list is a trace entry if it has
// "action", else a segment if "blocks", a block if "state" or "history",
// an annotation if "stage", a frame if "filename", else a plain dict;
// schema dicts appear only in their places; a repeated key takes its last
// value; ints accept bool, None (0) and integral floats; strs accept None.

var errRef = errors.New("reference")

func refFail(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errRef}, args...)...)
}

// refGet returns the last value of string key k.
func refGet(d *types.Dict, k string) (any, bool) {
	var v any
	found := false
	for _, e := range *d {
		if s, ok := e.Key.(string); ok && s == k {
			v, found = e.Value, true
		}
	}
	return v, found
}

func refClass(v any) string {
	d, ok := v.(*types.Dict)
	if !ok {
		return "not a dict"
	}
	has := func(k string) bool { _, ok := refGet(d, k); return ok }
	switch {
	case has("action"):
		return "event"
	case has("blocks"):
		return "segment"
	case has("state"), has("history"):
		return "block"
	case has("stage"):
		return "annotation"
	case has("filename"):
		return "frame"
	}
	return "plain"
}

func refInt(v any) (int64, error) {
	switch v := v.(type) {
	case int:
		return int64(v), nil
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case nil:
		return 0, nil
	case float64:
		if v == math.Trunc(v) && v >= -(1<<63) && v < 1<<63 {
			return int64(v), nil
		}
	case *big.Int: // gopickle's value for every LONG of more than 8 bytes
		if v.IsInt64() {
			return v.Int64(), nil
		}
		return 0, refFail("int %v does not fit in int64", v)
	}
	return 0, refFail("%T is not an int", v)
}

// refLine reads a frame's line: torch's −1 for "no line", written as −1 or
// as 2^64−1, and any negative line become 0.
func refLine(v any) (int64, error) {
	if b, ok := v.(*big.Int); ok && !b.IsInt64() && b.IsUint64() {
		return 0, nil
	}
	n, err := refInt(v)
	return max(n, 0), err
}

func refStr(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case nil:
		return "", nil
	}
	return "", refFail("%T is not a str", v)
}

func refBool(v any) (bool, error) {
	switch v := v.(type) {
	case bool:
		return v, nil
	case int:
		return v != 0, nil
	case nil:
		return false, nil
	}
	return false, refFail("%T is not a bool", v)
}

// refList returns the elements of a list whose elements are all dicts of
// class want (an empty list is fine).
func refList(v any, want string) ([]any, error) {
	l, ok := v.(*types.List)
	if !ok {
		return nil, refFail("%T is not a list", v)
	}
	for _, e := range *l {
		if c := refClass(e); c != want {
			return nil, refFail("list item is %s, want %s", c, want)
		}
	}
	return *l, nil
}

func refFrame(d *types.Dict) ([]any, error) {
	out := []any{"", "", int64(0), "", "", "", ""}
	for j, k := range []string{"name", "filename", "line", "fx_node_op", "fx_node_name", "fx_node_target", "fx_original_trace"} {
		v, ok := refGet(d, k)
		if !ok {
			continue
		}
		var err error
		if j == 2 {
			out[j], err = refLine(v)
		} else {
			out[j], err = refStr(v)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func refStack(v any) ([]any, error) {
	out := []any{}
	if v == nil {
		return out, nil
	}
	items, err := refList(v, "frame")
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		f, err := refFrame(it.(*types.Dict))
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func refCpp(v any) ([]any, error) {
	l, ok := v.(*types.List)
	if !ok {
		return nil, refFail("cpp_frames is %T", v)
	}
	out := []any{}
	for _, e := range *l {
		s, ok := e.(string)
		if !ok {
			return nil, refFail("cpp_frames item is %T", e)
		}
		out = append(out, []any{s, "??", int64(0), "", "", "", ""})
	}
	return out, nil
}

// refFields reads the items of d listed in ints/strs/bools into out.
func refFields(d *types.Dict, out map[string]any, ints, strs, bools map[string]string) error {
	for _, e := range *d {
		k, _ := e.Key.(string)
		v, _ := refGet(d, k) // the last value of a repeated key
		var err error
		if name, ok := ints[k]; ok {
			out[name], err = refInt(v)
		} else if name, ok := strs[k]; ok {
			out[name], err = refStr(v)
		} else if name, ok := bools[k]; ok {
			out[name], err = refBool(v)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

var refActions = map[string]bool{"alloc": true, "free_requested": true, "free_completed": true,
	"segment_alloc": true, "segment_free": true, "segment_map": true, "segment_unmap": true,
	"snapshot": true, "oom": true, "annotate": true}

func refEvent(d *types.Dict) (map[string]any, error) {
	out := map[string]any{"addr": int64(0), "size": int64(0), "stream": int64(0), "time_us": int64(0),
		"compile_context": "", "user_metadata": "", "frames": []any{}}
	act, _ := refGet(d, "action")
	a, ok := act.(string)
	if !ok {
		return nil, refFail("action is %T", act)
	}
	if !refActions[a] {
		a = "unknown"
	}
	out["action"] = a
	err := refFields(d, out, map[string]string{"addr": "addr", "device_free": "device_free", "size": "size",
		"stream": "stream", "time_us": "time_us"}, map[string]string{"compile_context": "compile_context",
		"user_metadata": "user_metadata"}, nil)
	if err != nil {
		return nil, err
	}
	out["addr"] = uint64(out["addr"].(int64))
	if free, ok := out["device_free"]; ok {
		if a == "oom" {
			out["addr"] = uint64(free.(int64))
		}
		delete(out, "device_free")
	}
	if fr, ok := refGet(d, "frames"); ok {
		out["frames"], err = refStack(fr)
	} else if cpp, ok := refGet(d, "cpp_frames"); ok && cpp != nil {
		out["frames"], err = refCpp(cpp)
	}
	return out, err
}

var refStates = map[string]bool{"active_allocated": true, "active_pending_free": true, "inactive": true}

// refBlock returns a block view without its address, and whether it is legacy.
func refBlock(d *types.Dict) (map[string]any, bool, error) {
	out := map[string]any{"size": int64(0), "requested_size": int64(0), "frames": []any{}}
	if err := refFields(d, out, map[string]string{"size": "size", "requested_size": "requested_size"}, nil, nil); err != nil {
		return nil, false, err
	}
	req, hasReq := refGet(d, "requested_size")
	hasReq = hasReq && req != nil
	if st, ok := refGet(d, "state"); ok {
		s, isStr := st.(string)
		if !isStr {
			return nil, false, refFail("state is %T", st)
		}
		if !refStates[s] {
			s = "unknown"
		}
		out["state"] = s
	} else {
		out["state"] = "inactive"
	}
	fr, hasFrames := refGet(d, "frames")
	var err error
	if hasFrames {
		if out["frames"], err = refStack(fr); err != nil {
			return nil, false, err
		}
	}
	hist, _ := refGet(d, "history")
	if hist == nil {
		if !hasReq {
			out["requested_size"] = out["size"]
		}
		return out, false, nil
	}
	hl, ok := hist.(*types.List)
	if !ok {
		return nil, true, refFail("history is %T", hist)
	}
	for _, e := range *hl {
		if c := refClass(e); c != "not a dict" && c != "plain" {
			return nil, true, refFail("history holds a %s", c)
		}
	}
	var h0 *types.Dict
	if len(*hl) > 0 {
		if h0, ok = (*hl)[0].(*types.Dict); !ok {
			return nil, true, refFail("history[0] is %T", (*hl)[0])
		}
	}
	var real any
	var hFrames, cpp any
	var hasReal, hasHFrames bool
	if h0 != nil {
		real, hasReal = refGet(h0, "real_size")
		hFrames, hasHFrames = refGet(h0, "frames")
		cpp, _ = refGet(h0, "cpp_frames")
		if hasReal {
			if _, err := refInt(real); err != nil {
				return nil, true, err
			}
			hasReal = real != nil
		}
	}
	if !hasReq {
		out["requested_size"] = out["size"]
		if hasReal {
			out["requested_size"], _ = refInt(real)
		}
	}
	if !hasFrames {
		if hasHFrames {
			out["frames"], err = refStack(hFrames)
		} else if cpp != nil {
			out["frames"], err = refCpp(cpp)
		}
	}
	return out, true, err
}
