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

// DiffPath resolves one argument of 'memscope diff': a snapshot file
// stands for itself, a capture run directory for its snapshot
// (snapshot.pickle, or rank 0's), and a sweep run directory (results.json)
// is a sweep (isSweep, no snapshot). Errors name the path.
func DiffPath(path string) (snap string, isSweep bool, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", false, err
	}
	if !st.IsDir() {
		return path, false, nil
	}
	if _, err := os.Stat(filepath.Join(path, "results.json")); err == nil {
		return "", true, nil
	}
	for _, name := range []string{"snapshot.pickle", "snapshot.rank0.pickle"} {
		if p := filepath.Join(path, name); fileExists(p) {
			return p, false, nil
		}
	}
	return "", false, fmt.Errorf("%s: a directory with neither results.json (memscope sweep) nor snapshot.pickle (memscope capture)", path)
}

// RunTrace is the profiler trace of the capture run directory dir
// (trace.json.gz), or "" when it has none.
func RunTrace(dir string) string {
	if p := filepath.Join(dir, "trace.json.gz"); fileExists(p) {
		return p
	}
	return ""
}
