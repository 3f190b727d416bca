package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/snapshot"
)

// TestSalvageCut: a snapshot cut at 10%, 50% and 90% of its bytes, raw and
// gzipped, is analysed as far as it goes by every command: exit 0 (check:
// 2) with one warning saying where it ended, and peaks equal to a replay of
// the same prefix of the full file's history.
func TestSalvageCut(t *testing.T) {
	const fixture = "../../fixtures/mlp-adamw/snapshot.pickle"
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	full, err := snapshot.Open(fixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, pct := range []int{10, 50, 90} {
		for _, gz := range []bool{false, true} {
			cut := data[:len(data)*pct/100]
			name := fmt.Sprintf("cut%d.pickle", pct)
			if gz {
				// gzip the whole file, flushed every 4 KiB as a writer
				// streaming to disk does, then cut the compressed bytes.
				var b bytes.Buffer
				zw := gzip.NewWriter(&b)
				for i := 0; i < len(data); i += 4096 {
					zw.Write(data[i:min(i+4096, len(data))])
					zw.Flush()
				}
				zw.Close()
				cut = b.Bytes()[:b.Len()*pct/100]
				name += ".gz"
			}
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, cut, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Run(name, func(t *testing.T) {
				part, err := snapshot.Open(path)
				if part == nil {
					t.Fatalf("Open(%s) = nil, %v; want the valid part", name, err)
				}
				// The prefix: the full file's history up to as many entries.
				prefix := *full
				prefix.Traces = nil
				for d, tr := range part.Traces {
					if len(tr) > len(full.Traces[d]) {
						t.Fatalf("device %d: %d entries kept, the file has %d", d, len(tr), len(full.Traces[d]))
					}
					for i := range tr {
						if tr[i] != full.Traces[d][i] {
							t.Fatalf("device %d entry %d = %+v, want %+v", d, i, tr[i], full.Traces[d][i])
						}
					}
					prefix.Traces = append(prefix.Traces, full.Traces[d][:len(tr)])
				}
				if len(part.Segments) > len(full.Segments) || !reflect.DeepEqual(part.Segments, full.Segments[:len(part.Segments)]) {
					t.Fatalf("kept %d segments that are not the file's first ones", len(part.Segments))
				}
				prefix.Segments = full.Segments[:len(part.Segments)] // a cut inside the segments keeps the first ones
				prefix.HasTraces = part.HasTraces
				prefix.Warnings = part.Warnings
				want := attribution.Analyze(&prefix, attribution.Options{Device: -1})

				r := runMemscope("summary", "--json", path)
				if r.code != 0 {
					t.Fatalf("summary --json: exit %d, err %v; want 0", r.code, r.err)
				}
				if n := strings.Count(r.stderr, "\n"); n != 1 || !strings.Contains(r.stderr, "warning: ") ||
					!strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "valid part") {
					t.Errorf("stderr %q; want one warning naming the file and the valid part", r.stderr)
				}
				var doc struct {
					Files []struct {
						Devices []struct {
							Device int `json:"device"`
							Peaks  map[string]struct {
								Bytes int64 `json:"bytes"`
							} `json:"peaks"`
						} `json:"devices"`
					} `json:"files"`
				}
				if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Files) != 1 {
					t.Fatalf("summary --json: %v\n%s", err, r.stdout)
				}
				for _, got := range doc.Files[0].Devices {
					for _, d := range want.Devices {
						if d.Device != got.Device {
							continue
						}
						tl := d.Timeline
						if a, r := got.Peaks["allocated"].Bytes, got.Peaks["reserved"].Bytes; a != tl.PeakAllocated.Bytes || r != tl.PeakReserved.Bytes {
							t.Errorf("device %d: peak allocated %d, reserved %d; replay of the prefix %d, %d",
								d.Device, a, r, tl.PeakAllocated.Bytes, tl.PeakReserved.Bytes)
						}
					}
				}
				out := filepath.Join(t.TempDir(), "out")
				for _, args := range [][]string{
					{"summary", path}, {"peak", path}, {"leaks", path}, {"frag", path}, {"oom", path},
					{"diff", path, fixture}, {"pprof", "-o", out, path}, {"report", "-o", out, path},
				} {
					r := runMemscope(args...)
					if r.code != 0 || !strings.Contains(r.stderr, "valid part") {
						t.Errorf("%s: exit %d, err %v, stderr %q; want 0 and the warning", strings.Join(args, " "), r.code, r.err, r.stderr)
					}
				}
				r = runMemscope("check", "--max-peak", "1TiB", "--allow-oom", path)
				if r.code != 2 || !strings.Contains(r.stderr, "cut short") {
					t.Errorf("check: exit %d, stderr %q; want 2 saying it was cut short", r.code, r.stderr)
				}
			})
		}
	}
}
