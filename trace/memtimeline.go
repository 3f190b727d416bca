package trace

import (
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
)

// Category is a memory category of torch's memory profiler
// (torch/profiler/_memory_profiler.py), in its export index order.
type Category int

// Categories, in the order of export_memory_timeline's columns.
const (
	Parameter Category = iota
	OptimizerState
	Input
	Temporary
	Activation
	Gradient
	AutogradDetail
	Unknown
	NumCategories
)

var categoryNames = [NumCategories]string{
	"PARAMETER", "OPTIMIZER_STATE", "INPUT", "TEMPORARY", "ACTIVATION", "GRADIENT", "AUTOGRAD_DETAIL", "UNKNOWN",
}

func (c Category) String() string {
	if c >= 0 && c < NumCategories {
		return categoryNames[c]
	}
	return fmt.Sprintf("Category(%d)", int(c))
}

// Sizes is live bytes per category.
type Sizes [NumCategories]int64

// Total sums the categories.
func (s Sizes) Total() int64 {
	var n int64
	for _, v := range s {
		n += v
	}
	return n
}

// CategoryTimeline is export_memory_timeline's series: live bytes per
// category after each distinct time, on the one device it was exported for.
type CategoryTimeline struct {
	Name    string
	Raw     bool    // read from a .raw.json.gz event list and accumulated here
	TimesUS []int64 // epoch µs, non-decreasing
	Bytes   []Sizes // Bytes[i]: live bytes per category at TimesUS[i]
}

// At returns the bytes per category at epoch µs us: those of the last point
// at or before us, zeros before the first.
func (c *CategoryTimeline) At(us int64) Sizes {
	i, found := slices.BinarySearch(c.TimesUS, us)
	for found && i+1 < len(c.TimesUS) && c.TimesUS[i+1] == us {
		i++
	}
	if !found {
		i--
	}
	if i < 0 {
		return Sizes{}
	}
	return c.Bytes[i]
}

// Peak returns the index of the first point with the highest total.
func (c *CategoryTimeline) Peak() (int, int64) {
	best, val := -1, int64(math.MinInt64)
	for i, s := range c.Bytes {
		if t := s.Total(); t > val {
			best, val = i, t
		}
	}
	return best, max(val, 0)
}

// OpenMemoryTimeline reads a file written by prof.export_memory_timeline:
// "[times, sizes]" JSON (.json, or gzip-compressed) or the raw event list
// of a .raw.json.gz ([t_ns, action, numbytes, category] rows). The form is
// recognised from the content.
func OpenMemoryTimeline(path string) (*CategoryTimeline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeMemoryTimeline(f, filepath.Base(path))
}

// DecodeMemoryTimeline is OpenMemoryTimeline on a reader.
func DecodeMemoryTimeline(r io.Reader, name string) (*CategoryTimeline, error) {
	in, gz, err := maybeGunzip(r)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", name, err)
	}
	return decodeTimeline(in, gz, name)
}

// decodeTimeline decodes the (decompressed) timeline in.
func decodeTimeline(in io.Reader, gz bool, name string) (*CategoryTimeline, error) {
	d := newDecoder(in, name)
	d.gz = gz
	ct, err := d.memoryTimeline()
	if err != nil {
		return nil, err
	}
	ct.Name = name
	return ct, nil
}

func (d *decoder) memoryTimeline() (*CategoryTimeline, error) {
	const want = "want export_memory_timeline output ([times, sizes] or [[t_ns, action, bytes, category], …])"
	if k := d.dec.PeekKind(); k != '[' {
		if _, err := d.dec.ReadToken(); err == io.EOF {
			return nil, d.errorf(0, "empty file, %s", want)
		}
		return nil, d.errorf(d.dec.InputOffset(), "not a memory timeline: top-level value is %s, %s", kindName(k), want)
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return nil, d.wrap(err, "reading the timeline")
	}
	var first []int64
	if d.dec.PeekKind() == '[' {
		var err error
		if first, err = d.readInts(nil); err != nil {
			return nil, err
		}
	} else if d.dec.PeekKind() != ']' {
		return nil, d.errorf(d.dec.InputOffset(), "not a memory timeline: %s", want)
	}
	if d.dec.PeekKind() == '[' {
		// The second element decides: rows of numbers (raw) or the list of
		// size rows ([times, sizes]).
		if _, err := d.dec.ReadToken(); err != nil {
			return nil, d.wrap(err, "reading the timeline")
		}
		if d.dec.PeekKind() == '[' || d.dec.PeekKind() == ']' {
			return d.coalescedTimeline(first)
		}
		row, err := d.readIntsOpened(nil)
		if err != nil {
			return nil, err
		}
		return d.rawTimeline(first, row)
	}
	if first == nil {
		return &CategoryTimeline{}, d.closeArray()
	}
	return d.rawTimeline(first, nil)
}

