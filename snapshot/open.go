package snapshot

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
)

// sniffLen is how much of the input is looked at to tell its encoding.
const sniffLen = 64 << 10

// htmlMarker precedes the base64 pickle in a _memory_viz page.
const htmlMarker = `"base64": "`

// Open reads the snapshot file at path: a pickle (protocols 2 to 5), the
// same data as JSON, a _memory_viz HTML page with the pickle embedded, or
// any of those gzipped. See Decode for the results on damaged files.
func Open(path string) (*Snapshot, error) {
	return OpenWith(path, Options{})
}

// Decode reads a snapshot from r; name is used in messages and as
// Snapshot.Source. The encoding is detected from the first bytes.
//
// Errors are one line: "decoding NAME at byte N: …", N counting bytes of
// the pickle or JSON stream (after gunzip or base64 decoding). When the
// input ends early but the segments were complete, Decode returns both the
// error and a partial Snapshot holding what was read, with a Warning that
// says what was lost; otherwise the Snapshot is nil on error.
func Decode(r io.Reader, name string) (*Snapshot, error) {
	return decodeWith(r, name, readerSize(r), Options{})
}

// readerSize returns how many bytes r holds, -1 when that is not known.
func readerSize(r io.Reader) int64 {
	size := int64(-1)
	switch r := r.(type) {
	case interface{ Len() int }: // bytes.Reader, strings.Reader, bytes.Buffer
		size = int64(r.Len())
	case *os.File:
		if st, err := r.Stat(); err == nil && st.Mode().IsRegular() {
			if cur, err := r.Seek(0, io.SeekCurrent); err == nil {
				size = st.Size() - cur
			}
		}
	}
	return size
}

func decodeWith(r io.Reader, name string, size int64, opt Options) (s *Snapshot, err error) {
	return newDecoder(name).decodeTop(r, size, opt)
}

// decodeTop decodes r with d, which is fresh, and checks the values.
func (d *decoder) decodeTop(r io.Reader, size int64, opt Options) (s *Snapshot, err error) {
	name := d.name
	d.fast.off = opt.generalOnly
	if opt.MaxMemory > 0 {
		d.budget, d.explicitBudget = opt.MaxMemory, true
	}
	defer d.unmapInput() // after the recover below: nothing points into the mapping once decoding is done
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			s = nil
			if isFault(p) && d.fast.mapped != nil {
				err = &decodeError{name: name, off: d.opOff, kind: kindFormat,
					msg: "the file got shorter while it was read (is it being written?): read it again once it is complete"}
				return
			}
			err = &decodeError{name: name, off: d.opOff, kind: kindInternal,
				msg: fmt.Sprintf("internal error (a bug, please report it): %v: %s", p,
					strings.ReplaceAll(string(debug.Stack()), "\n", " | "))}
		}
	}()
	s, err = d.decodeAny(r, size, 0)
	if s != nil {
		if cerr := d.checkValues(s); cerr != nil {
			return nil, cerr
		}
		// What the stack table and the devices will cost the analysis.
		if cerr := d.charge(int64(len(s.Devices())) * costDevice); cerr != nil {
			return nil, cerr
		}
		d.deepWarning(s)
	}
	return s, err
}

// Wrappers removed before the snapshot itself; each may be removed once.
const (
	wrapGzip = 1 << iota
	wrapHTML
)

