// Command gensnap writes a large allocator snapshot for benchmarks by
// repeating the device traces of a real one:
//
//	go run ./snapshot/internal/gensnap -o bench-data/big.pickle -size 1GB -from fixtures/<x>/snapshot.pickle
//
// Without -from it uses snapgen.DefaultSource: a real fixture when there is one,
// else the synthetic snapshot in snapshot/testdata.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/memscope/memscope/internal/snapgen"
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
	size := fs.String("size", "1GB", "minimum output size (e.g. 64MB, 1GB; binary units)")
	from := fs.String("from", "", "source snapshot (default: first fixtures/*/snapshot.pickle, else snapshot/testdata/synthetic.pickle)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("-o is required")
	}
	minBytes, err := parseSize(*size)
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
	st, err := snapgen.Write(w, s, minBytes)
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

// parseSize reads sizes like 64MB or 1GiB (binary units either way).
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GIB", 1 << 30}, {"GB", 1 << 30}, {"G", 1 << 30}, {"MIB", 1 << 20}, {"MB", 1 << 20}, {"M", 1 << 20},
		{"KIB", 1 << 10}, {"KB", 1 << 10}, {"K", 1 << 10}, {"B", 1}}
	u := strings.ToUpper(strings.TrimSpace(s))
	for _, x := range units {
		if strings.HasSuffix(u, x.suffix) {
			n, err := strconv.ParseFloat(strings.TrimSuffix(u, x.suffix), 64)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("bad size %q", s)
			}
			return int64(n * float64(x.mult)), nil
		}
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n, nil
}
