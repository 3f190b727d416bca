package report

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/testenv"
	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/snapshot"
)

// TestSummaryMemoryStatsTruth: summary's end_stats and ooms are
// torch's own memory_stats() at the end of the same capture
// (segment.all.current, inactive_split.all.current,
// inactive_split_bytes.all.current, num_ooms), on every fixture with a
// truth.json beside its snapshot, expandable segments and CUDA graphs'
// private pools included.
func TestSummaryMemoryStatsTruth(t *testing.T) {
	var dirs []string
	err := filepath.WalkDir("../fixtures", func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Name() == "truth.json" {
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), "snapshot.pickle")); err == nil {
				dirs = append(dirs, filepath.Dir(p))
			}
		}
		return err
	})
	if err != nil || len(dirs) == 0 {
		testenv.Need(t, "no fixtures with truth.json and snapshot.pickle: %v", err)
	}
	compared, retries := 0, 0
	for _, dir := range dirs {
		tr, err := truth.Read(filepath.Join(dir, "truth.json"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := snapshot.Open(filepath.Join(dir, "snapshot.pickle"))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Devices()) != 1 {
			continue // memory_stats() is one device's
		}
		f := summaryFile(attribution.Summarize(attribution.Analyze(s, attribution.Options{Device: -1}), 5))
		d := f.Devices[0]
		got := map[string]int64{"num_ooms": int64(d.OOMs), "segment.all.current": int64(d.EndStats.Segment),
			"inactive_split.all.current": int64(d.EndStats.InactiveSplit), "inactive_split_bytes.all.current": d.EndStats.InactiveSplitBytes}
		keys := []string{"segment.all.current", "inactive_split.all.current", "inactive_split_bytes.all.current", "num_ooms"}
		if d.AllocRetries != nil {
			got["num_alloc_retries"] = int64(*d.AllocRetries)
			keys = append(keys, "num_alloc_retries")
			retries++
			if *d.AllocRetries > 0 {
				t.Logf("%s: %d alloc retries", dir, *d.AllocRetries)
			}
		}
		for _, k := range keys {
			want, ok := tr.MemoryStatsEnd[k]
			if !ok {
				continue
			}
			compared++
			if got[k] != want {
				t.Errorf("summary(%s) %s = %d, want %d (truth.json's memory_stats_end)", dir, k, got[k], want)
			}
		}
	}
	t.Logf("%d values compared on %d fixtures (num_alloc_retries known on %d)", compared, len(dirs), retries)
	if compared == 0 {
		t.Error("no fixture's truth.json has the memory_stats_end keys")
	}
}