// coalescedTimeline reads the sizes list of [times, sizes] (its '[' read).
func (d *decoder) coalescedTimeline(times []int64) (*CategoryTimeline, error) {
	ct := &CategoryTimeline{TimesUS: times, Bytes: make([]Sizes, 0, len(times))}
	for d.dec.PeekKind() == '[' {
		off := d.dec.InputOffset()
		row, err := d.readInts(nil)
		if err != nil {
			return nil, err
		}
		if len(row) != int(NumCategories)+1 {
			return nil, d.errorf(off, "memory timeline size row has %d columns, want %d", len(row), NumCategories+1)
		}
		var s Sizes
		copy(s[:], row[1:]) // column 0 is an unused baseline
		ct.Bytes = append(ct.Bytes, s)
	}
	if err := d.closeArray(); err != nil {
		return nil, err
	}
	if len(ct.Bytes) != len(ct.TimesUS) {
		return nil, d.errorf(d.dec.InputOffset(), "memory timeline has %d times but %d size rows", len(ct.TimesUS), len(ct.Bytes))
	}
	return ct, d.closeArray()
}

// rawTimeline accumulates raw rows into the series torch's
// _coalesce_timeline builds from the same events: a new point whenever the
// time in µs changes, times int(t_ns / 1000) computed in float as Python
// does, and pre-existing rows (t = -1) placed at the earliest time.
func (d *decoder) rawTimeline(rows ...[]int64) (*CategoryTimeline, error) {
	ct := &CategoryTimeline{Raw: true}
	var r big.Rat
	tmin := int64(-1)
	add := func(row []int64) error {
		if len(row) != 4 {
			return d.errorf(d.dec.InputOffset(), "memory timeline raw row has %d fields, want 4 (t_ns, action, bytes, category)", len(row))
		}
		t, cat := row[0], row[3]
		if cat < 0 || cat >= int64(NumCategories) {
			return d.errorf(d.dec.InputOffset(), "memory timeline raw row has category %d, want 0..%d", cat, NumCategories-1)
		}
		if t != -1 {
			t = int64(math.Trunc(divRound(&r, t, 1000)))
		}
		if tmin == -1 || (t < tmin && t > 0) {
			tmin = t
		}
		if n := len(ct.TimesUS); n == 0 || t != ct.TimesUS[n-1] {
			var prev Sizes
			if n > 0 {
				prev = ct.Bytes[n-1]
			}
			ct.TimesUS = append(ct.TimesUS, t)
			ct.Bytes = append(ct.Bytes, prev)
		}
		ct.Bytes[len(ct.Bytes)-1][cat] += row[2]
		return nil
	}
	for _, row := range rows {
		if row != nil {
			if err := add(row); err != nil {
				return nil, err
			}
		}
	}
	for d.dec.PeekKind() == '[' {
		row, err := d.readInts(nil)
		if err != nil {
			return nil, err
		}
		if err := add(row); err != nil {
			return nil, err
		}
	}
	if err := d.closeArray(); err != nil {
		return nil, err
	}
	for i, t := range ct.TimesUS {
		if t < 0 {
			ct.TimesUS[i] = tmin
		}
	}
	return ct, nil
}

// readInts reads an array of integers, appending to dst.
func (d *decoder) readInts(dst []int64) ([]int64, error) {
	if _, err := d.dec.ReadToken(); err != nil {
		return nil, d.wrap(err, "reading an array")
	}
	return d.readIntsOpened(dst)
}

