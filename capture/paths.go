package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// SnapshotPaths expands the arguments of a command that reads snapshots: a
// file stands for itself, a capture run directory for its snapshot
// (snapshot.pickle, or every rank's snapshot.rankN.pickle). A sweep run
// directory is refused with what to give instead; every error names the
// path.
func SnapshotPaths(args []string) ([]string, error) {
	var out []string
	for _, path := range args {
		st, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, path)
			continue
		}
		if fileExists(filepath.Join(path, "results.json")) {
			return nil, fmt.Errorf("%s is a sweep run: summarize it with memscope summary --run %s, or give its points' snapshots (%s)",
				path, path, filepath.Join(path, "points", "*", "snapshot.pickle"))
		}
		if p := filepath.Join(path, "snapshot.pickle"); fileExists(p) {
			out = append(out, p)
			continue
		}
		ranks, _ := filepath.Glob(filepath.Join(path, "snapshot.rank*.pickle"))
		if len(ranks) == 0 {
			return nil, fmt.Errorf("%s: a directory with no snapshot.pickle or snapshot.rankN.pickle (memscope capture writes them): give a snapshot file", path)
		}
		sort.Strings(ranks)
		out = append(out, ranks...)
	}
	return out, nil
}

// fileExists reports whether p is a regular file.
func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
