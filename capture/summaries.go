package capture

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteRankSummaries writes, beside each rank's snapshot in the capture
// run directory dir, the summary document summarize makes of it
// (summary.json, or summary.rankN.json of several ranks), so that
// 'memscope ranks' compares a job's ranks from a few KB each without
// moving the snapshots. A rank whose summary could not be made or written
// is skipped; the errors say which, for warnings.
func WriteRankSummaries(dir string, summarize func(snapshot string) ([]byte, error)) []error {
	rd, err := ReadRun(dir)
	if err != nil {
		return []error{fmt.Errorf("%s: no rank summaries written: %w", dir, err)}
	}
	var errs []error
	for _, r := range rd.Ranks {
		snap := filepath.Join(dir, filepath.Base(r.Files["snapshot"]))
		if r.Files["snapshot"] == "" || !fileExists(snap) {
			continue
		}
		b, err := summarize(snap)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: no summary written: %w", snap, err))
			continue
		}
		out := filepath.Join(dir, RankFile("summary", ".json", r.Rank, r.World))
		if err := os.WriteFile(out, b, 0o644); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", out, err))
		}
	}
	return errs
}
