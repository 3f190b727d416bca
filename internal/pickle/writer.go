// Package pickle writes Python pickles of plain data (dicts, lists, tuples,
// str, bytes, int, float, bool, None) with the opcodes CPython's pickle
// module chooses, including its memo (MEMOIZE or BINPUT, then BINGET) and,
// for protocol 4 and up, FRAME opcodes every 64 KiB. Tests and the
// benchmark generator use it to make snapshots shaped like torch's.
//
// The caller drives the structure: it writes a container's opcode, then its
// items, then the closing opcode, and decides which objects to memoize and
// reference again. Errors stick: after the first, calls do nothing and Err
// and Stop return it.
package pickle

import (
	"bufio"
	"encoding/binary"
	"io"
	"math"
	"math/bits"
)

// Opcodes written by Writer.
const (
	Mark            = '('
	Stop            = '.'
	BinInt          = 'J'
	BinInt1         = 'K'
	BinInt2         = 'M'
	None            = 'N'
	BinUnicode      = 'X'
	Append          = 'a'
	EmptyDict       = '}'
	Appends         = 'e'
	BinGet          = 'h'
	LongBinGet      = 'j'
	EmptyList       = ']'
	BinPut          = 'q'
	LongBinPut      = 'r'
	SetItem         = 's'
	Tuple           = 't'
	EmptyTuple      = ')'
	SetItems        = 'u'
	BinFloat        = 'G'
	BinBytes        = 'B'
	ShortBinBytes   = 'C'
	Proto           = 0x80
	Tuple1          = 0x85
	Tuple2          = 0x86
	Tuple3          = 0x87
	NewTrue         = 0x88
	NewFalse        = 0x89
	Long1           = 0x8a
	Long4           = 0x8b
	ShortBinUnicode = 0x8c
	BinUnicode8     = 0x8d
	BinBytes8       = 0x8e
	Memoize         = 0x94
	Frame           = 0x95
)

// FrameTarget is the frame size CPython aims for (_FRAME_SIZE_TARGET).
const FrameTarget = 64 << 10

// BatchSize is CPython's _BATCHSIZE for APPENDS and SETITEMS.
const BatchSize = 1000

// Writer writes one pickle.
type Writer struct {
	w     *bufio.Writer
	proto int
	frame []byte // the open frame (protocol ≥ 4), or nil
	memo  uint32 // next memo index
	n     int64  // bytes handed to w
	err   error
}

// NewWriter starts a pickle of the given protocol (2 to 5) on w.
func NewWriter(w io.Writer, proto int) *Writer {
	pw := &Writer{w: bufio.NewWriterSize(w, 1<<20), proto: proto}
	pw.emit([]byte{Proto, byte(proto)})
	if proto >= 4 {
		pw.frame = make([]byte, 0, FrameTarget+4096)
	}
	return pw
}

// emit writes b outside any frame.
func (w *Writer) emit(b []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(b)
	w.n += int64(n)
	w.err = err
}

// Raw writes bytes as they are, inside the open frame: opcodes the typed
// methods do not cover, or deliberately broken input for tests.
func (w *Writer) Raw(b ...byte) {
	if w.frame != nil {
		w.frame = append(w.frame, b...)
		return
	}
	w.emit(b)
}

// Len returns the number of bytes written so far, the open frame included.
func (w *Writer) Len() int64 { return w.n + int64(len(w.frame)) }

// Err returns the first write error.
func (w *Writer) Err() error { return w.err }

// Boundary marks the end of one object; like CPython, the frame is written
// out once it holds FrameTarget bytes.
func (w *Writer) Boundary() {
	if w.frame != nil && len(w.frame) >= FrameTarget {
		w.commitFrame()
	}
}

func (w *Writer) commitFrame() {
	if len(w.frame) == 0 {
		return
	}
	if len(w.frame) >= 4 { // CPython leaves tiny frames unframed
		var h [9]byte
		h[0] = Frame
		binary.LittleEndian.PutUint64(h[1:], uint64(len(w.frame)))
		w.emit(h[:])
	}
	w.emit(w.frame)
	w.frame = w.frame[:0]
}

