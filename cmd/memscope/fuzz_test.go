package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// This file is the schema-aware fuzz target over the whole pipeline: a
// snapshot built as the dicts and lists torch writes, changed by a program
// of schema-level mutations the fuzzer's bytes spell (delete a key, negate,
// zero or overflow a number, swap two values, duplicate or move an entry,
// give a key the wrong type, put control characters in text), pickled with
// internal/snapgen, then read by every command that reads a snapshot:
// decode → attribution.Analyze → each renderer (text, JSON, HTML, pprof).
// Whatever the input, a command returns nil or an error of one line, never
// panics, and every snapshot decoded and every timeline replayed passes
// CheckValid.

// checkValid fails t unless s, the replay of each of its devices (and of
// device 0) and the timelines of its analysis pass CheckValid.
func checkValid(t *testing.T, s *snapshot.Snapshot) {
	t.Helper()
	if err := s.CheckValid(); err != nil {
		t.Fatalf("Snapshot.CheckValid: %v", err)
	}
	for _, d := range append([]int{0}, s.Devices()...) {
		tl := snapshot.Replay(s, d, snapshot.ReplayOptions{Series: true, Lifetimes: true})
		if err := tl.CheckValid(); err != nil {
			t.Fatalf("Replay(device %d).CheckValid: %v", d, err)
		}
	}
	for _, d := range attribution.Analyze(s, attribution.Options{Device: -1}).Devices {
		if err := d.Timeline.CheckValid(); err != nil {
			t.Fatalf("Analyze: the timeline of device %d: CheckValid: %v", d.Device, err)
		}
	}
}

