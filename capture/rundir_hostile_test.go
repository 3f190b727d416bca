package capture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadRunHostile: a run directory whose few bytes claim a billion
// ranks is refused with one line naming the file, before anything is
// allocated for them.
func TestReadRunHostile(t *testing.T) {
	for _, tt := range []struct{ file, body, want string }{
		{"run.json", `{"schema": "memscope-run/v1", "nproc": 1000000000}`, "nproc 1000000000 is out of range"},
		{"capture.json", `{"schema": "memscope-capture/v1", "rank": 0, "world": 1000000000}`, "rank 0 of world 1000000000 is out of range"},
		{"capture.json", `{"schema": "memscope-capture/v1", "rank": -3, "world": 4}`, "rank -3 of world 4 is out of range"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tt.file)
			if err := os.WriteFile(path, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadRun(dir)
			if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadRun(%s) error %v; want one line naming %s and saying %q", tt.body, err, path, tt.want)
			}
		})
	}
}

// FuzzReadRun: whatever run.json and capture.json hold, ReadRun returns an
// analysis or an error of one line, allocating nothing for the ranks they
// claim beyond MaxRanks.
func FuzzReadRun(f *testing.F) {
	f.Add([]byte(`{"schema": "memscope-run/v1", "nproc": 2}`), []byte(`{"schema": "memscope-capture/v1", "rank": 1, "world": 2}`))
	f.Add([]byte(`{"schema": "memscope-run/v1", "nproc": 1000000000}`), []byte(``))
	f.Add([]byte(``), []byte(`{"schema": "memscope-capture/v1", "rank": 0, "world": 131072, "phases": [{"phase": "forward", "step": 1}]}`))
	f.Fuzz(func(t *testing.T, run, capt []byte) {
		dir := t.TempDir()
		for name, b := range map[string][]byte{"run.json": run, "capture.json": capt} {
			if len(b) == 0 {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		a, err := ReadRun(dir)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		if len(a.Missing) > MaxRanks {
			t.Fatalf("%d missing ranks listed, more than MaxRanks", len(a.Missing))
		}
	})
}
