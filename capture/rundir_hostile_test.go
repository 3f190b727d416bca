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
