package trace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"

	"github.com/go-json-experiment/json/jsontext"
)

// The fast event path. jsontext validating each event (ReadValue) and
// scanEvent then walking the same bytes again cost most of a decode; here
// one hand-written pass over the event array both validates each event
// object and picks its fields out, for the grammar jsontext accepts with
// decoderOptions: strict JSON, invalid UTF-8 and duplicate names allowed.
//
// The scanner only ever accepts what jsontext accepts, and extracts
// exactly what scanEvent would from the same bytes. Anything it does not
// handle (a syntax error, a truncated file, an element that is not an
// object, nesting deeper than maxFastDepth, an event larger than
// maxFastEvent, a read error) makes it stop before that element and hand
// the rest of the input back to a fresh jsontext.Decoder, positioned by a
// synthetic prefix in the same state, so that the reference path goes on
// from there with the same offsets, warnings and errors.

const (
	fastBufSize  = 64 << 10 // initial read buffer
	maxFastEvent = 16 << 20 // larger events are left to jsontext
	maxFastDepth = 256      // deeper nesting inside an event is left to jsontext
)

// Results of scanning one value.
const (
	scanOK   = iota
	scanMore // the buffer ends inside the value
	scanBad  // not valid JSON, or beyond what the fast path handles
)

// fastEvents reads elements of the event array that d.dec has just opened
// ('[' read), for as long as they are event objects it can check itself,
// then replaces d.dec with a decoder that resumes right after the last
// element read.
func (d *decoder) fastEvents() {
	topArray := d.dec.StackDepth() == 1
	unread := bytes.Clone(d.dec.UnreadBuffer())
	base := d.offset() // absolute offset of buf[0]
	var rerr error     // the read error (io.EOF too) that ended the input
	k := 0             // elements read here
	if d.chunk > 0 {
		unread, base, k, rerr = d.parallelEvents(unread, base)
	}
	buf := make([]byte, 0, max(fastBufSize, len(unread)))
	buf = append(buf, unread...)
	last := 0 // just past the last element read, or the '['
	e := &d.ev

	// fill moves buf[last:] to the front and reads more; false when
	// nothing more can be had.
	fill := func() bool {
		if rerr != nil {
			return false
		}
		if last > 0 {
			n := copy(buf[:cap(buf)], buf[last:])
			buf = buf[:n]
			base += int64(last)
			last = 0
		}
		if len(buf) == cap(buf) {
			if cap(buf) >= maxFastEvent {
				return false
			}
			nb := make([]byte, len(buf), 2*cap(buf))
			copy(nb, buf)
			buf = nb
		}
		for {
			n, err := d.src.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err != nil {
				rerr = err
			}
			if n > 0 || err != nil {
				return n > 0
			}
		}
	}

scan:
	for {
		i, n, st, badTS := nextEvent(buf, last, k == 0, e)
		switch st {
		case scanMore:
			if fill() {
				continue scan
			}
			break scan
		case scanBad:
			break scan // ']' or damage: jsontext takes it from here
		}
		d.addEvent(e, badTS)
		k++
		last = i + n
	}

	// Hand off: a decoder over prefix + the unread bytes + the rest of the
	// input, where prefix (the top-level value's opening and one dummy
	// element when elements were read, "{}", which ends on its own whatever
	// follows) leaves jsontext in the state it would be in at buf[last].
	prefix := `{"traceEvents":[`
	if topArray {
		prefix = `[`
	}
	if k > 0 {
		prefix += `{}`
	}
	var rest io.Reader = d.src
	if rerr != nil {
		rest = errReader{rerr}
	}
	d.src = io.MultiReader(bytes.NewReader([]byte(prefix)), bytes.NewReader(buf[last:]), rest)
	d.dec = jsontext.NewDecoder(d.src, decoderOptions...)
	d.base = base + int64(last) - int64(len(prefix))
	tokens := 3
	if topArray {
		tokens = 1
	}
	for range tokens {
		if _, err := d.dec.ReadToken(); err != nil {
			panic("trace: fast path hand-off: " + err.Error()) // cannot happen: the prefix is valid
		}
	}
	if k > 0 {
		if err := d.dec.SkipValue(); err != nil {
			panic("trace: fast path hand-off: " + err.Error())
		}
	}
}

// nextEvent reads the event after b[last:] (whitespace, then ',' unless it
// is the first, then the event object) into e, returning where the object
// starts and its length.
func nextEvent(b []byte, last int, first bool, e *rawEvent) (i, n, st int, badTS bool) {
	i = skipWS(b, last)
	if i == len(b) {
		return 0, 0, scanMore, false
	}
	if !first {
		if b[i] != ',' {
			return 0, 0, scanBad, false
		}
		i = skipWS(b, i+1)
		if i == len(b) {
			return 0, 0, scanMore, false
		}
	}
	if b[i] != '{' {
		return 0, 0, scanBad, false
	}
	n, st, badTS = scanEventFast(b[i:], e)
	return i, n, st, badTS
}