// Stop writes STOP, closes the last frame and flushes.
func (w *Writer) Stop() error {
	w.Raw(Stop)
	if w.frame != nil {
		w.commitFrame()
	}
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

// Memoize stores the object just written in the memo and returns its index.
func (w *Writer) Memoize() uint32 {
	i := w.memo
	w.memo++
	switch {
	case w.proto >= 4:
		w.Raw(Memoize)
	case i < 256:
		w.Raw(BinPut, byte(i))
	default:
		w.Raw(LongBinPut, byte(i), byte(i>>8), byte(i>>16), byte(i>>24))
	}
	return i
}

// Get pushes memo entry i again.
func (w *Writer) Get(i uint32) {
	if i < 256 {
		w.Raw(BinGet, byte(i))
		return
	}
	w.Raw(LongBinGet, byte(i), byte(i>>8), byte(i>>16), byte(i>>24))
}

// Int writes n with the smallest opcode CPython would use.
func (w *Writer) Int(n int64) {
	switch {
	case n >= 0 && n <= 0xff:
		w.Raw(BinInt1, byte(n))
	case n >= 0 && n <= 0xffff:
		w.Raw(BinInt2, byte(n), byte(n>>8))
	case n >= math.MinInt32 && n <= math.MaxInt32:
		w.Raw(BinInt, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	default:
		b := encodeLong(n)
		w.Raw(Long1, byte(len(b)))
		w.Raw(b...)
	}
}

// Uint writes u as CPython writes a Python int of that value: like Int
// below 2^63, else LONG1 with nine bytes (the ninth zero), the way torch's
// −1-as-unsigned frame lines (2^64−1) reach a pickle.
func (w *Writer) Uint(u uint64) {
	if u <= math.MaxInt64 {
		w.Int(int64(u))
		return
	}
	var b [11]byte
	b[0], b[1] = Long1, 9
	binary.LittleEndian.PutUint64(b[2:], u)
	w.Raw(b[:]...)
}

// encodeLong is CPython's pickle.encode_long for a nonzero int64.
func encodeLong(n int64) []byte {
	mag := uint64(n)
	if n < 0 {
		mag = uint64(-n)
	}
	nbytes := bits.Len64(mag)>>3 + 1
	var full [9]byte
	binary.LittleEndian.PutUint64(full[:], uint64(n))
	if n < 0 {
		full[8] = 0xff
	}
	b := full[:nbytes]
	if n < 0 && nbytes > 1 && b[nbytes-1] == 0xff && b[nbytes-2]&0x80 != 0 {
		b = b[:nbytes-1]
	}
	return append([]byte(nil), b...)
}

// Float writes f as BINFLOAT.
func (w *Writer) Float(f float64) {
	var b [9]byte
	b[0] = BinFloat
	binary.BigEndian.PutUint64(b[1:], math.Float64bits(f))
	w.Raw(b[:]...)
}

// Bool writes True or False.
func (w *Writer) Bool(b bool) {
	if b {
		w.Raw(NewTrue)
	} else {
		w.Raw(NewFalse)
	}
}

// None writes None.
func (w *Writer) None() { w.Raw(None) }

// String writes a str (not memoized: call Memoize after, as CPython does).
func (w *Writer) String(s string) {
	n := len(s)
	switch {
	case w.proto >= 4 && n < 256:
		w.Raw(ShortBinUnicode, byte(n))
	case w.proto >= 4 && uint64(n) > math.MaxUint32:
		var h [9]byte
		h[0] = BinUnicode8
		binary.LittleEndian.PutUint64(h[1:], uint64(n))
		w.Raw(h[:]...)
	default:
		w.Raw(BinUnicode, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	}
	w.payload(s)
}

// Bytes writes a bytes object (protocol 3 and up).
func (w *Writer) Bytes(b []byte) {
	n := len(b)
	switch {
	case n < 256:
		w.Raw(ShortBinBytes, byte(n))
	case uint64(n) > math.MaxUint32:
		var h [9]byte
		h[0] = BinBytes8
		binary.LittleEndian.PutUint64(h[1:], uint64(n))
		w.Raw(h[:]...)
	default:
		w.Raw(BinBytes, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	}
	w.payload(string(b))
}

// payload writes string data; like CPython, data of a frame's size or more
// goes out unframed after the frame holding its header.
func (w *Writer) payload(s string) {
	if w.frame != nil && len(s) >= FrameTarget {
		w.commitFrame()
		w.emit([]byte(s))
		return
	}
	if w.frame != nil {
		w.frame = append(w.frame, s...)
		return
	}
	w.emit([]byte(s))
}

// Tuple2 makes a pair of the two objects just written.
func (w *Writer) Tuple2() { w.Raw(Tuple2) }

// List writes n list items as CPython's _batch_appends does: batches of up
// to BatchSize between MARK and APPENDS, a batch of one with APPEND. item
// writes item i; a Boundary follows each item.
func (w *Writer) List(n int, item func(i int)) { w.batches(n, Appends, Append, item) }

// Dict writes n dict items like _batch_setitems; item writes the key and
// the value of item i.
func (w *Writer) Dict(n int, item func(i int)) { w.batches(n, SetItems, SetItem, item) }

func (w *Writer) batches(n int, many, one byte, item func(int)) {
	for start := 0; start < n; start += BatchSize {
		end := min(start+BatchSize, n)
		if end-start > 1 {
			w.Raw(Mark)
		}
		for i := start; i < end; i++ {
			item(i)
			w.Boundary()
		}
		if end-start > 1 {
			w.Raw(many)
		} else {
			w.Raw(one)
		}
	}
}
