package trace

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// rawEvent is the scratch copy of the fields of one event that matter,
// reused from event to event. Byte slices own their storage.
type rawEvent struct {
	ph            byte
	cat, name     []byte
	pid, tid      []byte
	ts, dur, id   int64
	hasTS, hasDur bool
	hasID         bool
	args          rawArgs
}

// rawArgs holds the args the memory analysis reads; absent ones are flagged.
type rawArgs struct {
	bytes, totalAlloc, totalRes, addr int64
	devType, devID                    int64
	pyID, pyParent                    int64
	seq, fwdThread                    int64
	has                               argSet
	// nonFinite names the first number it needs that was NaN or
	// ±Infinity ("Bytes is NaN"), ts and dur included: the fast path
	// skips such an event.
	nonFinite string
}

type argSet uint16

const (
	hasBytes argSet = 1 << iota
	hasTotalAlloc
	hasTotalRes
	hasAddr
	hasDevType
	hasDevID
	hasPyID
	hasPyParent
	hasSeq
	hasFwdThread
)

func (e *rawEvent) reset() {
	e.ph = 0
	e.cat, e.name, e.pid, e.tid = e.cat[:0], e.name[:0], e.pid[:0], e.tid[:0]
	e.ts, e.dur, e.id = 0, 0, 0
	e.hasTS, e.hasDur, e.hasID = false, false, false
	e.args = rawArgs{}
}

// readEvent reads one element of the event array and keeps what it needs.
// jsontext reads and validates the whole event; scanEvent then picks the
// fields out of the raw bytes.
func (d *decoder) readEvent() error {
	if d.dec.PeekKind() != '{' {
		d.warnAt(d.offset(), "skipping event array elements that are not objects")
		if err := d.dec.SkipValue(); err != nil {
			return err
		}
		d.events++
		return nil
	}
	raw, err := d.dec.ReadValue()
	if err != nil {
		return err
	}
	e := &d.ev
	e.reset()
	d.scanEvent(raw, e)
	d.events++
	if e.ph != 0 {
		d.valid++
	}
	d.keep(e)
	return nil
}

// argsWanted reports whether events of this category carry args we read.
func argsWanted(cat []byte) bool {
	switch string(cat) {
	case "cpu_op", "user_annotation", "python_function", "cpu_instant_event", "Operator":
		return true
	}
	return false
}

// appendString appends the contents of a JSON string value (unescaped), or
// the raw text of any other value.
func appendString(dst []byte, v jsontext.Value) []byte {
	if len(v) < 2 || v[0] != '"' {
		return append(dst, v...)
	}
	inner := v[1 : len(v)-1]
	for _, c := range inner {
		if c == '\\' {
			out, err := jsontext.AppendUnquote(dst, v)
			if err != nil {
				return append(dst, inner...)
			}
			return out
		}
	}
	return append(dst, inner...)
}

// flowID reads a flow id: a number, or a string such as "0x1f" (hashed
// into an int64 when it is not a number).
func flowID(v jsontext.Value) (int64, bool) {
	if n, ok := parseInt(v); ok {
		return n, true
	}
	if len(v) == 0 || v[0] != '"' {
		return 0, false
	}
	var h uint64 = 14695981039346656037
	for _, c := range v {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return int64(h >> 1), true
}

// A small scanner over one event object that jsontext has already read and
// validated (Decoder.ReadValue). Walking the raw bytes ourselves costs a
// fraction of one jsontext call per member, and validity is guaranteed, so
// the scanner only needs to find boundaries.

// skipWS returns the index of the first non-whitespace byte at or after i.
func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// stringEnd returns the index just past the JSON string starting at b[i]
// (which is '"'). A quote preceded by an odd run of backslashes is escaped.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		q := i + j
		n := 0
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
	return len(b)
}

// valueEnd returns the index just past the JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\r' && b[i] != '\t' {
		i++
	}
	return i
}

