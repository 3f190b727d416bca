package main

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadSnapshot: unreadable input gives exit status 2 and one line naming
// the file and the byte offset, never a panic.
func TestBadSnapshot(t *testing.T) {
	dir := t.TempDir()
	fixture, err := os.ReadFile("../../fixtures/mlp-adamw/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	random := make([]byte, 1<<16)
	rand.New(rand.NewSource(7)).Read(random)
	files := map[string][]byte{
		"empty.pickle": {},
		// cut a few bytes in, before "segments": nothing to keep (a later
		// cut is salvaged: TestSalvageCut)
		"truncated.pickle": fixture[:12],
		"random.bin":       random,
		// pickle.dumps(collections.OrderedDict) at protocol 4: a class reference
		"global.pickle": []byte("\x80\x04\x95\x1e\x00\x00\x00\x00\x00\x00\x00\x8c\x0bcollections\x94\x8c\x0bOrderedDict\x94\x93\x94."),
		// BINUNICODE8 claiming 2^40 bytes
		"huge.pickle": []byte("\x80\x04\x8d\x00\x00\x00\x00\x00\x01\x00\x00abc"),
	}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			r := runMemscope("summary", path)
			if r.code != 2 || r.err == nil {
				t.Fatalf("summary %s: exit %d, err %v; want exit 2 with an error", name, r.code, r.err)
			}
			msg := r.err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, path) || !strings.Contains(msg, "byte") {
				t.Errorf("summary %s: error %q; want one line naming the file and a byte offset", name, msg)
			}
		})
	}
}

// TestProfilerFileAsSnapshot: a torch.profiler trace (or an
// export_memory_timeline file) given where a snapshot is expected is named
// for what it is, with the command that reads it, in one line and exit 2.
func TestProfilerFileAsSnapshot(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	for _, f := range []struct{ path, what string }{
		{"../../fixtures/llama-profiled/trace.json.gz", "a torch.profiler trace (Chrome trace)"},
		{"../../trace/testdata/kineto-1.10.json", "a torch.profiler trace (Chrome trace)"},
		{"../../fixtures/llama-profiled/memory_timeline.json", "an export_memory_timeline file"},
	} {
		for _, args := range [][]string{
			{"summary", f.path}, {"peak", f.path}, {"leaks", f.path}, {"frag", f.path}, {"oom", f.path},
			{"pprof", "-o", out, f.path}, {"check", "--max-peak", "1GiB", f.path},
			{"diff", f.path, "../../fixtures/mlp-adamw/snapshot.pickle"}, {"report", "-o", out, f.path},
			{"summary", "--json", f.path},
		} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				r := runMemscope(args...)
				if r.code != 2 || r.err == nil {
					t.Fatalf("exit %d, err %v; want exit 2 with an error", r.code, r.err)
				}
				msg := r.err.Error()
				want := f.what + ", not a memory snapshot: "
				if strings.Contains(msg, "\n") || !strings.Contains(msg, want) || !strings.Contains(msg, "'memscope ops "+f.path+"'") ||
					!strings.Contains(msg, "--trace "+f.path) || !strings.HasPrefix(msg, "decoding "+f.path+" at byte 0: ") {
					t.Errorf("error %q; want one line naming %s, saying %q and pointing to 'memscope ops %s' and --trace", msg, f.path, want, f.path)
				}
			})
		}
	}
}
