// Package scale repeats the events of a real Chrome trace to make a large
// one with the same JSON shape, for benchmarks. It is the library behind
// the gentrace command and the trace package's benchmark.
package scale

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// field kinds: which counter a number is shifted by in each copy.
const (
	fTime = iota // ts: shifted by the trace's span
	fPy          // Python id, Python parent id
	fFlow        // flow id
	fExt         // External id, correlation
)

// patch is one number inside an event's text to rewrite in each copy.
type patch struct {
	start, end int // byte range of the number in the event text
	kind       int
	val        int64 // ns for fTime, the integer otherwise
}

type event struct {
	text    []byte
	patches []patch
	meta    bool // ph "M": written once
}

// Template is a trace loaded for repetition.
type Template struct {
	head   [][2][]byte // top-level members before traceEvents: name, raw value
	tail   [][2][]byte // after traceEvents
	events []event
	span   int64    // ns between copies
	step   [4]int64 // per-kind shift per copy (span for time)
}

// Events is the number of events in one copy.
func (t *Template) Events() int { return len(t.events) }

// Load reads a Chrome trace in object form, .json or .json.gz.
func Load(r io.Reader) (*Template, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		r = zr
	} else {
		r = br
	}
	dec := jsontext.NewDecoder(r, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, errors.New("want a trace in object form")
	}
	t := &Template{}
	var minTS, maxEnd int64 = 1<<63 - 1, -1 << 63
	var maxID [4]int64
	seenEvents := false
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		name = name.Clone()
		if string(name) != `"traceEvents"` {
			v, err := dec.ReadValue()
			if err != nil {
				return nil, err
			}
			m := [2][]byte{name, v.Clone()}
			if seenEvents {
				t.tail = append(t.tail, m)
			} else {
				t.head = append(t.head, m)
			}
			continue
		}
		seenEvents = true
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		for dec.PeekKind() != ']' {
			v, err := dec.ReadValue()
			if err != nil {
				return nil, err
			}
			ev, err := parseEvent(v.Clone())
			if err != nil {
				return nil, err
			}
			for _, p := range ev.patches {
				if p.kind == fTime {
					minTS = min(minTS, p.val)
				} else {
					maxID[p.kind] = max(maxID[p.kind], p.val)
				}
			}
			if end := eventEnd(ev); end > maxEnd {
				maxEnd = end
			}
			t.events = append(t.events, ev)
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
	}
	if len(t.events) == 0 {
		return nil, errors.New("no events")
	}
	t.span = maxEnd - minTS + 1_000_000 // 1 ms between copies
	t.step = [4]int64{t.span, maxID[fPy] + 1, maxID[fFlow] + 1, maxID[fExt] + 1}
	return t, nil
}

// eventEnd is ts+dur of an event, in ns; dur is read from the text.
func eventEnd(ev event) int64 {
	var end int64
	for _, p := range ev.patches {
		if p.kind == fTime {
			end = p.val
		}
	}
	return end + durOf(ev.text)
}

// parseEvent finds the numbers to patch in one event object.
func parseEvent(text []byte) (event, error) {
	ev := event{text: text}
	dec := jsontext.NewDecoder(bytes.NewReader(text), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if _, err := dec.ReadToken(); err != nil {
		return ev, err
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return ev, err
		}
		key := string(name)
		switch key {
		case `"ph"`:
			v, err := dec.ReadValue()
			if err != nil {
				return ev, err
			}
			ev.meta = string(v) == `"M"`
		case `"ts"`, `"id"`:
			v, err := dec.ReadValue()
			if err != nil {
				return ev, err
			}
			end := int(dec.InputOffset())
			p := patch{start: end - len(v), end: end}
			if key == `"ts"` {
				p.kind, p.val, err = fTime, micros(v), nil
			} else {
				p.kind = fFlow
				p.val, err = strconv.ParseInt(string(v), 10, 64)
			}
			if err == nil {
				ev.patches = append(ev.patches, p)
			}
		case `"args"`:
			if dec.PeekKind() != '{' {
				if err := dec.SkipValue(); err != nil {
					return ev, err
				}
				continue
			}
			if err := argPatches(dec, &ev); err != nil {
				return ev, err
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return ev, err
			}
		}
	}
	return ev, nil
}

