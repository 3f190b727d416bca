package capture

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadRunTwoRanks(t *testing.T) {
	dir := filepath.Join("testdata", "run-fake-2ranks")
	if k, err := DirKind(dir); err != nil || k != KindCapture {
		t.Fatalf("DirKind(%s) = %q, %v, want capture", dir, k, err)
	}
	a, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.Run == nil || a.Run.Nproc != 2 || len(a.Ranks) != 2 || len(a.Missing) != 0 {
		t.Fatalf("ReadRun: run %+v, %d ranks, missing %v; want nproc 2, 2 ranks, none missing", a.Run, len(a.Ranks), a.Missing)
	}
	if a.Ranks[0].Rank != 0 || a.Ranks[1].Rank != 1 || len(a.Ranks[0].Phases) == 0 {
		t.Errorf("ReadRun: ranks %d, %d with %d phase rows; want 0, 1 in order, with phases", a.Ranks[0].Rank, a.Ranks[1].Rank, len(a.Ranks[0].Phases))
	}
}

func TestReadRunMissingRank(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"run.json", "capture.rank0.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "run-fake-2ranks", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	a, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []RunWarning{{Kind: MissingRanks, Ranks: []int{1}, World: 2}}
	if len(a.Missing) != 1 || a.Missing[0] != 1 || len(a.Ranks) != 1 || !reflect.DeepEqual(a.Warnings, want) {
		t.Errorf("ReadRun with rank 1 gone: missing %v, %d ranks, warnings %+v; want [1], 1, %+v",
			a.Missing, len(a.Ranks), a.Warnings, want)
	}
	os.Remove(filepath.Join(dir, "run.json"))
	a, err = ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Without run.json the world is what the one capture.json says: 2.
	want = []RunWarning{{Kind: NoRunJSON}, {Kind: MissingRanks, Ranks: []int{1}, World: 2}}
	if !reflect.DeepEqual(a.Warnings, want) {
		t.Errorf("ReadRun without run.json: warnings %+v, want %+v", a.Warnings, want)
	}
}

func TestReadBadRunDirs(t *testing.T) {
	empty := t.TempDir()
	if _, err := DirKind(empty); err == nil || !strings.Contains(err.Error(), "not a memscope run directory") {
		t.Errorf("DirKind(empty) error = %v, want 'not a memscope run directory'", err)
	}
	newer := t.TempDir()
	os.WriteFile(filepath.Join(newer, "results.json"), []byte(`{"schema": "memscope-sweep/v2"}`), 0o644)
	if _, err := ReadResults(newer); err == nil || !strings.Contains(err.Error(), "this memscope reads memscope-sweep/v1") {
		t.Errorf("ReadResults(v2) error = %v, want one naming both versions", err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "results.json"), []byte(`{"points": []}`), 0o644)
	if _, err := ReadResults(other); err == nil {
		t.Error("ReadResults(no schema) = nil error, want one")
	}
	if _, err := DirKind(filepath.Join("testdata", "run-fake-2ranks", "run.json")); err == nil {
		t.Error("DirKind(a file) = nil error, want one")
	}
}

func TestSplitWorkload(t *testing.T) {
	for name, want := range map[string]string{"mlp": "mlp", "llama": "llama", "vit": "vit", "pkg.mod:make": "custom",
		"mod:f": "custom", "gpt": "", "pkg.mod": "", "pkg.:f": "", "m:f-g": "", "1m:f": ""} {
		if got := SplitWorkload(name); got != want {
			t.Errorf("SplitWorkload(%q) = %q, want %q", name, got, want)
		}
	}
}
