package snapshot

import (
	"encoding/binary"
	"slices"
)

// This file holds what the opcode loop in pickle_vm.go calls: opcode names
// for messages, stack and memo operations, strings, integers and the
// opcodes that work on the values above a MARK.

// opNames names every opcode CPython defines, for messages.
var opNames = map[byte]string{
	'(': "MARK", '.': "STOP", '0': "POP", '1': "POP_MARK", '2': "DUP",
	'F': "FLOAT", 'I': "INT", 'J': "BININT", 'K': "BININT1", 'L': "LONG",
	'M': "BININT2", 'N': "NONE", 'P': "PERSID", 'Q': "BINPERSID",
	'R': "REDUCE", 'S': "STRING", 'T': "BINSTRING", 'U': "SHORT_BINSTRING",
	'V': "UNICODE", 'X': "BINUNICODE", 'a': "APPEND", 'b': "BUILD",
	'c': "GLOBAL", 'd': "DICT", '}': "EMPTY_DICT", 'e': "APPENDS", 'g': "GET",
	'h': "BINGET", 'i': "INST", 'j': "LONG_BINGET", 'l': "LIST",
	']': "EMPTY_LIST", 'o': "OBJ", 'p': "PUT", 'q': "BINPUT",
	'r': "LONG_BINPUT", 's': "SETITEM", 't': "TUPLE", ')': "EMPTY_TUPLE",
	'u': "SETITEMS", 'G': "BINFLOAT", 'B': "BINBYTES", 'C': "SHORT_BINBYTES",
	0x80: "PROTO", 0x81: "NEWOBJ", 0x82: "EXT1", 0x83: "EXT2", 0x84: "EXT4",
	0x85: "TUPLE1", 0x86: "TUPLE2", 0x87: "TUPLE3", 0x88: "NEWTRUE",
	0x89: "NEWFALSE", 0x8a: "LONG1", 0x8b: "LONG4", 0x8c: "SHORT_BINUNICODE",
	0x8d: "BINUNICODE8", 0x8e: "BINBYTES8", 0x8f: "EMPTY_SET",
	0x90: "ADDITEMS", 0x91: "FROZENSET", 0x92: "NEWOBJ_EX",
	0x93: "STACK_GLOBAL", 0x94: "MEMOIZE", 0x95: "FRAME", 0x96: "BYTEARRAY8",
	0x97: "NEXT_BUFFER", 0x98: "READONLY_BUFFER",
}

// refusedWhy says why an opcode that CPython knows is refused.
func refusedWhy(op byte) string {
	switch opNames[op] {
	case "GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "EXT1", "EXT2", "EXT4":
		return "refers to a Python class: not a memory snapshot"
	case "REDUCE", "BUILD":
		return "calls a Python object: not a memory snapshot"
	case "PERSID", "BINPERSID":
		return "refers to a persistent object: not a memory snapshot"
	}
	return "is not used in memory snapshots"
}

// avail is the number of stack values above the innermost MARK.
func (d *decoder) avail() int {
	if n := len(d.marks); n > 0 {
		return len(d.stack) - d.marks[n-1]
	}
	return len(d.stack)
}

// push pushes v; run has made room for it.
func (d *decoder) push(v value) error {
	d.stack = append(d.stack, v)
	return nil
}

// growStack doubles the stack's capacity, within maxStack.
func (d *decoder) growStack() error {
	if len(d.stack) >= maxStack {
		return d.fail(kindLimit, "more than %d values on the pickle stack", maxStack)
	}
	d.stack = slices.Grow(d.stack, len(d.stack))
	return nil
}

func (d *decoder) truncated(what string) error {
	if d.in.rerr != nil { // a damaged gzip stream, a failing disk
		return d.wrapAt(d.opOff, kindTruncated, d.in.rerr, "reading "+what+" failed")
	}
	return d.fail(kindTruncated, "unexpected end of input in %s (truncated file?)", what)
}

func (d *decoder) underflow(op byte) error {
	return d.fail(kindPickle, "%s needs more values than the stack holds: not a valid pickle", opNames[op])
}

// get pushes memo entry i.
func (d *decoder) get(i uint64) error {
	v, ok := d.memo.get(i)
	if !ok {
		return d.noMemo(i)
	}
	if v.tag == tObj {
		d.objs[v.n].pinned = true
	}
	return d.push(v)
}

func (d *decoder) noMemo(i uint64) error {
	return d.fail(kindRefused, "memo index %d is not defined", i)
}

