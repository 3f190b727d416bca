package snapshot_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// BenchmarkDecode decodes a large snapshot. Targets (DESIGN.md): ≥ 250 MB/s
// on one core (-cpu 1) and a retained heap ≤ 1.5 × the file size. Run on a
// 1 GB file with:
//
//	go run ./snapshot/internal/gensnap -o bench-data/big.pickle -size 1GiB
//	MEMSCOPE_BENCH_SNAPSHOT=$PWD/bench-data/big.pickle go test ./snapshot -run '^$' -bench Decode -cpu 1 -benchtime 3x
func BenchmarkDecode(b *testing.B) {
	path, size := snapgen.BenchFile(b, "..")
	benchDecode(b, path, size)
}

// BenchmarkDecodeRealistic is BenchmarkDecode on a file of realistic shape
// (gensnap -realistic: its first entries carry most frame definitions, as
// a real capture's do, so an estimate of the entries from the first ones
// comes out short; issue 34):
//
//	go run ./snapshot/internal/gensnap -o bench-data/r1g.pickle -size 1GiB -realistic
//	MEMSCOPE_BENCH_REALISTIC=$PWD/bench-data/r1g.pickle go test ./snapshot -run '^$' -bench DecodeRealistic -cpu 1 -benchtime 3x
func BenchmarkDecodeRealistic(b *testing.B) {
	path, size := snapgen.BenchFileRealistic(b, "..")
	benchDecode(b, path, size)
}

// BenchmarkDecodeReal is BenchmarkDecode on a capture torch wrote
// (capture/bench/real_capture.py: a Llama trained with AdamW, torch's
// default stacks, Python and C++), named by MEMSCOPE_BENCH_REAL:
//
//	MEMSCOPE_BENCH_REAL=$PWD/bench-data/real-97m.pickle go test ./snapshot -run '^$' -bench DecodeReal -benchtime 10x
func BenchmarkDecodeReal(b *testing.B) {
	path := os.Getenv("MEMSCOPE_BENCH_REAL")
	if path == "" {
		b.Skip("set MEMSCOPE_BENCH_REAL to a capture (capture/bench/real_capture.py)")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	benchDecode(b, path, fi.Size())
}

func benchDecode(b *testing.B, path string, size int64) {
	b.SetBytes(size)
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		s, err := snapshot.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		events = 0
		for _, t := range s.Traces {
			events += len(t)
		}
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")

	// Heap the decoded snapshot keeps, per byte of file.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := snapshot.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(s)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(size), "heap-bytes/file-byte")
}
