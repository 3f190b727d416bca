package allocator

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// fixtureFiles returns every snapshot fixture of the repository, with its
// path relative to the repository root.
func fixtureFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"../fixtures/*/snapshot*.pickle", "../fixtures/*/*/*/snapshot*.pickle",
		"../fixtures/*/*/snapshot*.pickle", "../snapshot/testdata/*.pickle", "../snapshot/testdata/*.pickle.gz",
		"../snapshot/testdata/*.json"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	return files
}

func TestReplayDump(t *testing.T) {
	for _, f := range fixtureFiles(t) {
		s, err := snapshot.Open(f)
		if err != nil {
			t.Logf("%s: %v", f, err)
			continue
		}
		for _, d := range s.Devices() {
			for _, tie := range []TieBreak{TieAddress, TieSegmentCounter, TieBlockCounter} {
				rep, err := ReplayWith(s, d, ReplayOptions{TieBreak: tie})
				if err != nil {
					t.Logf("%s %s: %v", f, tie, err)
					break
				}
				t.Logf("%s %s: %s", f, tie, rep)
			}
		}
	}
}
