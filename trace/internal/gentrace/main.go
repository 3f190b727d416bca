// Command gentrace writes a large Chrome trace for benchmarks by repeating
// the events of a real one (the llama-profiled fixture): each copy is
// shifted in time past the previous one, with its Python ids, flow ids and
// External ids shifted too, so the result is a long but well-formed trace
// of the same JSON shape (object form, one event per line, Kineto spacing).
//
//	go run ./trace/internal/gentrace -o bench-data/trace-1g.json -size 1GiB \
//	    -from fixtures/llama-profiled/trace.json.gz
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/trace/internal/gentrace/scale"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gentrace:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gentrace", flag.ContinueOnError)
	out := fs.String("o", "", "output file (required)")
	size := fs.String("size", "64MiB", "target size (e.g. 64MiB, 1GiB)")
	from := fs.String("from", "fixtures/llama-profiled/trace.json.gz", "trace to repeat (.json or .json.gz)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("-o is required")
	}
	target, err := units.ParseBytes(*size)
	if err != nil {
		return err
	}
	src, err := os.Open(*from)
	if err != nil {
		return err
	}
	defer src.Close()
	tmpl, err := scale.Load(src)
	if err != nil {
		return fmt.Errorf("reading %s: %w", *from, err)
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	n, copies, err := tmpl.Write(w, target)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d bytes, %d copies of %d events\n", *out, n, copies, tmpl.Events())
	return nil
}
