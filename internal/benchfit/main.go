// Command benchfit reads `go test -bench` output whose sub-benchmarks are
// named DIM=N (as BenchmarkGrowth's are) and prints, per dimension, the
// fastest time and the bytes allocated per op at each N, and the growth
// exponents fitted to them: the least-squares slope of ln(value) against
// ln(N). An exponent of 1 is linear growth; 2 quadratic.
//
//	go test ./cmd/memscope -run '^$' -bench Growth -benchtime 3x -count 3 | go run ./internal/benchfit
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
)

var line = regexp.MustCompile(`^Benchmark\S*?/([^/=\s]+)=(\d+)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+(\d+) B/op)?`)

type point struct {
	n       float64
	ns, bop float64
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchfit:", err)
		os.Exit(2)
	}
}

func run(r io.Reader, w io.Writer) error {
	dims := map[string]map[float64]*point{}
	var order []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.ParseFloat(m[2], 64)
		ns, _ := strconv.ParseFloat(m[3], 64)
		bop, _ := strconv.ParseFloat(m[4], 64)
		if dims[m[1]] == nil {
			dims[m[1]] = map[float64]*point{}
			order = append(order, m[1])
		}
		p := dims[m[1]][n]
		if p == nil {
			p = &point{n: n, ns: ns, bop: bop}
			dims[m[1]][n] = p
		}
		p.ns, p.bop = min(p.ns, ns), min(p.bop, bop)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(order) == 0 {
		return fmt.Errorf("no DIM=N benchmark lines in the input")
	}
	fmt.Fprintln(w, "| dimension | sizes: fastest time, MB allocated per op | exponent (time) | exponent (bytes) |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, d := range order {
		var ps []point
		for _, p := range dims[d] {
			ps = append(ps, *p)
		}
		slices.SortFunc(ps, func(a, b point) int { return int(a.n - b.n) })
		cells := ""
		for i, p := range ps {
			if i > 0 {
				cells += "; "
			}
			cells += fmt.Sprintf("%s: %s, %.1f", strconv.FormatFloat(p.n, 'f', -1, 64), dur(p.ns), p.bop/1e6)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", d, cells,
			slope(ps, func(p point) float64 { return p.ns }), slope(ps, func(p point) float64 { return p.bop }))
	}
	return nil
}

// slope fits ln(v) = a + k ln(n) and returns k, or "-" with fewer than two
// usable points.
func slope(ps []point, v func(point) float64) string {
	var xs, ys []float64
	for _, p := range ps {
		if y := v(p); y > 0 && p.n > 0 {
			xs, ys = append(xs, math.Log(p.n)), append(ys, math.Log(y))
		}
	}
	if len(xs) < 2 {
		return "-"
	}
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	mx, my = mx/float64(len(xs)), my/float64(len(xs))
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	return fmt.Sprintf("%.2f", sxy/sxx)
}

func dur(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	}
	return fmt.Sprintf("%.0f µs", ns/1e3)
}
