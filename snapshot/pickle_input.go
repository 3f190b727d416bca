package snapshot

import (
	"io"
)

// inputBufSize is the decoder's read window. Opcodes are decoded straight
// from this slice; it is refilled from the reader when fewer bytes remain
// than the next opcode needs.
const inputBufSize = 4 << 20

// input is a refillable window over the stream being decoded.
type input struct {
	r    io.Reader
	buf  []byte
	pos  int   // next byte to decode
	end  int   // buf[pos:end] is unread data
	base int64 // stream offset of buf[0]
	eof  bool  // r has no more data
	rerr error // a read error other than io.EOF
	size int64 // stream length when known, else -1
	// at is r as an io.ReaderAt and io.Seeker when it is both and its
	// length is known (a file, a bytes.Reader): the fast path then reads
	// ahead of the window itself (decode_chunks.go). origin is r's offset
	// of stream byte 0.
	at     readSeekerAt
	origin int64
}

type readSeekerAt interface {
	io.ReaderAt
	io.Seeker
}

func (in *input) reset(r io.Reader, size int64) {
	n := inputBufSize
	if size >= 0 && size+64 < int64(n) {
		n = int(size) + 64 // small inputs need no big window
	}
	if cap(in.buf) < n {
		in.buf = make([]byte, n)
	}
	*in = input{r: r, buf: in.buf[:cap(in.buf)], size: size}
	if ra, ok := r.(readSeekerAt); ok && size >= 0 {
		if cur, err := ra.Seek(0, io.SeekCurrent); err == nil {
			in.at, in.origin = ra, cur
		}
	}
}

// offset is the stream offset of the next unread byte.
func (in *input) offset() int64 { return in.base + int64(in.pos) }

// remaining returns the number of bytes left in the stream, or -1 when the
// stream length is unknown.
func (in *input) remaining() int64 {
	if in.size < 0 {
		if in.eof {
			return int64(in.end - in.pos)
		}
		return -1
	}
	return in.size - in.offset()
}

// fill tries to make need bytes available at buf[pos:], growing the window
// if it is smaller. It reports whether they are there; fewer means the
// stream ended (or failed: see rerr).
func (in *input) fill(need int) bool {
	if need > len(in.buf) {
		nb := make([]byte, max(need, 2*len(in.buf)))
		in.end = copy(nb, in.buf[in.pos:in.end])
		in.base += int64(in.pos)
		in.buf, in.pos = nb, 0
	}
	empty := 0
	for in.end-in.pos < need {
		if in.eof {
			return false
		}
		if in.pos > 0 {
			n := copy(in.buf, in.buf[in.pos:in.end])
			in.base += int64(in.pos)
			in.pos, in.end = 0, n
		}
		n, err := in.r.Read(in.buf[in.end:])
		in.end += n
		if n == 0 && err == nil {
			if empty++; empty == 100 {
				err = io.ErrNoProgress
			}
		}
		if err != nil {
			if err != io.EOF {
				in.rerr = err
			}
			in.eof = true
		}
	}
	return true
}

// take returns the next n bytes and advances past them. Short values are
// slices of the window, valid until the next fill; values longer than the
// window are read into a new slice grown as data arrives, so a false
// length costs no more memory than the data really there. ok is false when
// the stream ended first.
func (in *input) take(n int) (b []byte, ok bool) {
	if n <= len(in.buf) {
		if in.end-in.pos < n && !in.fill(n) {
			return nil, false
		}
		b = in.buf[in.pos : in.pos+n]
		in.pos += n
		return b, true
	}
	b = make([]byte, 0, min(n, 4*inputBufSize))
	for len(b) < n {
		if in.pos == in.end && !in.fill(1) {
			return nil, false
		}
		k := min(n-len(b), in.end-in.pos)
		b = append(b, in.buf[in.pos:in.pos+k]...)
		in.pos += k
	}
	return b, true
}