// fuzzBase is the snapshot every program mutates: two devices, a training
// step's history with annotations, an OOM, blocks with frames.
func fuzzBase(variant byte) map[string]any {
	fr := func(name, file string, line int) []any {
		return []any{snapgen.Frame(name, file, line), snapgen.Frame("main", "train.py", 9)}
	}
	seg := snapgen.Seg(1<<30, snapgen.Blk(4096, 4000, "active_allocated"), snapgen.Blk(8192, 8192, "inactive"),
		snapgen.Blk(1<<20, 1<<20, "active_allocated"))
	seg["frames"] = fr("alloc_seg", "model.py", 3)
	blocks := seg["blocks"].([]any)
	blocks[0].(map[string]any)["frames"] = fr("forward", "model.py", 12)
	seg1 := snapgen.Seg(2<<30, snapgen.Blk(2<<20, 1<<20, "active_allocated"))
	seg1["device"] = 1
	ev := func(action string, addr, size, t int64) map[string]any {
		e := snapgen.Ev(action, addr, size, t)
		e["frames"] = fr("step", "train.py", int(t))
		return e
	}
	segSize := int64(4096 + 8192 + 1<<20)
	trace0 := []any{
		ev("segment_alloc", 1<<30, segSize, 10),
		ev("alloc", 1<<30, 4096, 11),
		ev("alloc", 1<<30+4096, 8192, 12),
		ev("alloc", 1<<30+4096+8192, 1<<20, 13),
		ev("free_requested", 1<<30+4096, 8192, 14),
		ev("free_completed", 1<<30+4096, 8192, 15),
		ev("oom", 100, 1<<40, 16),
		ev("snapshot", 0, 0, 17),
	}
	trace1 := []any{
		ev("segment_alloc", 2<<30, 2<<20, 5),
		ev("alloc", 2<<30, 2<<20, 6),
		ev("segment_map", 3<<30, 2<<20, 7),
		ev("segment_unmap", 3<<30, 2<<20, 8),
	}
	if variant%2 == 1 { // the ≤2.0 layout: block history, no device_traces
		blocks[0].(map[string]any)["history"] = []any{map[string]any{"addr": int64(1 << 30), "real_size": int64(4000),
			"frames": fr("old", "model.py", 1)}}
		trace0, trace1 = nil, nil
	}
	top := map[string]any{
		"segments": []any{seg, seg1},
		"external_annotations": []any{
			map[string]any{"stage": "START", "name": "## forward ##", "device": 0, "time_us": int64(10)},
			map[string]any{"stage": "END", "name": "## forward ##", "device": 0, "time_us": int64(13)},
			map[string]any{"stage": "START", "name": "Optimizer.step#AdamW.step", "device": 0, "time_us": int64(14)},
			map[string]any{"stage": "END", "name": "Optimizer.step#AdamW.step", "device": 0, "time_us": int64(15)},
		},
		"allocator_settings": map[string]any{"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "max_split_size": int64(-1)},
	}
	if trace0 != nil {
		top["device_traces"] = []any{trace0, trace1}
	}
	return top
}

// hostileValues are what a mutation may put in place of a number or string.
var hostileValues = []any{
	int64(0), int64(-1), int64(1), int64(math.MaxInt64), int64(math.MinInt64), int64(1 << 62), int64(-(1 << 40)),
	"", "\x1b[31mred\x1b[0m\r\n\x07", "unknown_action", "free_completed", "segment_free", "alloc", "oom",
	nil, true, 1.5, []any{}, map[string]any{},
}

// mutator applies the program in p to a tree of map[string]any and []any.
type mutator struct {
	p []byte
	i int
}

func (m *mutator) next() int {
	if m.i >= len(m.p) {
		return 0
	}
	b := int(m.p[m.i])
	m.i++
	return b
}

// walk picks a container and, in it, a slot: it descends while the program
// says so. It returns the parent container and the key or index chosen.
func (m *mutator) walk(root any) (parent any, key any) {
	_, _, parent, key = m.walk2(root)
	return parent, key
}

// walk2 is walk that also returns the parent's own container and key.
func (m *mutator) walk2(root any) (gp, gkey, parent, key any) {
	cur := root
	for depth := 0; depth < 8; depth++ {
		gp0, gkey0 := parent, key
		var child any
		switch c := cur.(type) {
		case map[string]any:
			if len(c) == 0 {
				return gp, gkey, parent, key
			}
			keys := sortedKeys(c)
			k := keys[m.next()%len(keys)]
			gp, gkey, parent, key, child = gp0, gkey0, c, k, c[k]
		case []any:
			if len(c) == 0 {
				return gp, gkey, parent, key
			}
			i := m.next() % len(c)
			gp, gkey, parent, key, child = gp0, gkey0, c, i, c[i]
		default:
			return gp, gkey, parent, key
		}
		switch child.(type) {
		case map[string]any, []any:
			if m.next()%4 == 0 { // stop here, at a container
				return gp, gkey, parent, key
			}
			cur = child
		default:
			return gp, gkey, parent, key
		}
	}
	return gp, gkey, parent, key
}

func sortedKeys(c map[string]any) []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func get(parent, key any) any {
	switch p := parent.(type) {
	case map[string]any:
		return p[key.(string)]
	case []any:
		return p[key.(int)]
	}
	return nil
}

func set(parent, key, v any) {
	switch p := parent.(type) {
	case map[string]any:
		p[key.(string)] = v
	case []any:
		p[key.(int)] = v
	}
}

// apply runs the whole program on root. A list that grows is written back
// through its own parent, so the walk is repeated from the root each step.
func (m *mutator) apply(root map[string]any) {
	for steps := 0; m.i < len(m.p) && steps < 32; steps++ {
		op := m.next() % 9
		gp, gkey, parent, key := m.walk2(root)
		if parent == nil {
			continue
		}
		v := get(parent, key)
		switch op {
		case 0: // delete a key, or an entry of a list
			switch p := parent.(type) {
			case map[string]any:
				delete(p, key.(string))
			case []any:
				set(gp, gkey, slices.Delete(slices.Clone(p), key.(int), key.(int)+1))
			}
		case 1: // negate a number
			if n, ok := v.(int64); ok {
				set(parent, key, -n)
			} else if n, ok := v.(int); ok {
				set(parent, key, -n)
			}
		case 2: // a hostile value
			set(parent, key, hostileValues[m.next()%len(hostileValues)])
		case 3: // swap with a sibling
			parent2, key2 := m.walk(root)
			if parent2 != nil {
				v2 := get(parent2, key2)
				set(parent, key, v2)
				set(parent2, key2, v)
			}
		case 4: // duplicate a list entry
			if p, ok := parent.([]any); ok {
				set(gp, gkey, slices.Insert(slices.Clone(p), key.(int), deepCopy(v)))
			}
		case 5: // move a list entry (reorder)
			if p, ok := parent.([]any); ok && len(p) > 1 {
				j := m.next() % len(p)
				p[key.(int)], p[j] = p[j], p[key.(int)]
			}
		case 6: // shift a number by a small or large amount
			deltas := []int64{1, -1, 4096, -4096, 1 << 31, math.MaxInt64 / 2}
			if n, ok := v.(int64); ok {
				set(parent, key, n+deltas[m.next()%len(deltas)])
			} else if n, ok := v.(int); ok {
				set(parent, key, int64(n)+deltas[m.next()%len(deltas)])
			}
		case 7: // copy another value here (an address or size from elsewhere)
			parent2, key2 := m.walk(root)
			if parent2 != nil {
				set(parent, key, deepCopy(get(parent2, key2)))
			}
		case 8: // a new key with a hostile value
			if p, ok := parent.(map[string]any); ok {
				names := []string{"addr", "size", "device", "time_us", "action", "stream", "address", "total_size",
					"requested_size", "state", "frames", "blocks", "device_free", "history", "real_size"}
				p[names[m.next()%len(names)]] = hostileValues[m.next()%len(hostileValues)]
			}
		}
	}
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(v))
		for k, x := range v {
			c[k] = deepCopy(x)
		}
		return c
	case []any:
		c := make([]any, len(v))
		for i, x := range v {
			c[i] = deepCopy(x)
		}
		return c
	}
	return v
}

