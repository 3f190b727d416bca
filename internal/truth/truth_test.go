package truth

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadFixtures: every fixture's truth.json reads, names the schema,
// and holds what each writer always writes.
func TestReadFixtures(t *testing.T) {
	dirs, err := Fixtures("../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(dirs) {
		t.Errorf("Fixtures() = %v, not sorted", dirs)
	}
	plain := 0
	for _, dir := range dirs {
		f, err := Read(filepath.Join(dir, "truth.json"))
		if err != nil {
			t.Fatal(err)
		}
		if f.Schema != Schema || f.Window.MaxAllocated <= 0 || f.DeviceTotal <= 0 || f.Torch == "" {
			t.Errorf("%s: schema %q, window peak %d, device total %d, torch %q; want %q and both positive",
				dir, f.Schema, f.Window.MaxAllocated, f.DeviceTotal, f.Torch, Schema)
		}
		if f.Plain {
			plain++
			if len(f.Steps) != f.StepsRecorded || f.Script == "" {
				t.Errorf("%s: plain, %d steps, steps_recorded %d, script %q", dir, len(f.Steps), f.StepsRecorded, f.Script)
			}
		}
	}
	if plain == 0 || plain == len(dirs) {
		t.Errorf("%d plain fixtures of %d, want both kinds", plain, len(dirs))
	}
}

// TestReadFields spot-checks fields of every kind against the files' text.
func TestReadFields(t *testing.T) {
	f, err := Read("../../fixtures/llama-profiled/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	if f.Args.Vocab == 0 || f.Args.KVHeads == 0 || f.Args.Checkpointing != nil || len(f.Phases) == 0 || f.Phases[0].PeakRequested == 0 ||
		len(f.KeyAverages) == 0 || f.KeyAverages[0].Name == "" || f.LogitsBytesFP32 != f.Args.Batch*f.Args.Seq*f.Args.Vocab*4 {
		t.Errorf("llama-profiled: args %+v, %d phases, %d key averages, logits %d: fields left zero (checkpointing: null)", f.Args, len(f.Phases), len(f.KeyAverages), f.LogitsBytesFP32)
	}
	c, err := Read("../../fixtures/llama-ckpt/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.Args.Checkpointing == nil || *c.Args.Checkpointing == 0 {
		t.Errorf("llama-ckpt: args.checkpointing = %v, want nonzero", c.Args.Checkpointing)
	}
	o, err := Read("../../fixtures/oom/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	if o.OOM == nil || o.OOM.Failed == nil || o.OOM.Failed.PeakAllocated == 0 || len(o.OOM.Observer) == 0 || o.OOM.Observer[0].Request == 0 {
		t.Errorf("oom: OOM = %+v, want a failure with its phase peak and the observer's calls", o.OOM)
	}
	p, err := Read("../../fixtures/plain-oom/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	if p.OOM == nil || p.OOM.File == "" || p.OOM.Line == 0 || p.OOM.Phase == "" {
		t.Errorf("plain-oom: OOM = %+v, want the line that raised it and its phase", p.OOM)
	}
	l, err := Read("../../fixtures/leak/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	if l.Leak == nil || l.Leak.Line == 0 || l.Leak.BytesPerStep == 0 || l.Leak.Steps == 0 || len(l.MemoryStatsEnd) == 0 {
		t.Errorf("leak: Leak = %+v, %d memory stats", l.Leak, len(l.MemoryStatsEnd))
	}
}

// TestReadErrors: errors name the file.
func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "truth.json")
	if err := os.WriteFile(bad, []byte(`{"window": {"max_allocated": "many"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, filepath.Join(dir, "missing.json")} {
		if _, err := Read(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Read(%s) = %v, want an error naming the file", path, err)
		}
	}
	if _, err := Fixtures(filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("Fixtures(an empty folder) = %v, want an error naming it", err)
	}
	if dirs, err := Fixtures(filepath.Dir(dir)); err != nil || !slices.Contains(dirs, dir) {
		t.Errorf("Fixtures(%s) = %v, %v; want it to list %s", filepath.Dir(dir), dirs, err, dir)
	}
}
