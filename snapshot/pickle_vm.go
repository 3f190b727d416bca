package snapshot

import (
	"encoding/binary"
	"fmt"
	"math"
)

// This file is the unpickler's machine: one loop over opcodes, decoding
// straight from the input window. Containers are handed to
// decode_consume.go as they are filled; nothing is ever instantiated.

// Pickle opcodes, named as in CPython's pickle.py.
const (
	opMark           = '('
	opStop           = '.'
	opBinInt         = 'J'
	opBinInt1        = 'K'
	opBinInt2        = 'M'
	opNone           = 'N'
	opBinUnicode     = 'X'
	opAppend         = 'a'
	opDict           = 'd'
	opEmptyDict      = '}'
	opAppends        = 'e'
	opBinGet         = 'h'
	opLongBinGet     = 'j'
	opList           = 'l'
	opEmptyList      = ']'
	opBinPut         = 'q'
	opLongBinPut     = 'r'
	opSetItem        = 's'
	opTuple          = 't'
	opEmptyTuple     = ')'
	opSetItems       = 'u'
	opBinFloat       = 'G'
	opBinBytes       = 'B'
	opShortBinBytes  = 'C'
	opProto          = 0x80
	opTuple1         = 0x85
	opTuple2         = 0x86
	opTuple3         = 0x87
	opNewTrue        = 0x88
	opNewFalse       = 0x89
	opLong1          = 0x8a
	opLong4          = 0x8b
	opShortBinUnicod = 0x8c
	opBinUnicode8    = 0x8d
	opMemoize        = 0x94
	opFrame          = 0x95
)

// memoPush adds v as the next dense memo entry, charging each memo chunk
// as it fills.
func (d *decoder) memoPush(v value) error {
	m := &d.memo
	m.push(v)
	m.count++
	if m.n&(memoChunk-1) == 0 {
		return d.charge(memoChunk * costMemo)
	}
	return nil
}

// memoPushAll is memoPush for each of ps, in order.
func (d *decoder) memoPushAll(ps []pendingMemo) error {
	before := d.memo.n
	d.memo.pushAll(ps)
	if chunks := d.memo.n>>memoChunkBits - before>>memoChunkBits; chunks > 0 {
		return d.charge(int64(chunks) * memoChunk * costMemo)
	}
	return nil
}

