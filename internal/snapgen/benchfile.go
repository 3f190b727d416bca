package snapgen

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// BenchFile returns the snapshot a benchmark reads: the file named by
// $MEMSCOPE_BENCH_SNAPSHOT, or one of about 64 MB generated from the
// fixtures under root into the benchmark's temporary folder. It returns
// the path and the file's size.
func BenchFile(b *testing.B, root string) (string, int64) {
	b.Helper()
	path := os.Getenv("MEMSCOPE_BENCH_SNAPSHOT")
	if path == "" {
		src, err := snapshot.Open(DefaultSource(root))
		if err != nil {
			b.Fatal(err)
		}
		path = filepath.Join(b.TempDir(), "bench.pickle")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		if _, err := Write(w, src, 64<<20); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, st.Size()
}
