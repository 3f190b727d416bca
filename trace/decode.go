package trace

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Open reads a Chrome trace file, .json or .json.gz (gzip is recognised by
// its magic bytes, not the name).
func Open(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Decode(f, filepath.Base(path))
}

// Decode reads a Chrome trace from r; name is used in errors and kept as
// Trace.Name. It returns an error when r holds no readable trace or a trace
// without memory events; a trace damaged after some events were read is
// returned with the valid part and a Warning saying what was lost.
func Decode(r io.Reader, name string) (*Trace, error) {
	in, gz, err := maybeGunzip(r)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", name, err)
	}
	return decodeTrace(in, gz, name, fastChunk)
}

// decodeTrace decodes the (decompressed) trace in; gz says whether it was
// compressed, for error offsets. chunk picks the event path: -1 leaves
// every event to jsontext (the reference path that the differential tests
// compare the others with), 0 the fast event scanner on this goroutine,
// n > 0 the fast scanner on chunks of about n bytes scanned in parallel
// (see parallelEvents).
func decodeTrace(in io.Reader, gz bool, name string, chunk int) (*Trace, error) {
	d := newDecoder(in, name)
	d.gz, d.chunk = gz, chunk
	if err := d.decodeTop(); err != nil && err != errStopped {
		return nil, err
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	return d.t, nil
}

// maybeGunzip returns a buffered reader over r, decompressed when r starts
// with the gzip magic bytes.
func maybeGunzip(r io.Reader) (io.Reader, bool, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	magic, err := br.Peek(2)
	if err != nil && err != io.EOF {
		return nil, false, err
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, true, fmt.Errorf("reading gzip header: %w", err)
		}
		return zr, true, nil
	}
	return br, false, nil
}

// decoder holds the state of one Decode call.
type decoder struct {
	name  string
	gz    bool
	chunk int // the event path (see decodeTrace)
	dec   *jsontext.Decoder
	src   io.Reader // what dec reads
	base  int64     // added to dec's offsets (see fastEvents' hand-off)
	t     *Trace

	strs    map[string]StringID
	threads map[string]ThreadID
	key     []byte // scratch for thread keys
	ev      rawEvent
	flows   chunked[rawFlow]
	ops     chunked[Op]
	py      chunked[PyFunc]
	mem     chunked[MemEvent]
	calls   chunked[Call]
	events  int64 // elements of traceEvents read
	valid   int64 // of which objects with a "ph"
	sawList bool  // a traceEvents array (or top-level array) was found
	warned  map[string]bool
	cats    map[string]*int64 // event counts by category
	// nonFinite counts the events skipped for a NaN or ±Infinity where a
	// number is needed; firstNonFinite names the first.
	nonFinite      int64
	firstNonFinite string
	// damage is the warning damaged gave, when the file is damaged: the
	// cause finish names when no memory event came before it.
	damage    string
	damageOff int64

	// caches of the last lookups: consecutive events share them
	lastCat      []byte
	lastCatN     *int64
	lastThread   []byte
	lastThreadID ThreadID
}

var decoderOptions = []jsontext.Options{
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
}

// offset is the input offset of the decoder: the byte just after the last
// token or value read.
func (d *decoder) offset() int64 { return d.base + d.dec.InputOffset() }

func newDecoder(r io.Reader, name string) *decoder {
	return &decoder{
		name: name,
		dec:  jsontext.NewDecoder(r, decoderOptions...),
		src:  r,
		t: &Trace{
			Name:   name,
			Counts: EventCounts{ByCat: map[string]int64{}, Kernels: map[int64]int64{}},
		},
		strs:    map[string]StringID{},
		threads: map[string]ThreadID{},
		warned:  map[string]bool{},
		cats:    map[string]*int64{},
	}
}

// decodeTop reads the top-level value: an object with traceEvents and
// metadata in any order, or a bare array of events.
func (d *decoder) decodeTop() error {
	switch k := d.dec.PeekKind(); k {
	case '{':
		return d.decodeObject()
	case '[':
		d.sawList = true
		if err := d.decodeEvents(); err != nil {
			return err
		}
		return d.expectEnd()
	case 0:
		_, err := d.dec.ReadToken()
		if err == io.EOF {
			return d.errorf(0, "empty file, expected a Chrome trace (JSON object or array)")
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return d.wrap(err, "reading the first value")
		}
		return d.wrap(err, "not JSON")
	default:
		return d.errorf(d.offset(), "not a Chrome trace: top-level JSON value is %s, want an object with traceEvents or an array of events", kindName(k))
	}
}