// readIntsOpened is readInts after the opening '['.
func (d *decoder) readIntsOpened(dst []int64) ([]int64, error) {
	for d.dec.PeekKind() != ']' {
		off := d.dec.InputOffset()
		v, err := d.dec.ReadValue()
		if err != nil {
			return nil, d.wrap(err, "reading an array")
		}
		n, ok := parseInt(v)
		if !ok || v[0] == '"' {
			return nil, d.errorf(off, "memory timeline value %.30s is not a number", v)
		}
		dst = append(dst, n)
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return nil, d.wrap(err, "reading an array")
	}
	return dst, nil
}

// closeArray reads the ']' closing the current array.
func (d *decoder) closeArray() error {
	if k := d.dec.PeekKind(); k != ']' {
		if k == 0 {
			_, err := d.dec.ReadToken()
			return d.wrap(err, "reading the timeline")
		}
		return d.errorf(d.dec.InputOffset(), "memory timeline: unexpected %s, want ']'", kindName(k))
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return d.wrap(err, "reading the timeline")
	}
	return nil
}

// Sample is a timeline's live bytes at one moment.
type Sample struct {
	TimeUS int64 // the moment asked about, epoch µs
	// Covered is true when the moment lies within the timeline, from its
	// first point to its last; outside it Bytes is zeros before and the
	// last point after, and says nothing about that moment.
	Covered bool
	Bytes   Sizes
	// FirstUS and LastUS are the times of the timeline's first and last
	// points (0 for an empty timeline).
	FirstUS, LastUS int64
}

// Sample returns the bytes per category at epoch µs us (see At).
func (c *CategoryTimeline) Sample(us int64) Sample {
	s := Sample{TimeUS: us, Bytes: c.At(us)}
	if n := len(c.TimesUS); n > 0 {
		s.FirstUS, s.LastUS = c.TimesUS[0], c.TimesUS[n-1]
		s.Covered = us >= s.FirstUS && us <= s.LastUS
	}
	return s
}

// TimelineSummary is what a reader asks of a category timeline first:
// its span, its peak by category, each category's own maximum and the end.
type TimelineSummary struct {
	Points         int
	StartUS, EndUS int64 // epoch µs of the first and last point
	// PeakIndex is the first point with the highest total (-1 for an empty
	// timeline), PeakUS its time, AtPeak its bytes.
	PeakIndex int
	PeakUS    int64
	AtPeak    Sizes
	Max       Sizes // each category's highest value over the timeline
	End       Sizes // the last point
}

// Summary computes the TimelineSummary.
func (c *CategoryTimeline) Summary() TimelineSummary {
	s := TimelineSummary{Points: len(c.TimesUS), PeakIndex: -1}
	if len(c.TimesUS) == 0 || len(c.Bytes) != len(c.TimesUS) {
		return s
	}
	s.StartUS, s.EndUS = c.TimesUS[0], c.TimesUS[len(c.TimesUS)-1]
	s.PeakIndex, _ = c.Peak()
	s.PeakUS, s.AtPeak = c.TimesUS[s.PeakIndex], c.Bytes[s.PeakIndex]
	s.End = c.Bytes[len(c.Bytes)-1]
	s.Max = c.Bytes[0]
	for _, b := range c.Bytes {
		for k, v := range b {
			s.Max[k] = max(s.Max[k], v)
		}
	}
	return s
}

// Keep returns the indexes of at most about n points that keep the shape
// of the timeline: all of them when there are n or fewer, else per run of
// points its first and last and those with the lowest and highest total,
// so the peak and every valley stay exact. Indexes are increasing.
func (c *CategoryTimeline) Keep(n int) []int {
	total := len(c.Bytes)
	out := []int{}
	if total <= max(n, 4) {
		for i := range total {
			out = append(out, i)
		}
		return out
	}
	runs := max(n/4, 1)
	for r := range runs {
		lo, hi := r*total/runs, (r+1)*total/runs
		if lo >= hi {
			continue
		}
		minI, maxI := lo, lo
		for i := lo; i < hi; i++ {
			t := c.Bytes[i].Total()
			if t < c.Bytes[minI].Total() {
				minI = i
			}
			if t > c.Bytes[maxI].Total() {
				maxI = i
			}
		}
		idx := []int{lo, minI, maxI, hi - 1}
		slices.Sort(idx)
		for _, i := range slices.Compact(idx) {
			out = append(out, i)
		}
	}
	return out
}