// decodeAny sniffs the encoding of r and decodes it. wrapped says which
// wrappers were already removed.
func (d *decoder) decodeAny(r io.Reader, size int64, wrapped int) (*Snapshot, error) {
	in := &d.in
	in.reset(r, size)
	if wrapped == 0 {
		d.setBudget(size, false)
	}
	if d.maxObjs == 0 {
		d.maxObjs = 1 << 24 // unknown size
		if size >= 0 {
			d.maxObjs = maxObjects + int(min(size/8, 1<<30))
		}
	}
	in.fill(min(sniffLen, len(in.buf)))
	head := in.buf[in.pos:in.end]
	if len(head) == 0 {
		if in.rerr != nil {
			return nil, d.wrapAt(0, kindFormat, in.rerr, "reading failed")
		}
		return nil, d.failAt(0, kindFormat, "empty input: not a memory snapshot")
	}
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		if wrapped != 0 {
			return nil, d.failAt(0, kindFormat, "gzip inside gzip or HTML: not a memory snapshot")
		}
		br := bufio.NewReader(in.rest()) // a ByteReader: gzip reads no further than its stream
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, d.wrapAt(0, kindFormat, err, "reading gzip header")
		}
		zr.Multistream(false)
		if size >= 0 {
			d.setBudget(size, true)
		}
		s, err := d.decodeAny(zr, -1, wrapped|wrapGzip)
		return d.gzipEnd(zr, br, s, err)
	case head[0] == opProto:
		s, err := d.decodePickle()
		if s != nil {
			s.Format = FormatPickle
		}
		return s, err
	case firstNonSpace(head) == '{' || firstNonSpace(head) == '[':
		switch profilerFile(head) {
		case chromeTrace:
			return nil, d.failAt(0, kindFormat, "a torch.profiler trace (Chrome trace), not a memory snapshot: "+
				"for its per-operator memory run 'memscope ops %s', or give it beside this run's snapshot with --trace %[1]s", d.name)
		case memoryTimeline:
			return nil, d.failAt(0, kindFormat, "an export_memory_timeline file, not a memory snapshot: "+
				"for its bytes by category run 'memscope ops %s', or give it beside this run's snapshot with --trace %[1]s", d.name)
		}
		return d.decodeJSON(in.rest())
	case bytes.Contains(head, []byte("local_files")) || bytes.Contains(head, []byte(htmlMarker)):
		i := bytes.Index(head, []byte(htmlMarker))
		if i < 0 || wrapped&wrapHTML != 0 {
			return nil, d.failAt(0, kindFormat, "an HTML page without an embedded snapshot (no %s in the first %d bytes)", htmlMarker, sniffLen)
		}
		in.pos += i + len(htmlMarker)
		payload := base64.NewDecoder(base64.StdEncoding, &quoteStop{r: in.rest()})
		s, err := d.decodeAny(payload, -1, wrapped|wrapHTML)
		if s != nil {
			s.Format = FormatHTML
		}
		return s, err
	}
	n := min(len(head), 8)
	return nil, d.failAt(0, kindFormat, "unrecognised format (starts with % x): want a pickle, JSON or HTML memory snapshot, or one of those gzipped", head[:n])
}

// decodePickle runs the unpickler over the input and builds the snapshot.
func (d *decoder) decodePickle() (*Snapshot, error) {
	d.sized = d.in.size >= 0
	top, err := d.run()
	if err != nil && d.shortFrame != "" {
		if de, ok := err.(*decodeError); ok {
			de.msg += "; " + d.shortFrame
		}
	}
	if err != nil {
		if errKindOf(err) == kindTruncated {
			if s := d.salvage(d.opOff); s != nil {
				return s, err
			}
			if s := d.salvageWhole(); s != nil {
				return s, err
			}
		}
		return nil, err
	}
	s, err := d.finish(top)
	if err != nil && d.shortFrame != "" {
		if de, ok := err.(*decodeError); ok {
			de.msg += "; " + d.shortFrame
		}
	}
	if s != nil {
		d.trailing(s)
		if d.shortFrame != "" { // STOP came before the file ran out: a damaged file all the same
			s.Warnings = append(s.Warnings, Warning{Device: -1, Kind: WarnLost, Message: d.shortFrame + ": the file is damaged"})
		}
	}
	return s, err
}