func (d *decoder) decodeObject() error {
	if _, err := d.dec.ReadToken(); err != nil {
		return d.wrap(err, "reading the top-level object")
	}
	for d.dec.PeekKind() != '}' {
		k, err := d.dec.ReadToken()
		if err != nil {
			return d.damaged(err, "reading a top-level key")
		}
		key := k.String()
		if key == "traceEvents" {
			if d.dec.PeekKind() != '[' {
				return d.errorf(d.offset(), "not a Chrome trace: traceEvents is %s, want an array", kindName(d.dec.PeekKind()))
			}
			d.sawList = true
			if err := d.decodeEvents(); err != nil {
				return err
			}
			continue
		}
		if err := d.readMeta(key); err != nil {
			return d.damaged(err, fmt.Sprintf("reading top-level key %q", key))
		}
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return d.damaged(err, "closing the top-level object")
	}
	return d.expectEnd()
}

// decodeEvents reads an array of events. Damage inside it stops reading
// with a warning once at least one event was read.
func (d *decoder) decodeEvents() error {
	if _, err := d.dec.ReadToken(); err != nil {
		return d.damaged(err, "opening the event array")
	}
	if d.chunk >= 0 {
		d.fastEvents()
	}
	for d.dec.PeekKind() != ']' {
		if d.dec.PeekKind() == 0 {
			_, err := d.dec.ReadToken()
			return d.damaged(err, "reading event")
		}
		if err := d.readEvent(); err != nil {
			return d.damaged(err, "reading event")
		}
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return d.damaged(err, "closing the event array")
	}
	return nil
}

// expectEnd checks that nothing but whitespace follows the top-level value.
func (d *decoder) expectEnd() error {
	if _, err := d.dec.ReadToken(); err != io.EOF {
		off := d.offset()
		if err == nil {
			err = errors.New("data after the top-level value")
		}
		d.warnAt(off, "ignoring what follows the trace: "+oneLine(d.rebase(err)))
	}
	return nil
}

// rebase returns err with a syntax error's offset made absolute (see
// decoder.base), as its message names it.
func (d *decoder) rebase(err error) error {
	var se *jsontext.SyntacticError
	if d.base == 0 || !errors.As(err, &se) {
		return err
	}
	c := *se
	c.ByteOffset += d.base
	return &c
}

// errStopped marks a decode that ended early on damaged input but kept
// what it had read.
var errStopped = errors.New("stopped")

// damaged turns a read error into the final error, or, when events were
// already read, into a warning that ends decoding with what was kept.
func (d *decoder) damaged(err error, what string) error {
	if err == errStopped {
		return err
	}
	if d.valid == 0 {
		return d.wrap(err, what)
	}
	off, msg := d.describe(err)
	d.damage, d.damageOff = fmt.Sprintf("%s (%s, after %d events)", msg, what, d.events), off
	d.warnAt(off, fmt.Sprintf("trace damaged: %s; kept the %d events before it, the rest of the file is lost (stopped %s)", msg, d.events, what))
	return errStopped
}

// wrap makes a one-line error naming the file and the byte offset.
func (d *decoder) wrap(err error, what string) error {
	off, msg := d.describe(err)
	return &decodeError{name: d.name, gz: d.gz, off: off, msg: what + ": " + msg, err: err}
}

func (d *decoder) errorf(off int64, format string, args ...any) error {
	return &decodeError{name: d.name, gz: d.gz, off: off, msg: fmt.Sprintf(format, args...)}
}

// describe extracts the offset and a short message from a read error.
func (d *decoder) describe(err error) (int64, string) {
	off := d.offset()
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		off = d.base + se.ByteOffset
		err = se.Err
	}
	switch {
	case err == nil:
		return off, "unknown error"
	case errors.Is(err, io.ErrUnexpectedEOF), err == io.EOF:
		return off, "unexpected end of file (truncated?)"
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader):
		return off, "corrupt gzip stream: " + oneLine(err)
	}
	return off, oneLine(err)
}

type decodeError struct {
	name string
	gz   bool
	off  int64
	msg  string
	err  error
}

func (e *decodeError) Error() string {
	where := fmt.Sprintf("at byte %d", e.off)
	if e.gz {
		where += " of the decompressed stream"
	}
	return fmt.Sprintf("decoding %s %s: %s", e.name, where, e.msg)
}

func (e *decodeError) Unwrap() error { return e.err }

func (d *decoder) warn(msg string) { d.warnAt(-1, msg) }

// warnAt records a warning; repeated messages are kept once.
func (d *decoder) warnAt(off int64, msg string) {
	if d.warned[msg] || len(d.t.Warnings) >= 100 {
		return
	}
	d.warned[msg] = true
	d.t.Warnings = append(d.t.Warnings, Warning{Offset: off, Message: msg})
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "an invalid value"
}

// oneLine strips the jsontext prefix and newlines from an error message.
func oneLine(err error) string {
	s := strings.TrimPrefix(err.Error(), "jsontext: ")
	s = strings.ReplaceAll(s, "\n", " ")
	return string(bytes.TrimSpace([]byte(s)))
}
