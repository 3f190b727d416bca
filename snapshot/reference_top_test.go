package snapshot

import (
	"math/big"

	"github.com/nlpodyssey/gopickle/types"
)

// The reference's segments, annotations, settings and top level; see
// reference_test.go.

func refSegment(d *types.Dict) (map[string]any, bool, error) {
	out := map[string]any{"device": int64(0), "address": int64(0), "total_size": int64(0),
		"allocated_size": int64(0), "active_size": int64(0), "requested_size": int64(0),
		"stream": int64(0), "small": false, "pool": []any{int64(0), int64(0)}, "expandable": false,
		"frames": []any{}}
	err := refFields(d, out, map[string]string{"device": "device", "address": "address",
		"total_size": "total_size", "allocated_size": "allocated_size", "active_size": "active_size",
		"requested_size": "requested_size", "stream": "stream"},
		map[string]string{"segment_type": "segment_type"}, map[string]string{"is_expandable": "expandable"})
	if err != nil {
		return nil, false, err
	}
	if st, ok := out["segment_type"]; ok {
		out["small"] = st == "small"
		delete(out, "segment_type")
	}
	if p, ok := refGet(d, "segment_pool_id"); ok && p != nil {
		var items []any
		switch p := p.(type) {
		case *types.Tuple:
			items = *p
		case *types.List:
			items = *p
		}
		if len(items) != 2 {
			return nil, false, refFail("segment_pool_id is %T of %d", p, len(items))
		}
		a, err1 := refInt(items[0])
		b, err2 := refInt(items[1])
		if err1 != nil || err2 != nil {
			return nil, false, refFail("segment_pool_id items")
		}
		out["pool"] = []any{a, b}
	}
	if fr, ok := refGet(d, "frames"); ok {
		if out["frames"], err = refStack(fr); err != nil {
			return nil, false, err
		}
	}
	bl, _ := refGet(d, "blocks")
	items, err := refList(bl, "block")
	if err != nil {
		return nil, false, err
	}
	blocks := []any{}
	legacy := false
	addr := uint64(out["address"].(int64))
	out["address"] = addr
	for _, it := range items {
		b, l, err := refBlock(it.(*types.Dict))
		if err != nil {
			return nil, false, err
		}
		legacy = legacy || l
		b["address"] = addr
		addr += uint64(b["size"].(int64))
		blocks = append(blocks, b)
	}
	out["blocks"] = blocks
	return out, legacy, nil
}

func refAnnotation(d *types.Dict) (map[string]any, error) {
	out := map[string]any{"name": "", "device": int64(0), "time_us": int64(0), "start": false}
	err := refFields(d, out, map[string]string{"device": "device", "time_us": "time_us"},
		map[string]string{"stage": "stage", "name": "name"}, nil)
	if st, ok := out["stage"]; ok {
		out["start"] = st == "START"
		delete(out, "stage")
	}
	return out, err
}

// refGeneric converts allocator_settings values to the typed form of
// typedView.
func refGeneric(v any, depth int, count *int) (any, error) {
	if depth > maxGenericDepth {
		return nil, refFail("too deep")
	}
	if *count++; *count > maxGenericValues {
		return nil, refFail("too many values")
	}
	tag := func(k string, x any) any { return map[string]any{k: x} }
	switch v := v.(type) {
	case nil:
		return tag("none", nil), nil
	case bool:
		return tag("bool", v), nil
	case int:
		return tag("int", int64(v)), nil
	case float64:
		return tag("float", v), nil
	case string:
		return tag("str", v), nil
	case []byte:
		return tag("bytes", v), nil
	case *big.Int:
		if v.IsInt64() {
			return tag("int", v.Int64()), nil
		}
		return nil, refFail("big int")
	case *types.Dict:
		m := map[string]any{}
		for _, e := range *v {
			if _, ok := e.Key.(string); !ok {
				return nil, refFail("key %T", e.Key)
			}
		}
		for i := len(*v) - 1; i >= 0; i-- { // the last value of a key counts
			k := (*v)[i].Key.(string)
			if _, dup := m[k]; dup {
				continue
			}
			g, err := refGeneric((*v)[i].Value, depth+1, count)
			if err != nil {
				return nil, err
			}
			m[k] = g
		}
		return tag("map", m), nil
	case *types.Tuple:
		return refGenericItems(*v, depth, false, count)
	case *types.List:
		return refGenericItems(*v, depth, true, count)
	}
	return nil, refFail("unexpected %T", v)
}

func refGenericItems(items []any, depth int, list bool, count *int) (any, error) {
	out := []any{}
	for _, it := range items {
		if c := refClass(it); list && c != "not a dict" && c != "plain" {
			return nil, refFail("settings list holds a %s", c)
		}
		g, err := refGeneric(it, depth+1, count)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return map[string]any{"list": out}, nil
}

// refView applies the schema to a gopickle tree. format and protocol are
// copied from the decoder's result: the tree does not know them.
func refView(tree any, format string, protocol int) (map[string]any, error) {
	out := map[string]any{"format": format, "protocol": protocol, "has_traces": false,
		"traces": nil, "annotations": []any{}, "settings": nil, "unknown_keys": []any{}, "legacy": false}
	var segs any
	switch t := tree.(type) {
	case *types.List:
		segs = t
	case *types.Dict:
		found := false
		var traces, settings, annots any
		for _, e := range *t {
			k, ok := e.Key.(string)
			if !ok {
				return nil, refFail("top-level key %T", e.Key)
			}
			switch k {
			case "segments":
				segs, found = e.Value, true
			case "device_traces":
				traces = e.Value
				out["has_traces"] = traces != nil
			case "allocator_settings":
				settings = e.Value
			case "external_annotations":
				annots = e.Value
			default:
				unknown := out["unknown_keys"].([]any)
				dup := false
				for _, u := range unknown {
					dup = dup || u == k
				}
				if !dup {
					out["unknown_keys"] = append(unknown, k)
				}
			}
		}
		if !found {
			return nil, refFail("no segments")
		}
		if traces != nil {
			tl, ok := traces.(*types.List)
			if !ok {
				return nil, refFail("device_traces is %T", traces)
			}
			all := []any{}
			for _, dev := range *tl {
				items, err := refList(dev, "event")
				if err != nil {
					return nil, err
				}
				evs := []any{}
				for _, it := range items {
					e, err := refEvent(it.(*types.Dict))
					if err != nil {
						return nil, err
					}
					evs = append(evs, e)
				}
				all = append(all, evs)
			}
			out["traces"] = all
		}
		if settings != nil {
			if _, ok := settings.(*types.Dict); !ok {
				return nil, refFail("allocator_settings is %T", settings)
			}
			count := 0
			g, err := refGeneric(settings, 0, &count)
			if err != nil {
				return nil, err
			}
			out["settings"] = g
		}
		if annots != nil {
			items, err := refList(annots, "annotation")
			if err != nil {
				return nil, err
			}
			as := []any{}
			for _, it := range items {
				a, err := refAnnotation(it.(*types.Dict))
				if err != nil {
					return nil, err
				}
				as = append(as, a)
			}
			out["annotations"] = as
		}
	default:
		return nil, refFail("top-level %T", tree)
	}
	items, err := refList(segs, "segment")
	if err != nil {
		return nil, err
	}
	list := []any{}
	for _, it := range items {
		s, legacy, err := refSegment(it.(*types.Dict))
		if err != nil {
			return nil, err
		}
		out["legacy"] = out["legacy"].(bool) || legacy
		list = append(list, s)
	}
	out["segments"] = list
	return out, nil
}