func argPatches(dec *jsontext.Decoder, ev *event) error {
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return err
		}
		kind := -1
		switch string(name) {
		case `"Python id"`, `"Python parent id"`:
			kind = fPy
		case `"External id"`, `"correlation"`:
			kind = fExt
		}
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if kind < 0 {
			continue
		}
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			end := int(dec.InputOffset())
			ev.patches = append(ev.patches, patch{start: end - len(v), end: end, kind: kind, val: n})
		}
	}
	_, err := dec.ReadToken()
	return err
}

// Write writes copies of the events until at least target bytes are
// written, and returns the bytes written and the number of copies.
func (t *Template) Write(w io.Writer, target int64) (int64, int, error) {
	cw := &countWriter{w: w}
	io.WriteString(cw, "{")
	for _, m := range t.head {
		fmt.Fprintf(cw, "\n  %s: %s,", m[0], m[1])
	}
	io.WriteString(cw, "\n  \"traceEvents\": [")
	buf := make([]byte, 0, 4096)
	first, copies := true, 0
	for ; copies == 0 || cw.n < target; copies++ {
		for _, ev := range t.events {
			if ev.meta && copies > 0 {
				continue
			}
			buf = buf[:0]
			if !first {
				buf = append(buf, ',')
			}
			first = false
			buf = append(buf, "\n  "...)
			buf = t.appendEvent(buf, ev, int64(copies))
			if _, err := cw.Write(buf); err != nil {
				return cw.n, copies, err
			}
		}
	}
	io.WriteString(cw, "\n  ]")
	for _, m := range t.tail {
		fmt.Fprintf(cw, ",\n  %s: %s", m[0], m[1])
	}
	io.WriteString(cw, "\n}\n")
	return cw.n, copies, cw.err
}

// appendEvent appends the event text with its numbers shifted for copy k.
func (t *Template) appendEvent(buf []byte, ev event, k int64) []byte {
	pos := 0
	for _, p := range ev.patches {
		buf = append(buf, ev.text[pos:p.start]...)
		if p.kind == fTime {
			ns := p.val + k*t.step[fTime]
			buf = strconv.AppendInt(buf, ns/1000, 10)
			buf = append(buf, '.', byte('0'+ns%1000/100), byte('0'+ns%100/10), byte('0'+ns%10))
		} else {
			buf = strconv.AppendInt(buf, p.val+k*t.step[p.kind], 10)
		}
		pos = p.end
	}
	return append(buf, ev.text[pos:]...)
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// micros reads a µs number ("5116046336852.673") as integer ns.
func micros(v []byte) int64 {
	whole, frac, _ := bytes.Cut(v, []byte("."))
	w, err := strconv.ParseInt(string(whole), 10, 64)
	if err != nil {
		f, _ := strconv.ParseFloat(string(v), 64)
		return int64(math.Round(f * 1000))
	}
	var ns int64
	for i := 0; i < 3; i++ {
		ns *= 10
		if i < len(frac) && frac[i] >= '0' && frac[i] <= '9' {
			ns += int64(frac[i] - '0')
		}
	}
	return w*1000 + ns
}

// durOf finds the "dur" number in an event's text, in ns (0 if none).
func durOf(text []byte) int64 {
	i := bytes.Index(text, []byte(`"dur":`))
	if i < 0 {
		return 0
	}
	rest := bytes.TrimLeft(text[i+len(`"dur":`):], " ")
	j := 0
	for j < len(rest) && (rest[j] == '.' || rest[j] == '-' || rest[j] >= '0' && rest[j] <= '9') {
		j++
	}
	return micros(rest[:j])
}