// salvageWhole builds the snapshot of a stream cut after its top-level
// value was complete, before STOP (the last byte, or a memo opcode and
// STOP): nothing of the snapshot is lost, but the file is cut all the same.
func (d *decoder) salvageWhole() *Snapshot {
	if len(d.stack) != 1 || len(d.marks) != 0 {
		return nil
	}
	at := d.opOff
	s, err := d.finish(d.stack[0])
	if err != nil || s == nil {
		return nil
	}
	s.Warnings = append(s.Warnings, Warning{Device: -1, Kind: WarnLost,
		Message: fmt.Sprintf("the file ends early, at byte %d, before the pickle's STOP opcode (its last byte): the snapshot's values are all there, nothing else is lost", at)})
	return s
}

// hasMore reports whether r holds another byte.
func hasMore(r *bufio.Reader) bool {
	_, err := r.Peek(1)
	return err == nil
}

// drainLimit bounds what is read past the pickle's STOP (or past an error)
// to check the gzip stream's checksum and length.
const drainLimit = 64 << 20

// trailing warns about bytes after the pickle's STOP in a file of known
// size: a snapshot written twice into one file, or garbage appended.
func (d *decoder) trailing(s *Snapshot) {
	if r := d.in.remaining(); r > 0 && d.in.size >= 0 { // a stream of unknown size: gzipEnd sees its end
		s.Warnings = append(s.Warnings, Warning{Device: -1, Kind: WarnTrailing,
			Message: fmt.Sprintf("%d bytes after the pickle's end, at byte %d, were ignored", r, d.in.offset())})
	}
}

// gzipEnd reads the rest of a gzip stream after its snapshot was decoded,
// so that its checksum and length are checked, and reports what it finds:
// a damaged stream (bad checksum or length, corrupt data) as a warning
// that the snapshot may be wrong, or as the cause of a decoding error;
// data after the snapshot's end as a warning.
func (d *decoder) gzipEnd(zr *gzip.Reader, br *bufio.Reader, s *Snapshot, err error) (*Snapshot, error) {
	after := int64(d.in.end - d.in.pos) // decompressed bytes read ahead past the end
	n, derr := io.Copy(io.Discard, io.LimitReader(zr, drainLimit))
	after += n
	if err != nil {
		if derr != nil && errKindOf(err) != kindTruncated {
			if de, ok := err.(*decodeError); ok {
				de.msg += "; reading the gzip stream failed: " + derr.Error() + " (a damaged file)"
			}
		}
		return s, err
	}
	switch {
	case derr != nil:
		s.Warnings = append(s.Warnings, Warning{Device: -1, Kind: WarnLost,
			Message: "the gzip stream is damaged after the snapshot was read (" + derr.Error() + "): its numbers may be wrong"})
	case n < drainLimit && hasMore(br):
		s.Warnings = append(s.Warnings, Warning{Device: -1, Kind: WarnTrailing,
			Message: "data after the end of the gzip stream was ignored"})
	case after > 0 && s.Format == FormatPickle && !slices.ContainsFunc(s.Warnings, func(w Warning) bool { return w.Kind == WarnTrailing }):
		s.Warnings = append(s.Warnings, Warning{Device: -1, Kind: WarnTrailing,
			Message: fmt.Sprintf("%d bytes after the pickle's end, inside the gzip stream, were ignored", after)})
	}
	return s, nil
}

// rest returns a reader of the unread input: the buffered bytes, then the
// underlying reader.
func (in *input) rest() io.Reader {
	return io.MultiReader(bytes.NewReader(slices.Clone(in.buf[in.pos:in.end])), in.r)
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// quoteStop reads up to the first '"', the end of the base64 string.
type quoteStop struct {
	r    io.Reader
	done bool
}

func (q *quoteStop) Read(p []byte) (int, error) {
	if q.done {
		return 0, io.EOF
	}
	n, err := q.r.Read(p)
	if i := bytes.IndexByte(p[:n], '"'); i >= 0 {
		q.done = true
		return i, nil
	}
	return n, err
}
