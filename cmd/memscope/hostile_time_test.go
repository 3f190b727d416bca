package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileHistory: histories no torch writes but whose values are each
// in range — time going backwards, times far apart, unknown actions, a
// huge OOM request, events of a device with no segments — are analysed by
// every command without a panic: exit 0 or 1 with warnings, or exit 2 and
// one line.
func TestHostileHistory(t *testing.T) {
	events := func(m map[string]any) []any { return m["device_traces"].([]any)[0].([]any) }
	tests := []struct {
		name string
		mut  func(m map[string]any)
	}{
		{"time backwards", func(m map[string]any) {
			for i, e := range events(m) {
				e.(map[string]any)["time_us"] = int64(1000 - 100*i)
			}
		}},
		{"times at the int64 ends", func(m map[string]any) {
			for i, e := range events(m) {
				e.(map[string]any)["time_us"] = []int64{math.MinInt64, math.MaxInt64}[i%2]
			}
		}},
		{"negative times", func(m map[string]any) {
			for i, e := range events(m) {
				e.(map[string]any)["time_us"] = int64(-1 - i)
			}
		}},
		{"unknown actions", func(m map[string]any) {
			for i, e := range events(m) {
				if i%2 == 1 {
					e.(map[string]any)["action"] = "teleport"
				}
			}
		}},
		{"OOM of 2^62 bytes", func(m map[string]any) { events(m)[6].(map[string]any)["size"] = int64(1 << 62) }},
		{"OOM of -1 bytes, free -1", func(m map[string]any) {
			events(m)[6].(map[string]any)["size"] = int64(-1)
			events(m)[6].(map[string]any)["device_free"] = int64(-1)
		}},
		{"events reversed", func(m map[string]any) {
			ev := events(m)
			for i, j := 0, len(ev)-1; i < j; i, j = i+1, j-1 {
				ev[i], ev[j] = ev[j], ev[i]
			}
		}},
		{"every event twice", func(m map[string]any) {
			tr := m["device_traces"].([]any)
			var out []any
			for _, e := range events(m) {
				out = append(out, e, e)
			}
			tr[0] = out
		}},
		{"sizes of 2^47", func(m map[string]any) {
			for _, e := range events(m) {
				e.(map[string]any)["size"] = int64(1 << 47)
			}
		}},
		{"annotations backwards and unmatched", func(m map[string]any) {
			an := m["external_annotations"].([]any)
			for i, a := range an {
				a.(map[string]any)["time_us"] = int64(100 - i)
				a.(map[string]any)["stage"] = "START"
			}
		}},
		{"no segments", func(m map[string]any) { m["segments"] = []any{} }},
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fuzzBase(0)
			tt.mut(root)
			path := filepath.Join(dir, "history"+string(rune('a'+i))+".pickle")
			writeSnapshot(t, path, root)
			for _, args := range fuzzCommands {
				args = append([]string(nil), args...)
				for j, a := range args {
					switch a {
					case "SNAP":
						args[j] = path
					case "OUT":
						args[j] = out
					}
				}
				r := runMemscope(args...) // a panic fails the test with its stack
				if r.code == 2 && strings.Contains(r.err.Error(), "\n") {
					t.Errorf("%s: error of more than one line: %q", strings.Join(args, " "), r.err)
				}
			}
		})
	}
}