// nonFinite reports whether v is one of the literals Python's json writes
// for a float that is not finite (and JSON has no word for).
func nonFinite(v []byte) bool {
	switch string(v) {
	case "NaN", "Infinity", "-Infinity":
		return true
	}
	return false
}

// addEvent is readEvent's bookkeeping for an event read by the fast path.
// An event holding NaN or ±Infinity where the analysis needs a number is
// skipped, the first one named in a warning (finish's); the events after
// it are read.
func (d *decoder) addEvent(e *rawEvent, badTS bool) {
	if e.args.nonFinite != "" {
		if d.nonFinite == 0 {
			d.firstNonFinite = fmt.Sprintf("traceEvents[%d] (%q, %s)", d.events, e.name, e.args.nonFinite)
		}
		d.nonFinite++
		d.events++
		return
	}
	if badTS {
		d.warn("ignoring ts and dur values that are not numbers")
	}
	d.events++
	if e.ph != 0 {
		d.valid++
	}
	d.keep(e)
}

// errReader returns err from every Read.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// scanEventFast validates the JSON object at b[0] ('{') and fills e with
// what scanEvent would take from it. It returns the object's length; badTS
// reports a ts or dur that is not a number (scanEvent's warning, which the
// caller gives once the event is known to be valid).
func scanEventFast(b []byte, e *rawEvent) (n, st int, badTS bool) {
	e.reset()
	stopped := false // scanEvent stopped reading members (args not wanted)
	i := skipWS(b, 1)
	if i >= len(b) {
		return 0, scanMore, false
	}
	if b[i] == '}' {
		return i + 1, scanOK, false
	}
	for {
		if b[i] != '"' {
			return 0, scanBad, false
		}
		kEnd, st := scanString(b, i)
		if st != scanOK {
			return 0, st, false
		}
		k := b[i:kEnd]
		i = skipWS(b, kEnd)
		if i >= len(b) {
			return 0, scanMore, false
		}
		if b[i] != ':' {
			return 0, scanBad, false
		}
		v0 := skipWS(b, i+1)
		if v0 >= len(b) {
			return 0, scanMore, false
		}
		if !stopped && string(k) == `"args"` && len(e.cat) > 0 && !argsWanted(e.cat) {
			stopped = true
		}
		var end int
		if !stopped && string(k) == `"args"` {
			end, st = scanArgsFast(b, v0, &e.args)
		} else {
			end, st = skipValue(b, v0)
		}
		if st != scanOK {
			return 0, st, false
		}
		if !stopped && string(k) != `"args"` && !e.set(k, b[v0:end]) {
			if nonFinite(b[v0:end]) && e.args.nonFinite == "" {
				e.args.nonFinite = string(k[1:len(k)-1]) + " is " + string(b[v0:end])
			} else {
				badTS = true
			}
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return 0, scanMore, false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
			if i >= len(b) {
				return 0, scanMore, false
			}
		case '}':
			return i + 1, scanOK, badTS
		default:
			return 0, scanBad, false
		}
	}
}

// scanArgsFast validates the value at b[i] and, when it is an object, keeps
// the numeric args listed in rawArgs as scanArgs does.
func scanArgsFast(b []byte, i int, a *rawArgs) (int, int) {
	if b[i] != '{' {
		return skipValue(b, i)
	}
	i = skipWS(b, i+1)
	if i >= len(b) {
		return 0, scanMore
	}
	if b[i] == '}' {
		return i + 1, scanOK
	}
	for {
		if b[i] != '"' {
			return 0, scanBad
		}
		kEnd, st := scanString(b, i)
		if st != scanOK {
			return 0, st
		}
		k := b[i:kEnd]
		i = skipWS(b, kEnd)
		if i >= len(b) {
			return 0, scanMore
		}
		if b[i] != ':' {
			return 0, scanBad
		}
		v0 := skipWS(b, i+1)
		if v0 >= len(b) {
			return 0, scanMore
		}
		end, st := skipValue(b, v0)
		if st != scanOK {
			return 0, st
		}
		dst, bit := a.field(k)
		if dst != nil {
			if v := b[v0:end]; v[0] != '{' && v[0] != '[' {
				if n, ok := parseInt(v); ok {
					*dst = n
					a.has |= bit
				} else if nonFinite(v) && a.nonFinite == "" {
					a.nonFinite = string(k[1:len(k)-1]) + " is " + string(v)
				}
			}
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return 0, scanMore
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
			if i >= len(b) {
				return 0, scanMore
			}
		case '}':
			return i + 1, scanOK
		default:
			return 0, scanBad
		}
	}
}

