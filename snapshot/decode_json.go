package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/memscope/memscope/internal/jsonlimit"
)

// decodeJSON reads a snapshot written as JSON (the form MemoryViz also
// accepts). Tokens are turned into the same containers the unpickler
// builds, so classification and conversion are shared: an object is a
// dict, an array a list, an integer an int, any other number a float.
func (d *decoder) decodeJSON(r io.Reader) (*Snapshot, error) {
	// The JSON decoder holds a whole token before handing it on: a string
	// is bounded by the budget before it is read in.
	lr := &jsonlimit.Reader{R: r, Max: max(d.budget/(2*heldPerUsed), 1<<20), What: "a quarter of the decoding budget"}
	if d.explicitBudget {
		lr.What = "a quarter of the --max-memory limit"
	}
	dec := json.NewDecoder(lr)
	dec.UseNumber()
	var opens []jsonOpen
	var top value
	done := false
	for !done {
		d.opOff = dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			if lerr := lr.Err(); lerr != nil {
				return nil, d.wrapAt(d.opOff, kindLimit, lerr, "refused")
			}
			if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
				err := d.fail(kindTruncated, "unexpected end of JSON input (truncated file?)")
				if s := d.salvageJSON(opens); s != nil {
					return s, err
				}
				return nil, err
			}
			return nil, d.wrapAt(d.opOff, kindFormat, err, "invalid JSON")
		}
		var v value
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(opens) >= maxMarks {
					return nil, d.fail(kindLimit, "JSON nests deeper than %d levels", maxMarks)
				}
				kind := objList
				if t == '{' {
					kind = objDict
				}
				c, err := d.newObj(kind)
				if err != nil {
					return nil, err
				}
				opens = append(opens, jsonOpen{c: c, dict: t == '{'})
				continue
			}
			v = opens[len(opens)-1].c
			opens = opens[:len(opens)-1]
		case string:
			v = d.internString(t)
			if n := len(opens); n > 0 && opens[n-1].dict && !opens[n-1].hasKey {
				opens[n-1].key, opens[n-1].hasKey = v, true
				continue
			}
		case json.Number:
			if v, err = d.jsonNumber(t); err != nil {
				return nil, err
			}
		case bool:
			v = boolValue(t)
		case nil:
			v = value{}
		}
		if len(opens) == 0 {
			top, done = v, true
			break
		}
		p := &opens[len(opens)-1]
		if p.dict {
			err = d.setItems(p.c, []value{p.key, v})
			p.hasKey = false
		} else {
			err = d.appendItems(p.c, []value{v})
		}
		if err != nil {
			return nil, err
		}
	}
	s, err := d.finish(top)
	if s != nil {
		s.Format = FormatJSON
	}
	return s, err
}

// jsonOpen is a JSON object or array being read.
type jsonOpen struct {
	c      value
	dict   bool
	key    value
	hasKey bool
}

// salvageJSON builds what it can from JSON that ended early (opens are the
// containers still open, outermost first), as salvage does for a pickle:
// each open array is closed with the items read, each open object but the
// top-level one is dropped (a segment, a trace entry, a frame cut short),
// and the top-level object is read if its "segments" were reached.
func (d *decoder) salvageJSON(opens []jsonOpen) *Snapshot {
	if len(opens) == 0 || !opens[0].dict {
		return nil
	}
	at := d.opOff
	for k := len(opens) - 1; k >= 1; k-- {
		child, p := opens[k], &opens[k-1]
		if child.dict {
			p.hasKey = false
			continue
		}
		var err error
		if p.dict {
			if !p.hasKey {
				continue
			}
			err = d.setItems(p.c, []value{p.key, child.c})
			p.hasKey = false
		} else {
			err = d.appendItems(p.c, []value{child.c})
		}
		if err != nil {
			return nil
		}
	}
	s, err := d.finish(opens[0].c)
	if err != nil || s == nil {
		return nil
	}
	s.Format = FormatJSON
	lost := fmt.Sprintf("the file ends early, at byte %d: kept %d segments", at, len(s.Segments))
	if n := len(s.Traces); n > 0 {
		lost += fmt.Sprintf(" and %d device traces, the last with the %d entries read", n, len(s.Traces[n-1]))
	}
	s.Warnings = append(s.Warnings, Warning{Device: -1, Kind: WarnLost,
		Message: lost + "; the entry, segment or key being read when it ended and everything after it are lost"})
	return s
}

// jsonNumber converts a JSON number: integers to int (within int64; those
// in [2^63, 2^64) as tUint64, like a 9-byte LONG1), anything with a fraction or exponent to float.
func (d *decoder) jsonNumber(n json.Number) (value, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		i, err := strconv.ParseInt(s, 10, 64)
		if err == nil {
			return intValue(i), nil
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return value{tag: tUint64, n: int64(u)}, nil
		}
		return value{}, d.fail(kindRefused, "integer %s does not fit in 64 bits", s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return value{}, d.fail(kindFormat, "number %s: %v", s, err)
	}
	return floatValue(f), nil
}
