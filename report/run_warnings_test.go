package report

import (
	"testing"

	"github.com/memscope/memscope/capture"
)

func TestRunWarningWords(t *testing.T) {
	many := make([]int, 22)
	for i := range many {
		many[i] = i + 1
	}
	for _, tc := range []struct {
		name string
		w    capture.RunWarning
		want string
	}{
		{"no-run-json", capture.RunWarning{Kind: capture.NoRunJSON},
			"no run.json: the harness was run without memscope capture"},
		{"missing-ranks", capture.RunWarning{Kind: capture.MissingRanks, Ranks: []int{1, 3}, World: 4},
			"2 of 4 processes wrote no capture.json (ranks 1, 3): killed, or never started"},
		{"missing-many", capture.RunWarning{Kind: capture.MissingRanks, Ranks: many, World: 23},
			"22 of 23 processes wrote no capture.json (ranks 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, … 2 more): killed, or never started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runWarningText(tc.w); got != tc.want {
				t.Errorf("runWarningText(%+v) = %q, want %q", tc.w, got, tc.want)
			}
		})
	}
}
