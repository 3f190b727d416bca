package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileValues: schema values no torch writes, which the replay and
// the analyses would index or sum with, give exit 2 and one line naming the
// file and the segment or trace entry, from every command.
func TestHostileValues(t *testing.T) {
	seg := func(m map[string]any, i int) map[string]any { return m["segments"].([]any)[i].(map[string]any) }
	ev := func(m map[string]any, d, i int) map[string]any {
		return m["device_traces"].([]any)[d].([]any)[i].(map[string]any)
	}
	tests := []struct {
		name string
		mut  func(m map[string]any)
		want string
	}{
		{"segment on device -1", func(m map[string]any) { seg(m, 1)["device"] = -1 }, "segment 1 (address 0x80000000): device -1 is not a device index"},
		{"segment on device 2^40", func(m map[string]any) { seg(m, 1)["device"] = int64(1 << 40) }, "device 1099511627776 is not a device index"},
		{"segment without address", func(m map[string]any) { delete(seg(m, 0), "address") }, `segment 0 (address 0x0): no "address"`},
		{"negative total_size", func(m map[string]any) { seg(m, 0)["total_size"] = -5 }, "total_size -5 is out of range"},
		{"block of 2^60 bytes", func(m map[string]any) {
			seg(m, 0)["blocks"].([]any)[0].(map[string]any)["size"] = int64(1 << 60)
		}, "block 0: size 1152921504606846976"},
		{"blocks past total_size", func(m map[string]any) { seg(m, 0)["total_size"] = 4096 },
			"segment 0 (address 0x40000000): its blocks' sizes add up to 1060864, past its total_size 4096"},
		{"alloc without addr", func(m map[string]any) { delete(ev(m, 0, 1), "addr") }, `device_traces[0][1] (alloc): no "addr"`},
		{"free with addr 0", func(m map[string]any) { ev(m, 0, 4)["addr"] = 0 }, `device_traces[0][4] (free_requested): no "addr", or addr 0`},
		{"alloc of 2^62 bytes", func(m map[string]any) { ev(m, 0, 1)["size"] = int64(1 << 62) }, "device_traces[0][1] (alloc): size 4611686018427387904 is out of range"},
		{"annotation on device -7", func(m map[string]any) {
			m["external_annotations"].([]any)[0].(map[string]any)["device"] = -7
		}, `external_annotations[0] ("## forward ##"): device -7`},
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fuzzBase(0)
			tt.mut(root)
			path := filepath.Join(dir, "hostile"+string(rune('a'+i))+".pickle")
			writeSnapshot(t, path, root)
			for _, args := range [][]string{
				{"summary", path}, {"peak", path}, {"leaks", path}, {"frag", path}, {"oom", path},
				{"diff", path, path}, {"pprof", "-o", out, path}, {"report", "-o", out, path},
				{"check", "--max-peak", "1GiB", path}, {"advise", path},
			} {
				r := runMemscope(args...)
				if r.code != 2 || r.err == nil {
					t.Fatalf("%s: exit %d, err %v; want 2", strings.Join(args, " "), r.code, r.err)
				}
				msg := r.err.Error()
				if strings.Contains(msg, "\n") || !strings.Contains(msg, path) || !strings.Contains(msg, tt.want) {
					t.Errorf("%s: error %q; want one line naming the file and %q", args[0], msg, tt.want)
				}
			}
		})
	}
}

// TestMaxMemory: --max-memory sets the decoding budget of every command
// that reads snapshots or traces; past it, exit 2 and one line naming it.
func TestMaxMemory(t *testing.T) {
	const snap = "../../fixtures/mlp-adamw/snapshot.pickle"
	const tr = "../../fixtures/llama-profiled/trace.json.gz"
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"summary", snap}, {"peak", snap}, {"leaks", snap}, {"frag", snap}, {"oom", snap}, {"diff", snap, snap},
		{"check", "--max-peak", "1TiB", snap}, {"pprof", "-o", out, snap}, {"report", "-o", out, snap}, {"ops", tr},
		{"advise", snap},
	} {
		name := strings.Join(args, " ")
		r := runMemscope(append([]string{args[0], "--max-memory", "64GiB"}, args[1:]...)...)
		if r.code != 0 && !(args[0] == "check" && r.code == 1) {
			t.Errorf("%s --max-memory 64GiB: exit %d, err %v; want 0", name, r.code, r.err)
		}
		r = runMemscope(append([]string{args[0], "--max-memory", "1KiB"}, args[1:]...)...)
		if r.code != 2 || r.err == nil || strings.Contains(r.err.Error(), "\n") || !strings.Contains(r.err.Error(), "the --max-memory limit") {
			t.Errorf("%s --max-memory 1KiB: exit %d, err %v; want 2 naming the --max-memory limit", name, r.code, r.err)
		}
		if r := runMemscope(append([]string{args[0], "--max-memory", "lots"}, args[1:]...)...); r.code != 2 || !strings.Contains(r.stderr, "--max-memory") {
			t.Errorf("%s --max-memory lots: exit %d, stderr %q; want a usage error", name, r.code, r.stderr)
		}
	}
}