// fuzzCommands are the command lines run on each mutated snapshot; SNAP is
// its path, OUT a scratch output file.
// writeSnapshot writes root (a snapshot dict of fuzzBase's shape) to path
// as a pickle, failing the test when it cannot.
func writeSnapshot(t *testing.T, path string, root map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	if err := snapgen.Plain(&buf, root); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

var fuzzCommands = [][]string{
	{"summary", "SNAP"}, {"summary", "--json", "SNAP"}, {"peak", "SNAP"}, {"peak", "--json", "SNAP"},
	{"peak", "--tree", "SNAP"}, {"peak", "--at", "end", "SNAP"}, {"peak", "--at", "oom", "SNAP"},
	{"leaks", "SNAP"}, {"leaks", "--json", "SNAP"}, {"frag", "SNAP"}, {"frag", "--json", "SNAP"},
	{"oom", "SNAP"}, {"oom", "--json", "SNAP"}, {"diff", "SNAP", "SNAP"}, {"check", "--max-peak", "1MiB", "SNAP"},
	{"pprof", "-o", "OUT", "SNAP"}, {"report", "-o", "OUT", "SNAP"}, {"advise", "SNAP"}, {"advise", "--json", "SNAP"},
	{"whatif", "SNAP"}, {"whatif", "--json", "--conf", "expandable_segments:True", "--conf", "max_split_size_mb:128", "SNAP"},
}

// FuzzPipeline: no command panics on a mutated snapshot, and every error is
// one line. variant's low bit picks the base (≤2.0 block history or
// device_traces), its other bits the second command line to run.
func FuzzPipeline(f *testing.F) {
	for v := range 2 * len(fuzzCommands) {
		f.Add(byte(v), []byte{})
	}
	f.Add(byte(0), []byte{0, 3, 0, 1, 1, 0})             // delete inside device_traces
	f.Add(byte(0), []byte{2, 2, 1, 0, 0, 1, 3})          // a hostile value in a segment
	f.Add(byte(0), []byte{1, 0, 0, 1, 0, 2, 4, 0, 2})    // negate, duplicate
	f.Add(byte(0), []byte{5, 1, 1, 0, 1, 0, 3, 7, 1, 2}) // reorder events
	f.Fuzz(func(t *testing.T, variant byte, prog []byte) {
		if len(prog) > 256 {
			return
		}
		root := fuzzBase(variant)
		(&mutator{p: prog}).apply(root)
		var buf bytes.Buffer
		if err := snapgen.Plain(&buf, root); err != nil {
			return // a shape Plain cannot write (not a decoder input)
		}
		if s, _ := snapshot.Decode(bytes.NewReader(buf.Bytes()), "fuzz"); s != nil {
			checkValid(t, s)
		}
		dir := t.TempDir()
		snap := filepath.Join(dir, "snap.pickle")
		if err := os.WriteFile(snap, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out")
		// Each run takes summary and one more command line, picked by
		// variant: all of them each time would run ten times slower.
		cmds := [][]string{fuzzCommands[0], fuzzCommands[int(variant>>1)%len(fuzzCommands)]}
		for _, args := range cmds {
			args = slices.Clone(args)
			for i, a := range args {
				switch a {
				case "SNAP":
					args[i] = snap
				case "OUT":
					args[i] = out
				}
			}
			var stdout, stderr bytes.Buffer
			err := run(args, &stdout, &stderr) // a panic fails the fuzz with its stack
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Fatalf("%s: error of more than one line: %q", strings.Join(args, " "), err)
			}
			if err == nil && args[0] == "pprof" {
				// memscope encodes the profile itself: pprof's reader must
				// take it.
				f, err := os.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				p, err := profile.Parse(f)
				f.Close()
				if err == nil {
					err = p.CheckValid()
				}
				if err != nil {
					t.Fatalf("pprof: the profile written does not read back: %v", err)
				}
			}
		}
	})
}
