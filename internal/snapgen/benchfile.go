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
	return benchFile(b, root, os.Getenv("MEMSCOPE_BENCH_SNAPSHOT"), Options{})
}

// BenchFileRealistic is BenchFile for a file of realistic shape
// (RealisticOptions: the first entries define most frames, as in real
// captures): $MEMSCOPE_BENCH_REALISTIC, or about 64 MB generated.
func BenchFileRealistic(b *testing.B, root string) (string, int64) {
	b.Helper()
	return benchFile(b, root, os.Getenv("MEMSCOPE_BENCH_REALISTIC"), RealisticOptions())
}

func benchFile(b *testing.B, root, path string, opt Options) (string, int64) {
	b.Helper()
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
		if _, err := WriteOptions(w, src, 64<<20, opt); err != nil {
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