// run executes opcodes until STOP and returns the value on top of the stack.
// The window buf (the input buffer up to its end) and pos are kept in
// locals and written back to d.in around the few opcodes that read more.
func (d *decoder) run() (value, error) {
	in := &d.in
	buf, pos := in.buf[:in.end], in.pos
	for {
		if len(buf)-pos < 16 && !in.eof {
			in.pos = pos
			in.fill(16)
			buf, pos = in.buf[:in.end], in.pos
		}
		if len(d.stack) == cap(d.stack) { // every opcode pushes at most one value
			if err := d.growStack(); err != nil {
				return value{}, err
			}
		}
		d.opOff = in.base + int64(pos)
		if pos >= len(buf) {
			return value{}, d.truncated("an opcode")
		}
		op := buf[pos]
		var err error
		switch op {
		case opBinGet, opLongBinGet:
			var i uint64
			if op == opBinGet {
				if pos+2 > len(buf) {
					return value{}, d.truncated("BINGET")
				}
				i = uint64(buf[pos+1])
				pos += 2
			} else {
				if pos+5 > len(buf) {
					return value{}, d.truncated("LONG_BINGET")
				}
				i = uint64(binary.LittleEndian.Uint32(buf[pos+1:]))
				pos += 5
			}
			if i >= d.memo.n {
				err = d.get(i)
				break
			}
			v := d.memo.at(i)
			if v.tag == tObj {
				d.objs[v.n].pinned = true
			}
			d.stack = append(d.stack, v)
		case opMemoize:
			pos++
			m := &d.memo
			if m.count != m.n || len(m.sparse) != 0 || d.avail() < 1 {
				err = d.put(m.count)
				break
			}
			v := d.stack[len(d.stack)-1]
			if v.tag == tObj {
				o := &d.objs[v.n]
				o.memoIdx = m.n
				if o.memoN < 255 {
					o.memoN++
				}
			}
			err = d.memoPush(v)
		case opBinPut:
			if pos+2 > len(buf) {
				return value{}, d.truncated("BINPUT")
			}
			err = d.put(uint64(buf[pos+1]))
			pos += 2
		case opLongBinPut:
			if pos+5 > len(buf) {
				return value{}, d.truncated("LONG_BINPUT")
			}
			err = d.put(uint64(binary.LittleEndian.Uint32(buf[pos+1:])))
			pos += 5
		case opMark:
			if pos+1 < len(buf) && buf[pos+1] == opEmptyDict {
				in.pos = pos
				ok, ferr := d.fastBatch()
				buf, pos = in.buf[:in.end], in.pos
				if ferr != nil {
					return value{}, ferr
				}
				if ok {
					continue
				}
			}
			pos++
			if len(d.marks) >= maxMarks {
				return value{}, d.fail(kindLimit, "more than %d nested MARKs", maxMarks)
			}
			d.marks = append(d.marks, len(d.stack))
		case opShortBinUnicod, opShortBinBytes:
			if pos+2 > len(buf) {
				return value{}, d.truncated(opNames[op])
			}
			n := int(buf[pos+1])
			if pos+2+n > len(buf) {
				in.pos = pos
				if !in.fill(2 + n) {
					return value{}, d.truncated(opNames[op])
				}
				buf, pos = in.buf[:in.end], in.pos
			}
			b := buf[pos+2 : pos+2+n]
			pos += 2 + n
			err = d.pushString(op == opShortBinUnicod, b)
		case opBinUnicode, opBinBytes, opBinUnicode8:
			w := 5
			if op == opBinUnicode8 {
				w = 9
			}
			if pos+w > len(buf) {
				return value{}, d.truncated(opNames[op])
			}
			var n uint64
			if w == 5 {
				n = uint64(binary.LittleEndian.Uint32(buf[pos+1:]))
			} else {
				n = binary.LittleEndian.Uint64(buf[pos+1:])
			}
			in.pos = pos + w
			err = d.longString(op != opBinBytes, n)
			buf, pos = in.buf[:in.end], in.pos
		case opBinInt1:
			if pos+2 > len(buf) {
				return value{}, d.truncated("BININT1")
			}
			d.stack = append(d.stack, intValue(int64(buf[pos+1])))
			pos += 2
		case opBinInt2:
			if pos+3 > len(buf) {
				return value{}, d.truncated("BININT2")
			}
			d.stack = append(d.stack, intValue(int64(binary.LittleEndian.Uint16(buf[pos+1:]))))
			pos += 3
		case opBinInt:
			if pos+5 > len(buf) {
				return value{}, d.truncated("BININT")
			}
			d.stack = append(d.stack, intValue(int64(int32(binary.LittleEndian.Uint32(buf[pos+1:])))))
			pos += 5
		case opLong1:
			if pos+2 > len(buf) {
				return value{}, d.truncated("LONG1")
			}
			n := int(buf[pos+1])
			if n > 9 {
				return value{}, d.fail(kindRefused, "LONG1 integer of %d bytes does not fit in 64 bits", n)
			}
			if pos+2+n > len(buf) {
				return value{}, d.truncated("LONG1")
			}
			v, ok := longValue(buf[pos+2 : pos+2+n])
			if !ok {
				return value{}, d.fail(kindRefused, "LONG1 integer of %d bytes does not fit in 64 bits", n)
			}
			d.stack = append(d.stack, v)
			pos += 2 + n
		case opLong4:
			if pos+5 > len(buf) {
				return value{}, d.truncated("LONG4")
			}
			n := int32(binary.LittleEndian.Uint32(buf[pos+1:]))
			if n < 0 || n > 9 {
				return value{}, d.fail(kindRefused, "LONG4 integer of %d bytes does not fit in 64 bits", n)
			}
			if pos+5+int(n) > len(buf) {
				return value{}, d.truncated("LONG4")
			}
			v, ok := longValue(buf[pos+5 : pos+5+int(n)])
			if !ok {
				return value{}, d.fail(kindRefused, "LONG4 integer of %d bytes does not fit in 64 bits", n)
			}
			d.stack = append(d.stack, v)
			pos += 5 + int(n)
		case opBinFloat:
			if pos+9 > len(buf) {
				return value{}, d.truncated("BINFLOAT")
			}
			d.stack = append(d.stack, floatValue(math.Float64frombits(binary.BigEndian.Uint64(buf[pos+1:]))))
			pos += 9
		case opNone:
			pos++
			d.stack = append(d.stack, value{})
		case opNewTrue, opNewFalse:
			pos++
			d.stack = append(d.stack, boolValue(op == opNewTrue))
		case opEmptyDict, opEmptyList:
			pos++
			kind := objDict
			if op == opEmptyList {
				kind = objList
			}
			var v value
			if v, err = d.newObj(kind); err == nil {
				d.stack = append(d.stack, v)
			}
		case opEmptyTuple:
			pos++
			err = d.pushTuple(op, 0)
		case opTuple1, opTuple2, opTuple3:
			pos++
			err = d.pushTuple(op, int(op-opTuple1)+1)
		case opTuple, opSetItems, opAppends, opList, opDict:
			pos++
			err = d.markOp(op)
		case opAppend:
			pos++
			if d.avail() < 2 {
				return value{}, d.underflow(op)
			}
			n := len(d.stack)
			err = d.appendItemsOp(d.stack[n-2], d.stack[n-1:], "APPEND")
			d.stack = d.stack[:n-1]
		case opSetItem:
			pos++
			if d.avail() < 3 {
				return value{}, d.underflow(op)
			}
			n := len(d.stack)
			err = d.setItemsOp(d.stack[n-3], d.stack[n-2:], "SETITEM")
			d.stack = d.stack[:n-2]
		case opFrame:
			if pos+9 > len(buf) {
				return value{}, d.truncated("FRAME")
			}
			n := binary.LittleEndian.Uint64(buf[pos+1:])
			pos += 9
			// A frame longer than what remains is a file cut short: its
			// opcodes are read as far as they go, so that the valid part
			// is kept; the cut is reported where the input ends.
			in.pos = pos
			if r := in.remaining(); r >= 0 && n > uint64(r) && d.shortFrame == "" {
				d.shortFrame = fmt.Sprintf("the FRAME at byte %d claims %d bytes but only %d bytes remain (truncated file?)", d.opOff, n, r)
			}
		case opProto:
			if pos+2 > len(buf) {
				return value{}, d.truncated("PROTO")
			}
			p := int(buf[pos+1])
			pos += 2
			if p < 2 || p > 5 {
				return value{}, d.fail(kindRefused, "pickle protocol %d is not supported (want 2 to 5)", p)
			}
			if d.proto == 0 {
				d.proto = p
			}
		case opStop:
			in.pos = pos + 1
			if d.avail() < 1 {
				return value{}, d.underflow(op)
			}
			return d.stack[len(d.stack)-1], nil
		default:
			if name, ok := opNames[op]; ok {
				return value{}, d.fail(kindRefused, "opcode 0x%02x (%s) %s", op, name, refusedWhy(op))
			}
			return value{}, d.fail(kindPickle, "unknown opcode 0x%02x: not a pickle, or a damaged one", op)
		}
		if err != nil {
			return value{}, err
		}
	}
}