// strPlain marks the bytes that stand for themselves inside a JSON string:
// all but '"', '\\' and control characters (any byte ≥ 0x80 included, as
// invalid UTF-8 is allowed).
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanString validates the string at b[i] ('"') and returns the index just
// past it.
func scanString(b []byte, i int) (int, int) {
	for i++; ; {
		// Eight bytes at a time while none is '"', '\\' or a control
		// character: the lowest flagged byte of t is the first such one
		// (borrows only run upward from a byte that is one).
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			q := x ^ 0x2222222222222222
			s := x ^ 0x5c5c5c5c5c5c5c5c
			t := ((q - 0x0101010101010101) &^ q) | ((s - 0x0101010101010101) &^ s) | ((x - 0x2020202020202020) &^ x)
			if t &= 0x8080808080808080; t != 0 {
				i += bits.TrailingZeros64(t) / 8
				break
			}
			i += 8
		}
		for i < len(b) && strPlain[b[i]] {
			i++
		}
		if i >= len(b) {
			return 0, scanMore
		}
		switch b[i] {
		case '"':
			return i + 1, scanOK
		case '\\':
			if i+1 >= len(b) {
				return 0, scanMore
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for j := i + 2; j < i+6; j++ {
					if j >= len(b) {
						return 0, scanMore
					}
					if !isHex(b[j]) {
						return 0, scanBad
					}
				}
				i += 6
			default:
				return 0, scanBad
			}
		default: // a control character
			return 0, scanBad
		}
	}
}

// scanNumber validates the number at b[i]. A number that reaches the end
// of b may go on: scanMore.
func scanNumber(b []byte, i int) (int, int) {
	if b[i] == '-' {
		i++
		if i >= len(b) {
			return 0, scanMore
		}
	}
	switch c := b[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i++
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0, scanBad
	}
	if i < len(b) && b[i] == '.' {
		i++
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == s && i < len(b) {
			return 0, scanBad
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == s && i < len(b) {
			return 0, scanBad
		}
	}
	if i >= len(b) {
		return 0, scanMore
	}
	return i, scanOK
}

// scanLiteral validates true, false or null at b[i].
func scanLiteral(b []byte, i int, lit string) (int, int) {
	for j := 0; j < len(lit); j++ {
		if i+j >= len(b) {
			return 0, scanMore
		}
		if b[i+j] != lit[j] {
			return 0, scanBad
		}
	}
	return i + len(lit), scanOK
}

// skipValue validates the JSON value at b[i] (not whitespace) and returns
// the index just past it.
func skipValue(b []byte, i int) (int, int) {
	var stack [maxFastDepth / 64]uint64 // bit set: an object at that depth
	depth := 0
	st := scanOK
	for {
		// A value at b[i].
		if i >= len(b) {
			return 0, scanMore
		}
		switch c := b[i]; c {
		case '"':
			i, st = scanString(b, i)
		case '{', '[':
			if depth == maxFastDepth {
				return 0, scanBad
			}
			i = skipWS(b, i+1)
			if i >= len(b) {
				return 0, scanMore
			}
			if c == '{' {
				if b[i] == '}' {
					i++
					break
				}
				stack[depth/64] |= 1 << (depth % 64)
				depth++
				if i, st = objectKey(b, i); st != scanOK {
					return 0, st
				}
				continue
			}
			if b[i] == ']' {
				i++
				break
			}
			stack[depth/64] &^= 1 << (depth % 64)
			depth++
			continue
		case 't':
			i, st = scanLiteral(b, i, "true")
		case 'f':
			i, st = scanLiteral(b, i, "false")
		case 'n':
			i, st = scanLiteral(b, i, "null")
		case 'N':
			i, st = scanLiteral(b, i, "NaN")
		case 'I':
			i, st = scanLiteral(b, i, "Infinity")
		default:
			if c == '-' && i+1 < len(b) && b[i+1] == 'I' {
				i, st = scanLiteral(b, i, "-Infinity")
				break
			}
			i, st = scanNumber(b, i)
		}
		if st != scanOK {
			return 0, st
		}
		// After a value: close the containers it ends, or move to the next
		// element or member.
		for {
			if depth == 0 {
				return i, scanOK
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, scanMore
			}
			obj := stack[(depth-1)/64]&(1<<((depth-1)%64)) != 0
			c := b[i]
			if c == ',' {
				i = skipWS(b, i+1)
				if i >= len(b) {
					return 0, scanMore
				}
				if obj {
					if i, st = objectKey(b, i); st != scanOK {
						return 0, st
					}
				}
				break
			}
			if obj && c == '}' || !obj && c == ']' {
				i++
				depth--
				continue
			}
			return 0, scanBad
		}
	}
}

// objectKey validates `"key" :` at b[i] and whitespace after it, returning
// the index of the value.
func objectKey(b []byte, i int) (int, int) {
	if b[i] != '"' {
		return 0, scanBad
	}
	i, st := scanString(b, i)
	if st != scanOK {
		return 0, st
	}
	i = skipWS(b, i)
	if i >= len(b) {
		return 0, scanMore
	}
	if b[i] != ':' {
		return 0, scanBad
	}
	i = skipWS(b, i+1)
	if i >= len(b) {
		return 0, scanMore
	}
	return i, scanOK
}