// put stores the stack top at memo index i.
func (d *decoder) put(i uint64) error {
	if d.avail() < 1 {
		return d.fail(kindPickle, "memo store with an empty stack: not a valid pickle")
	}
	v := d.stack[len(d.stack)-1]
	if v.tag == tObj {
		o := &d.objs[v.n]
		if o.memoN < 255 {
			o.memoN++
		}
		o.memoIdx = i
	}
	d.memo.set(i, v)
	return d.charge(costValue)
}

// pushString interns b (valid only until the next read) and pushes it.
func (d *decoder) pushString(unicode bool, b []byte) error {
	v := d.intern(b)
	if !unicode {
		v.tag = tBytes
	}
	return d.push(v)
}

// longString reads a string or bytes value of n bytes after its header.
func (d *decoder) longString(unicode bool, n uint64) error {
	if n > maxStringLen {
		return d.fail(kindLimit, "string of %d bytes is longer than the %d-byte limit", n, maxStringLen)
	}
	if r := d.in.remaining(); r >= 0 && n > uint64(r) {
		if d.in.rerr != nil {
			return d.truncated("a string")
		}
		return d.fail(kindTruncated, "string of %d bytes but only %d bytes remain (truncated file?)", n, r)
	}
	if d.budget > 0 && (d.used+int64(n))*heldPerUsed > d.budget { // before reading it in
		return d.charge(int64(n))
	}
	b, ok := d.in.take(int(n))
	if !ok {
		return d.truncated("a string")
	}
	return d.pushString(unicode, b)
}

// longValue decodes the operand of LONG1/LONG4 (at most 9 bytes): an int64
// as tInt, an int in [2^63, 2^64) as tUint64 (Python writes 2^64−1 with 9
// bytes, the ninth zero). ok is false for an int below −2^63.
func longValue(b []byte) (v value, ok bool) {
	if len(b) < 9 {
		return intValue(decodeLong(b)), true
	}
	lo := binary.LittleEndian.Uint64(b)
	switch {
	case b[8] == 0 && lo>>63 == 1:
		return value{tag: tUint64, n: int64(lo)}, true
	case b[8] == 0 && lo>>63 == 0, b[8] == 0xff && lo>>63 == 1:
		return intValue(int64(lo)), true // not minimal, but within int64
	}
	return value{}, false
}

// decodeLong decodes a little-endian two's-complement integer of at most
// 8 bytes (LONG1/LONG4).
func decodeLong(b []byte) int64 {
	n := len(b)
	var u uint64
	switch {
	case n == 8:
		return int64(binary.LittleEndian.Uint64(b))
	case n >= 4: // two overlapping 4-byte loads
		u = uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<(8*uint(n-4))
	default:
		for i := n - 1; i >= 0; i-- {
			u = u<<8 | uint64(b[i])
		}
	}
	shift := 64 - 8*uint(n) // 64 for an empty b: the result is 0
	return int64(u<<shift) >> shift
}

// pushTuple replaces the top n values with a tuple of them.
func (d *decoder) pushTuple(op byte, n int) error {
	if d.avail() < n {
		return d.underflow(op)
	}
	items := d.stack[len(d.stack)-n:]
	t, err := d.makeTuple(items)
	if err != nil {
		return err
	}
	d.stack = d.stack[:len(d.stack)-n]
	return d.push(t)
}

// markOp runs an opcode that takes the values above the innermost MARK.
func (d *decoder) markOp(op byte) error {
	nm := len(d.marks)
	if nm == 0 {
		return d.fail(kindPickle, "%s without a MARK: not a valid pickle", opNames[op])
	}
	m := d.marks[nm-1]
	d.marks = d.marks[:nm-1]
	items := d.stack[m:]
	var err error
	switch op {
	case opTuple:
		var t value
		if t, err = d.makeTuple(items); err == nil {
			d.stack = d.stack[:m]
			return d.push(t)
		}
		return err
	case opList, opDict:
		kind := objDict
		if op == opList {
			kind = objList
		}
		var c value
		if c, err = d.newObj(kind); err != nil {
			return err
		}
		if op == opList {
			err = d.appendItemsOp(c, items, "LIST")
		} else {
			err = d.setItemsOp(c, items, "DICT")
		}
		d.stack = d.stack[:m]
		if err != nil {
			return err
		}
		return d.push(c)
	}
	// APPENDS and SETITEMS: the container sits just below the MARK.
	floor := 0
	if nm > 1 {
		floor = d.marks[nm-2]
	}
	if m <= floor {
		return d.underflow(op)
	}
	if op == opAppends {
		err = d.appendItems(d.stack[m-1], items)
	} else {
		err = d.setItems(d.stack[m-1], items)
	}
	d.stack = d.stack[:m]
	return err
}
