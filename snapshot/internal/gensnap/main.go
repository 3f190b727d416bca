// Command gensnap writes a large allocator snapshot for benchmarks by
// repeating the device traces of a real one:
//
//	go run ./snapshot/internal/gensnap -o bench-data/big.pickle -size 1GiB -from fixtures/<x>/snapshot.pickle
//
// Without -from it uses snapgen.DefaultSource: a real fixture when there is one,
// else the synthetic snapshot in snapshot/testdata. The other flags push one
// dimension at a time (snapgen.Options; BENCHMARKS.md lists them):
//
//	-stacks N      N variants of every traceback, one per repetition in turn
//	-frames N      N more library frames in every traceback
//	-nesting       every third of them a module's forward of its own per call path
//	-segments N    N more segments, held from before recording ...
//	-blocks N      ... each with N active blocks
//	-expandable    expandable segments (segment_map / segment_unmap)
//	-devices N     the trace and segments copied to N devices
//	-realistic     -stacks 64 -frames 12 -nesting -segments 256 -blocks 16, unless given
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gensnap:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gensnap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output pickle `file` (required)")
	size := fs.String("size", "1GiB", "minimum output size (e.g. 64MiB, 1GiB)")
	from := fs.String("from", "", "source snapshot (default: first fixtures/*/snapshot.pickle, else snapshot/testdata/synthetic.pickle)")
	var opt snapgen.Options
	fs.IntVar(&opt.Repeats, "repeats", 0, "write each trace exactly `N` times, whatever -size says (two files of one program at two batches, for fit)")
	fs.IntVar(&opt.Stacks, "stacks", 0, "up to `N` variants of every traceback, one per block (distinct stacks up to N × the source's)")
	fs.IntVar(&opt.Frames, "frames", 0, "add `N` library frames to every traceback")
	fs.BoolVar(&opt.Nesting, "nesting", false, "every third added frame a module's forward of its own per call path: the first step defines most frames, as in real captures")
	fs.IntVar(&opt.Segments, "segments", 0, "add `N` segments held from before recording")
	fs.IntVar(&opt.Blocks, "blocks", 0, "`N` active blocks of 64 KiB in each added segment (default 1)")
	fs.BoolVar(&opt.Expandable, "expandable", false, "expandable segments: is_expandable, segment_map/segment_unmap")
	fs.IntVar(&opt.Devices, "devices", 0, "copy the first device's trace and segments to `N` devices")
	realistic := fs.Bool("realistic", false, "the shape of a larger model's run: -stacks 64 -frames 12 -nesting -segments 256 -blocks 16 unless given")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *realistic {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, p := range map[string]*int{"stacks": &opt.Stacks, "frames": &opt.Frames, "segments": &opt.Segments, "blocks": &opt.Blocks} {
			if !set[name] {
				*p = snapgen.Realistic()[name]
			}
		}
		if !set["nesting"] {
			opt.Nesting = true
		}
	}
	if *out == "" {
		return errors.New("-o is required")
	}
	minBytes, err := units.ParseBytes(*size)
	if err != nil {
		return err
	}
	src := *from
	if src == "" {
		src = snapgen.DefaultSource(".")
	}
	s, err := snapshot.Open(src)
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	st, err := snapgen.WriteOptions(w, s, minBytes, opt)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d bytes, %d trace entries (%d repetitions of %s)\n", *out, st.Bytes, st.Events, st.Repeats, src)
	return nil
}
