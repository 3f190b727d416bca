package report

import "testing"

// TestNouns: one count, one noun, its plural everywhere else.
func TestNouns(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "block", "1 block"}, {2, "block", "2 blocks"}, {0, "hole", "0 holes"},
		{1, "hole", "1 hole"}, {1, "process", "1 process"}, {3, "process", "3 processes"},
		{2, "batch", "2 batches"}, {2, "entry", "2 entries"}, {2, "day", "2 days"},
		{1, "out-of-memory event", "1 out-of-memory event"}, {5, "out-of-memory event", "5 out-of-memory events"},
		{-1, "step", "-1 step"}, {2, "native frame", "2 native frames"},
	} {
		if got := nouns(tc.n, tc.noun); got != tc.want {
			t.Errorf("nouns(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}
