package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// BenchmarkGrowth runs `memscope summary` end to end (read, decode, analyse,
// render) on inputs that grow in one dimension at a time, each at three
// sizes four times apart, for the fitted growth exponents in BENCHMARKS.md:
//
//	go test ./cmd/memscope -run '^$' -bench Growth -benchtime 3x -count 3 | tee growth.txt
//	go run ./internal/benchfit < growth.txt
//
// The sub-benchmark names say the dimension and its size: events (trace
// entries, with the steps and annotations they carry), stacks (distinct
// tracebacks), frames (per traceback), segments and blocks (per segment)
// held from before recording, devices and ranks (summary --run of a run
// directory of N ranks), and the extreme shapes of snapgen: segments
// allocated and freed, split segments that each raise the reserved peak,
// blocks at falling addresses, OOMs and harness steps.
func BenchmarkGrowth(b *testing.B) { growth(b, "summary", nil) }

// BenchmarkGrowthWhatIf is BenchmarkGrowth for whatif, which drives the
// allocator model by every request and checks it against the recording,
// over the dimensions that size the allocator's state or its work (ranks
// and devices are summary's loops, the same for every command).
func BenchmarkGrowthWhatIf(b *testing.B) {
	growth(b, "whatif", func(dim string) bool { return dim != "ranks" && dim != "devices" && dim != "devices-extreme" })
}

func growth(b *testing.B, command string, keep func(dim string) bool) {
	src, err := snapshot.Open(filepath.Join("..", "..", "fixtures", "plain-trainer-late", "snapshot.pickle"))
	if err != nil {
		b.Fatal(err)
	}
	shaped := func(opt snapgen.Options, minBytes int64) func(b *testing.B) string {
		return func(b *testing.B) string {
			path := filepath.Join(b.TempDir(), "snapshot.pickle")
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriter(f)
			if _, err := snapgen.WriteOptions(w, src, minBytes, opt); err != nil {
				b.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			return path
		}
	}
	extreme := func(build func(int) *snapshot.Snapshot, n int) func(b *testing.B) string {
		return func(b *testing.B) string { return writeSnap(b, build(n)) }
	}
	type input struct {
		dim  string
		n    int
		make func(b *testing.B) string
		run  bool // a run directory: summary --run
	}
	var inputs []input
	for _, mb := range []int{8, 32, 128} {
		inputs = append(inputs, input{"events-MB", mb, shaped(snapgen.Options{}, int64(mb)<<20), false})
	}
	for _, n := range []int{16, 64, 256} {
		inputs = append(inputs, input{"stacks", n, shaped(snapgen.Options{Stacks: n, Repeats: 40}, 0), false})
	}
	for _, n := range []int{8, 32, 128} {
		inputs = append(inputs, input{"frames", n, shaped(snapgen.Options{Frames: n, Repeats: 10}, 0), false})
	}
	for _, n := range []int{2_000, 8_000, 32_000} {
		inputs = append(inputs, input{"held-segments", n, shaped(snapgen.Options{Segments: n, Repeats: 4}, 0), false})
	}
	for _, n := range []int{64, 256, 1024} {
		inputs = append(inputs, input{"blocks-per-segment", n, shaped(snapgen.Options{Segments: 128, Blocks: n, Repeats: 4}, 0), false})
	}
	for _, n := range []int{2, 8, 32} {
		inputs = append(inputs, input{"devices", n, shaped(snapgen.Options{Devices: n, Repeats: 4}, 0), false})
	}
	for _, n := range []int{4, 16, 64} {
		inputs = append(inputs, input{"ranks", n, func(b *testing.B) string { return runDirOfRanks(b, n) }, true})
	}
	for _, n := range []int{10_000, 40_000, 160_000} {
		inputs = append(inputs, input{"segments-alloc-free", n, extreme(snapgen.ManySegments, n), false})
	}
	for _, n := range []int{10_000, 40_000, 160_000} {
		inputs = append(inputs, input{"split-segments", n, extreme(snapgen.SplitSegments, n), false})
	}
	for _, n := range []int{50_000, 200_000, 800_000} {
		inputs = append(inputs, input{"falling-blocks", n, extreme(snapgen.FallingBlocks, n), false})
	}
	for _, n := range []int{5_000, 20_000, 80_000} {
		inputs = append(inputs, input{"ooms", n, extreme(snapgen.ManyOOMs, n), false})
	}
	for _, n := range []int{1_000, 4_000, 16_000} {
		inputs = append(inputs, input{"steps", n, extreme(snapgen.Staircase, n), false})
	}
	for _, n := range []int{5_000, 20_000, 80_000} {
		inputs = append(inputs, input{"devices-extreme", n, extreme(snapgen.ManyDevices, n), false})
	}
	for _, in := range inputs {
		if keep != nil && !keep(in.dim) {
			continue
		}
		b.Run(fmt.Sprintf("%s=%d", in.dim, in.n), func(b *testing.B) {
			path := in.make(b)
			args := []string{command, path}
			if in.run {
				args = []string{command, "--run", path}
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := run(args, io.Discard, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// runDirOfRanks copies fixtures/capture-ddp into a run directory of n
// ranks, rank i a copy of rank i mod 2.
func runDirOfRanks(b *testing.B, n int) string {
	src := filepath.Join("..", "..", "fixtures", "capture-ddp")
	dir := b.TempDir()
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			b.Fatal(err)
		}
		return string(data)
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("run.json", strings.Replace(read("run.json"), `"nproc": 2`, fmt.Sprintf(`"nproc": %d`, n), 1))
	for r := range n {
		from := fmt.Sprintf("rank%d", r%2)
		to := fmt.Sprintf("rank%d", r)
		capture := read("capture." + from + ".json")
		capture = strings.ReplaceAll(capture, from+".", to+".")
		capture = strings.Replace(capture, fmt.Sprintf(`"rank": %d`, r%2), fmt.Sprintf(`"rank": %d`, r), 1)
		write("capture."+to+".json", capture)
		write("snapshot."+to+".pickle", read("snapshot."+from+".pickle"))
		write("steps."+to+".jsonl", read("steps."+from+".jsonl"))
	}
	return dir
}
