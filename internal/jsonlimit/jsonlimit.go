// Package jsonlimit bounds the longest token of a JSON stream. JSON
// decoders (encoding/json's Decoder, jsontext) hold a whole token in their
// buffer before handing it on, so one string of gigabytes in a small gzip
// file is gigabytes of memory whatever the caller does with it; Reader
// passes the stream through and fails at the first token longer than its
// limit, naming the byte where the token starts.
package jsonlimit

import (
	"bytes"
	"fmt"
	"io"

	"github.com/memscope/memscope/internal/units"
)

// Reader reads JSON from R, failing once a token (a string, a number, a
// literal) runs past Max bytes. The error sticks.
type Reader struct {
	R   io.Reader
	Max int64
	// What names the limit in the error ("the --max-memory limit").
	What string

	off   int64 // stream offset of the next byte read from R
	start int64 // where the current token began
	run   int64 // bytes of the current token so far
	inStr bool
	esc   bool
	err   error
}

// structural marks the bytes that end a token outside strings.
var structural = [256]bool{'{': true, '}': true, '[': true, ']': true, ',': true, ':': true,
	' ': true, '\t': true, '\n': true, '\r': true}

// Err returns the limit error, if one was returned.
func (r *Reader) Err() error { return r.err }

func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.R.Read(p)
	b := p[:n]
	for i := 0; i < len(b); {
		if r.inStr {
			if r.esc { // the byte after a backslash
				r.esc = false
				r.run++
				i++
				continue
			}
			// Jump to the next quote, or to a backslash before it.
			j := bytes.IndexByte(b[i:], '"')
			span := b[i:]
			if j >= 0 {
				span = span[:j]
			}
			if k := bytes.IndexByte(span, '\\'); k >= 0 {
				r.run += int64(k + 1)
				i += k + 1
				r.esc = true
			} else if j < 0 {
				r.run += int64(len(span))
				i = len(b)
			} else {
				r.run += int64(j)
				i += j + 1
				if r.run <= r.Max {
					r.inStr, r.run = false, 0
					continue
				}
			}
		} else {
			c := b[i]
			switch {
			case c == '"':
				r.inStr, r.run, r.start = true, 0, r.off+int64(i)
			case structural[c]:
				r.run = 0
			default:
				if r.run == 0 {
					r.start = r.off + int64(i)
				}
				r.run++
			}
			i++
		}
		if r.run > r.Max {
			r.err = fmt.Errorf("a JSON token at byte %d is longer than %s, %s (a hostile or damaged file?)",
				r.start, units.Bytes(r.Max), r.What)
			r.off += int64(i)
			return i, r.err
		}
	}
	r.off += int64(n)
	return n, err
}
