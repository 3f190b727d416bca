package capture

import "testing"

// The same table is in harness_test.py (RankFileTest): both sides must agree.
func TestRankFile(t *testing.T) {
	for _, tt := range []struct {
		base, ext   string
		rank, world int
		want        string
	}{
		{"snapshot", ".pickle", 0, 1, "snapshot.pickle"},
		{"snapshot", ".pickle", 3, 4, "snapshot.rank3.pickle"},
		{"snapshot.oom", ".pickle", 1, 2, "snapshot.oom.rank1.pickle"},
		{"trace", ".json.gz", 0, 2, "trace.rank0.json.gz"},
		{"capture", ".json", 0, 1, "capture.json"},
		{"point", ".json", 7, 8, "point.rank7.json"},
	} {
		if got := RankFile(tt.base, tt.ext, tt.rank, tt.world); got != tt.want {
			t.Errorf("RankFile(%q, %q, %d, %d) = %q, want %q", tt.base, tt.ext, tt.rank, tt.world, got, tt.want)
		}
		rank, ok := ParseRankFile(tt.want, tt.base, tt.ext)
		wantRank := tt.rank
		if tt.world <= 1 {
			wantRank = 0
		}
		if !ok || rank != wantRank {
			t.Errorf("ParseRankFile(%q) = %d, %v, want %d, true", tt.want, rank, ok, wantRank)
		}
	}
	for _, name := range []string{"snapshot.oom.pickle", "snapshot.rank.pickle", "snapshot.rankx.pickle",
		"snapshot.rank1.pickle.gz", "snapshots.pickle", "snapshot.rank-1.pickle"} {
		if r, ok := ParseRankFile(name, "snapshot", ".pickle"); ok {
			t.Errorf("ParseRankFile(%q, snapshot, .pickle) = %d, true, want false", name, r)
		}
	}
}
