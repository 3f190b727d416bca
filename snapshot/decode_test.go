package snapshot

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"testing"
)

// TestDecodeTestdata decodes every file written by testdata/make_testdata.py
// and checks each field against what the script says it wrote.
func TestDecodeTestdata(t *testing.T) {
	raw, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var expected map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&expected); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(expected))
	for name := range expected {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s, err := Open(filepath.Join("testdata", name))
			if err != nil {
				t.Fatalf("Open(%s) error: %v", name, err)
			}
			var diffs []string
			compareTrees(name, view(s), expected[name], &diffs)
			reportDiffs(t, diffs)
		})
	}
}

// view renders a Snapshot in the normalized form make_testdata.py writes.
func view(s *Snapshot) map[string]any {
	segs := []any{}
	for _, sg := range s.Segments {
		blocks := []any{}
		for _, b := range sg.Blocks {
			blocks = append(blocks, map[string]any{
				"address": b.Address, "size": b.Size, "requested_size": b.RequestedSize,
				"state": b.State.String(), "frames": stackView(s.Stacks, b.Stack),
			})
		}
		segs = append(segs, map[string]any{
			"device": sg.Device, "address": sg.Address, "total_size": sg.TotalSize,
			"allocated_size": sg.AllocatedSize, "active_size": sg.ActiveSize,
			"requested_size": sg.RequestedSize, "stream": sg.Stream, "small": sg.Small,
			"pool": []any{sg.Pool.A, sg.Pool.B}, "expandable": sg.Expandable,
			"frames": stackView(s.Stacks, sg.Stack), "blocks": blocks,
		})
	}
	var traces any
	if s.HasTraces {
		tr := []any{}
		for _, evs := range s.Traces {
			es := []any{}
			for _, e := range evs {
				es = append(es, map[string]any{
					"action": e.Action.String(), "addr": e.Addr, "size": e.Size,
					"stream": e.Stream, "time_us": e.TimeUS,
					"compile_context": s.Strings.Get(e.CompileContext),
					"user_metadata":   s.Strings.Get(e.UserMetadata),
					"frames":          stackView(s.Stacks, e.Stack),
				})
			}
			tr = append(tr, es)
		}
		traces = tr
	}
	annots := []any{}
	for _, a := range s.Annotations {
		annots = append(annots, map[string]any{"start": a.Start, "name": a.Name, "device": a.Device, "time_us": a.TimeUS})
	}
	var settings any
	if s.Settings != nil {
		settings = typedView(s.Settings)
	}
	unknown := []any{}
	for _, k := range s.UnknownKeys {
		unknown = append(unknown, k)
	}
	return map[string]any{
		"format": s.Format.String(), "protocol": s.Protocol, "segments": segs,
		"has_traces": s.HasTraces, "traces": traces, "annotations": annots,
		"settings": settings, "unknown_keys": unknown, "legacy": s.Legacy,
	}
}

func stackView(st *Stacks, id StackID) []any {
	out := []any{}
	for _, f := range st.Stack(id) {
		fr := st.Frame(f)
		out = append(out, []any{fr.Name, fr.Filename, fr.Line, fr.FXNodeOp, fr.FXNodeName, fr.FXNodeTarget, fr.FXOriginalTrace})
	}
	return out
}

// typedView tags settings values with their Go type, as the script does
// with Python types.
func typedView(v any) any {
	switch v := v.(type) {
	case nil:
		return map[string]any{"none": nil}
	case bool:
		return map[string]any{"bool": v}
	case int64:
		return map[string]any{"int": v}
	case float64:
		return map[string]any{"float": v}
	case string:
		return map[string]any{"str": v}
	case []byte:
		return map[string]any{"bytes": v}
	case map[string]any:
		m := map[string]any{}
		for k, x := range v {
			m[k] = typedView(x)
		}
		return map[string]any{"map": m}
	case []any:
		l := []any{}
		for _, x := range v {
			l = append(l, typedView(x))
		}
		return map[string]any{"list": l}
	}
	return map[string]any{"unexpected Go type": fmt.Sprintf("%T", v)}
}

// canon turns a tree of Go values or decoded JSON into comparable form:
// every number becomes "int:N" or "float:X" (NaN equal to NaN).
func canon(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = canon(x)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = canon(x)
		}
		return l
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return "int:" + strconv.FormatInt(i, 10)
		}
		if u, err := strconv.ParseUint(string(v), 10, 64); err == nil {
			return "int:" + strconv.FormatUint(u, 10)
		}
		f, _ := strconv.ParseFloat(string(v), 64)
		return "float:" + strconv.FormatFloat(f, 'g', -1, 64)
	case int:
		return "int:" + strconv.FormatInt(int64(v), 10)
	case int64:
		return "int:" + strconv.FormatInt(v, 10)
	case uint64:
		return "int:" + strconv.FormatUint(v, 10)
	case float64:
		return "float:" + strconv.FormatFloat(v, 'g', -1, 64)
	case []byte:
		return "bytes:" + string(v)
	}
	return v
}

// compareTrees appends a line per difference between two trees (see canon).
func compareTrees(path string, got, want any, diffs *[]string) {
	compareCanon(path, canon(got), canon(want), diffs)
}

func compareCanon(path string, got, want any, diffs *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s = %v, want a map", path, short(got)))
			return
		}
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			compareCanon(path+"."+k, g[k], w[k], diffs)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s = %v, want %v", path, short(got), short(want)))
			return
		}
		for i := range w {
			compareCanon(fmt.Sprintf("%s[%d]", path, i), g[i], w[i], diffs)
		}
	default:
		if !reflect.DeepEqual(got, want) {
			*diffs = append(*diffs, fmt.Sprintf("%s = %v, want %v", path, short(got), short(want)))
		}
	}
}

func short(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// reportDiffs fails t with at most 20 differences.
func reportDiffs(t *testing.T, diffs []string) {
	t.Helper()
	for i, d := range diffs {
		if i == 20 {
			t.Errorf("… and %d more differences", len(diffs)-i)
			return
		}
		t.Error(d)
	}
}

// TestGzippedHTML decodes a trace_plot page that was gzipped.
func TestGzippedHTML(t *testing.T) {
	page, err := os.ReadFile("testdata/snap_trace_plot.html")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(page)
	zw.Close()
	got, err := Decode(&buf, "page.html.gz")
	if err != nil {
		t.Fatalf("Decode(page.html.gz) error: %v", err)
	}
	want, err := Open("testdata/snap_trace_plot.html")
	if err != nil {
		t.Fatal(err)
	}
	var diffs []string
	compareTrees("page.html.gz", view(got), view(want), &diffs)
	reportDiffs(t, diffs)
}