// member reads the object member starting at b[i] (after whitespace): it
// returns the raw key (quotes included) and the index of the value, or
// ok=false at the end of the object.
func member(b []byte, i int) (key []byte, val int, ok bool) {
	i = skipWS(b, i)
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	kEnd := stringEnd(b, i)
	key = b[i:kEnd]
	i = skipWS(b, kEnd)
	if i >= len(b) || b[i] != ':' {
		return nil, i, false
	}
	return key, skipWS(b, i+1), true
}

// next moves past the ',' after a member's value ending at b[i], reporting
// false at the end of the object.
func next(b []byte, i int) (int, bool) {
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ',' {
		return i, false
	}
	return i + 1, true
}

// scanEvent fills e from the raw text of one validated event object. The
// args of categories we do not read are not even scanned: the walk stops
// there, since Kineto writes args last.
func (d *decoder) scanEvent(raw []byte, e *rawEvent) {
	i := skipWS(raw, 0) + 1
	for more := true; more; {
		k, v0, ok := member(raw, i)
		if !ok {
			return
		}
		if string(k) == `"args"` && len(e.cat) > 0 && !argsWanted(e.cat) {
			return
		}
		end := valueEnd(raw, v0)
		v := raw[v0:end]
		if string(k) == `"args"` {
			scanArgs(v, &e.args)
		} else if !e.set(k, v) {
			d.warn("ignoring ts and dur values that are not numbers")
		}
		i, more = next(raw, end)
	}
}

// set stores the value v of the event's member of quoted key k, for every
// key but "args" (each scanner reads those its own way); other keys are
// ignored. It reports false for a ts or dur that is not a number, which is
// then left unset.
func (e *rawEvent) set(k, v []byte) bool {
	switch string(k) {
	case `"ph"`:
		if len(v) >= 3 && v[0] == '"' {
			e.ph = v[1]
		}
	case `"cat"`:
		e.cat = appendString(e.cat[:0], v)
	case `"name"`:
		e.name = appendString(e.name[:0], v)
	case `"pid"`:
		e.pid = append(e.pid[:0], v...)
	case `"tid"`:
		e.tid = append(e.tid[:0], v...)
	case `"ts"`, `"dur"`:
		ns, err := parseMicrosNS(v)
		if err != nil {
			return false
		}
		if k[1] == 't' {
			e.ts, e.hasTS = ns, true
		} else {
			e.dur, e.hasDur = ns, true
		}
	case `"id"`:
		e.id, e.hasID = flowID(v)
	}
	return true
}

// field returns where rawArgs keeps the arg of quoted key k, and its bit;
// nil for an arg it does not keep.
func (a *rawArgs) field(k []byte) (*int64, argSet) {
	switch string(k) {
	case `"Bytes"`:
		return &a.bytes, hasBytes
	case `"Total Allocated"`:
		return &a.totalAlloc, hasTotalAlloc
	case `"Total Reserved"`:
		return &a.totalRes, hasTotalRes
	case `"Addr"`:
		return &a.addr, hasAddr
	case `"Device Type"`:
		return &a.devType, hasDevType
	case `"Device Id"`:
		return &a.devID, hasDevID
	case `"Python id"`:
		return &a.pyID, hasPyID
	case `"Python parent id"`:
		return &a.pyParent, hasPyParent
	case `"Sequence number"`:
		return &a.seq, hasSeq
	case `"Fwd thread id"`:
		return &a.fwdThread, hasFwdThread
	}
	return nil, 0
}

// scanArgs keeps the numeric args listed in rawArgs.
func scanArgs(raw []byte, a *rawArgs) {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return
	}
	i++
	for more := true; more; {
		k, v0, ok := member(raw, i)
		if !ok {
			return
		}
		end := valueEnd(raw, v0)
		i, more = next(raw, end)
		dst, bit := a.field(k)
		if dst == nil {
			continue
		}
		v := raw[v0:end]
		if len(v) == 0 || v[0] == '{' || v[0] == '[' {
			continue
		}
		if n, ok := parseInt(v); ok {
			*dst = n
			a.has |= bit
		}
	}
}
