package snapshot

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// decodeJSON reads a snapshot written as JSON (the form MemoryViz also
// accepts). Tokens are turned into the same containers the unpickler
// builds, so classification and conversion are shared: an object is a
// dict, an array a list, an integer an int, any other number a float.
func (d *decoder) decodeJSON(r io.Reader) (*Snapshot, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	type open struct {
		c      value
		dict   bool
		key    value
		hasKey bool
	}
	var opens []open
	var top value
	done := false
	for !done {
		d.opOff = dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, d.fail(kindTruncated, "unexpected end of JSON input (truncated file?)")
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
				opens = append(opens, open{c: c, dict: t == '{'})
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
