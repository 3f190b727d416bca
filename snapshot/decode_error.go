package snapshot

import (
	"errors"
	"fmt"
	"strings"
)

// errKind classifies decoding errors. Callers see only the message; tests
// use the kind to tell the decoder's deliberate refusals from real
// disagreements with a general-purpose unpickler.
type errKind uint8

const (
	kindFormat    errKind = iota // not a snapshot at all: unknown encoding, wrong top-level shape
	kindPickle                   // malformed pickle stream (stack underflow, wrong operand types)
	kindSchema                   // a pickle of the wrong shape for a snapshot
	kindRefused                  // valid pickle this decoder refuses by design (classes, unsupported opcodes, reuse)
	kindLimit                    // a length, depth or count past the decoder's limits
	kindTruncated                // the input ended early
	kindInternal                 // a recovered panic: always a bug
)

// Limits against hostile input. Real snapshots stay far below each.
const (
	maxStack        = 1 << 20 // values on the unpickler stack
	maxMarks        = 1000    // nested MARKs
	maxObjects      = 1 << 20 // containers kept at once, plus one per 8 bytes of a known input size
	maxStringLen    = 1 << 28 // one string or bytes value
	maxGenericDepth = 64      // nesting inside allocator_settings
	// maxGenericValues bounds the values allocator_settings expands to (a
	// list shared through the memo is expanded at each use).
	maxGenericValues = 1 << 20
	// maxBlockCopies bounds the blocks copied for segments that share one
	// blocks list (each segment gets its own addresses).
	maxBlockCopies = 1 << 22
)

// decodeError is every error the decoder returns: the file, the offset in
// the (decompressed) stream and what was wrong, on one line.
type decodeError struct {
	name string
	off  int64 // -1 when the message names the entry instead
	msg  string
	kind errKind
	err  error // wrapped cause, if any
}

func (e *decodeError) Error() string {
	if e.off < 0 { // a value checked after decoding: the message names it
		return fmt.Sprintf("decoding %s: %s", e.name, e.msg)
	}
	return fmt.Sprintf("decoding %s at byte %d: %s", e.name, e.off, e.msg)
}

func (e *decodeError) Unwrap() error { return e.err }

// errKindOf returns the kind of a decoder error, kindInternal for others.
func errKindOf(err error) errKind {
	var de *decodeError
	if errors.As(err, &de) {
		return de.kind
	}
	return kindInternal
}

// fail returns an error at the offset of the current opcode.
func (d *decoder) fail(kind errKind, format string, args ...any) error {
	return d.failAt(d.opOff, kind, format, args...)
}

// failAt returns an error at offset off.
func (d *decoder) failAt(off int64, kind errKind, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	msg = strings.ReplaceAll(msg, "\n", " ")
	return &decodeError{name: d.name, off: off, msg: msg, kind: kind}
}

// wrapAt returns an error at offset off that wraps cause.
func (d *decoder) wrapAt(off int64, kind errKind, cause error, what string) error {
	msg := strings.ReplaceAll(what+": "+cause.Error(), "\n", " ")
	return &decodeError{name: d.name, off: off, msg: msg, kind: kind, err: cause}
}

// describe names a value's type the way a Python programmer would.
func (d *decoder) describe(v value) string {
	if v.tag == tObj {
		o := &d.objs[v.n]
		if o.kind == objDict {
			return "a dict"
		}
		return listKindNames[o.lkind]
	}
	switch v.tag {
	case tNone:
		return "None"
	case tStack:
		if v.n == 0 {
			return "an empty list"
		}
	case tInt:
		return "an int"
	case tUint64:
		return fmt.Sprintf("the int %d", uint64(v.n))
	case tEvent, tAnnot:
		return "an " + tagNames[v.tag]
	}
	if int(v.tag) < len(tagNames) {
		return "a " + tagNames[v.tag]
	}
	return "an unknown value"
}

// keyName returns a dict key as text for messages.
func (d *decoder) keyName(k value) string {
	if k.tag == tStr {
		return fmt.Sprintf("%q", d.strs[k.n])
	}
	return d.describe(k)
}
