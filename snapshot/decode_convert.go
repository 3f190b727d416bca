package snapshot

import "math"

// This file converts classified dicts into model structs. Each reads the
// dict's items backwards and skips keys already seen, so a repeated key
// takes its last value, as in Python, and earlier values are not looked
// at. Unknown keys are ignored. Integers accept int, bool, None (0) and
// integral floats; strings accept str and None ("").

// convFrame converts a frame dict.
func (d *decoder) convFrame(c *object) (FrameID, error) {
	var f Frame
	var seen uint64
	for i := len(c.pairs) - 1; i >= 0; i-- {
		p := c.pairs[i]
		var dst *string
		switch lastKey(p.k, &seen) {
		case kName:
			dst = &f.Name
		case kFilename:
			dst = &f.Filename
		case kFXNodeOp:
			dst = &f.FXNodeOp
		case kFXNodeName:
			dst = &f.FXNodeName
		case kFXNodeTarget:
			dst = &f.FXNodeTarget
		case kFXOriginalTrace:
			dst = &f.FXOriginalTrace
		case kLine:
			if p.v.tag == tUint64 { // −1 written as unsigned: no line
				continue
			}
			n, err := d.intField(c, "frame", p)
			if err != nil {
				return 0, err
			}
			f.Line = max(n, 0) // torch writes −1 for a frame with no line
			continue
		default:
			continue
		}
		id, err := d.strField(c, "frame", p)
		if err != nil {
			return 0, err
		}
		*dst = d.strs[id]
	}
	return d.stacks.InternFrame(f), nil
}

// convEvent converts a trace entry into *e, which is zero. An oom entry
// keeps device_free in Addr.
func (d *decoder) convEvent(c *object, e *Event) error {
	var addr, free int64
	var hasFree, hasFrames bool
	var cpp value
	var seen uint64
	for i := len(c.pairs) - 1; i >= 0; i-- {
		p := c.pairs[i]
		var err error
		switch lastKey(p.k, &seen) {
		case kAction:
			if p.v.tag != tStr {
				return d.badField(c, "trace entry", p, "a str")
			}
			e.Action = actionOfString(p.v.n)
		case kAddr:
			if addr = p.v.n; p.v.tag != tInt { // the common case inline
				addr, err = d.intField(c, "trace entry", p)
			}
		case kDeviceFree:
			free, err = d.intField(c, "trace entry", p)
			hasFree = true
		case kSize:
			if e.Size = p.v.n; p.v.tag != tInt {
				e.Size, err = d.intField(c, "trace entry", p)
			}
		case kStream:
			if e.Stream = p.v.n; p.v.tag != tInt {
				e.Stream, err = d.intField(c, "trace entry", p)
			}
		case kTimeUS:
			if e.TimeUS = p.v.n; p.v.tag != tInt {
				e.TimeUS, err = d.intField(c, "trace entry", p)
			}
		case kCompileContext:
			id := uint32(p.v.n)
			if p.v.tag != tStr {
				id, err = d.strField(c, "trace entry", p)
			}
			e.CompileContext = d.tableString(id)
		case kUserMetadata:
			id := uint32(p.v.n)
			if p.v.tag != tStr {
				id, err = d.strField(c, "trace entry", p)
			}
			e.UserMetadata = d.tableString(id)
		case kFrames:
			if e.Stack = StackID(p.v.n); p.v.tag != tStack {
				e.Stack, err = d.stackField(c, "trace entry", p)
			}
			hasFrames = true
		case kCppFrames:
			cpp = p.v
		}
		if err != nil {
			return err
		}
	}
	e.Addr = uint64(addr)
	if e.Action == ActionOOM && hasFree {
		e.Addr = uint64(free)
	}
	if !hasFrames && cpp.tag != tNone {
		var err error
		if e.Stack, err = d.cppStack(c, "trace entry", cpp); err != nil {
			return err
		}
	}
	return nil
}

// lastKey returns the known-key ID of k, or -1 when k is not a known key
// or was already seen: walking a dict's items backwards, only the last
// value of a repeated key counts, as in Python.
func lastKey(k value, seen *uint64) int {
	if k.tag != tStr || k.n >= numKeys {
		return -1
	}
	bit := uint64(1) << uint(k.n)
	if *seen&bit != 0 {
		return -1
	}
	*seen |= bit
	return int(k.n)
}

// actionOfString maps a string ID to an Action; unknown strings give
// ActionUnknown.
func actionOfString(id int64) Action {
	if a := id - vAlloc + int64(ActionAlloc); id >= vAlloc && a < int64(numActions) {
		return Action(a)
	}
	return ActionUnknown
}

// convBlock converts a block. Its address is set later, from the segment.
// legacy reports a ≤2.0 block with "history".
func (d *decoder) convBlock(c *object) (b Block, legacy bool, err error) {
	var hasReq, hasFrames bool
	var history value
	var seen uint64
	for i := len(c.pairs) - 1; i >= 0; i-- {
		p := c.pairs[i]
		switch lastKey(p.k, &seen) {
		case kSize:
			b.Size, err = d.intField(c, "block", p)
		case kRequestedSize:
			b.RequestedSize, err = d.intField(c, "block", p)
			hasReq = p.v.tag != tNone
		case kState:
			b.State, err = d.stateField(c, p)
		case kFrames:
			b.Stack, err = d.stackField(c, "block", p)
			hasFrames = true
		case kHistory:
			history = p.v
		}
		if err != nil {
			return b, false, err
		}
	}
	if history.tag == tNone {
		if !hasReq {
			b.RequestedSize = b.Size
		}
		return b, false, nil
	}
	// Legacy: the stack and the request come from the first history entry.
	h, err := d.historyHead(c, history)
	if err != nil {
		return b, true, err
	}
	var realSize int64
	var hasReal bool
	var frames, cpp value
	var hasHFrames bool
	if h != nil {
		seen = 0
		for i := len(h.pairs) - 1; i >= 0; i-- {
			p := h.pairs[i]
			switch lastKey(p.k, &seen) {
			case kRealSize:
				realSize, err = d.intField(c, "block history", p)
				hasReal = p.v.tag != tNone
			case kFrames:
				frames, hasHFrames = p.v, true
			case kCppFrames:
				cpp = p.v
			}
			if err != nil {
				return b, true, err
			}
		}
	}
	if !hasReq {
		b.RequestedSize = b.Size
		if hasReal {
			b.RequestedSize = realSize
		}
	}
	if !hasFrames {
		switch {
		case hasHFrames:
			b.Stack, err = d.stackField(c, "block history", kv{k: value{tag: tStr, n: kFrames}, v: frames})
		case cpp.tag != tNone:
			b.Stack, err = d.cppStack(c, "block history", cpp)
		}
	}
	return b, true, err
}

// historyHead returns the first entry of a legacy block history, nil when
// the history is empty.
func (d *decoder) historyHead(c *object, h value) (*object, error) {
	h = d.resolve(h)
	if h.tag == tStack && h.n == 0 {
		return nil, nil
	}
	if h.tag == tObj && d.objs[h.n].kind == objList {
		o := &d.objs[h.n]
		if o.err != nil {
			return nil, o.err
		}
		o.stored = true
		switch o.lkind {
		case listEmpty:
			return nil, nil
		case listGeneric:
			if first := o.items[0]; first.tag == tObj && d.objs[first.n].kind == objDict {
				f := &d.objs[first.n]
				f.stored = true
				return f, nil
			}
		}
	}
	return nil, d.failAt(c.off, kindSchema, "block: \"history\" is %s, want a list of dicts", d.describe(h))
}

func (d *decoder) stateField(c *object, p kv) (BlockState, error) {
	switch {
	case p.v.tag != tStr:
		return 0, d.badField(c, "block", p, "a str")
	case p.v.n == vActiveAllocated:
		return BlockActiveAllocated, nil
	case p.v.n == vActivePendingFree:
		return BlockActivePendingFree, nil
	case p.v.n == vInactive:
		return BlockInactive, nil
	}
	return BlockUnknown, nil
}

// intField reads an integer-valued item.
func (d *decoder) intField(c *object, what string, p kv) (int64, error) {
	switch v := p.v; v.tag {
	case tInt, tBool:
		return v.n, nil
	case tNone:
		return 0, nil
	case tFloat:
		if f := v.float(); f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
			return int64(f), nil
		}
	case tUint64:
		return 0, d.failAt(c.off, kindSchema, "%s: %s is %d, which does not fit in a signed 64-bit int", what, d.keyName(p.k), uint64(v.n))
	}
	return 0, d.badField(c, what, p, "an int")
}

// strField reads a string-valued item and returns its string ID.
func (d *decoder) strField(c *object, what string, p kv) (uint32, error) {
	switch p.v.tag {
	case tStr:
		return uint32(p.v.n), nil
	case tNone:
		return sEmpty, nil
	}
	return 0, d.badField(c, what, p, "a str")
}

// boolField reads a bool-valued item.
func (d *decoder) boolField(c *object, what string, p kv) (bool, error) {
	switch p.v.tag {
	case tBool, tInt:
		return p.v.n != 0, nil
	case tNone:
		return false, nil
	}
	return false, d.badField(c, what, p, "a bool")
}

// stackField reads a "frames" item: a list of frames, an empty list or None.
func (d *decoder) stackField(c *object, what string, p kv) (StackID, error) {
	v := d.resolve(p.v)
	switch v.tag {
	case tNone:
		return 0, nil
	case tStack:
		return StackID(v.n), nil
	case tObj:
		if o := &d.objs[v.n]; o.kind == objList {
			if o.err != nil {
				return 0, o.err
			}
			switch o.lkind {
			case listEmpty:
				o.stored = true
				return 0, nil
			case listFrames: // kept whole because it is also referred to elsewhere
				o.stored = true
				return d.internStack(o.frames), nil
			}
		}
	}
	return 0, d.badField(c, what, kv{p.k, v}, "a list of frames")
}

// cppStack makes a stack of legacy cpp_frames strings: each becomes a frame
// named by the string, with filename "??".
func (d *decoder) cppStack(c *object, what string, v value) (StackID, error) {
	v = d.resolve(v)
	if v.tag == tStack && v.n == 0 {
		return 0, nil
	}
	bad := d.badField(c, what, kv{value{tag: tStr, n: kCppFrames}, v}, "a list of str")
	if v.tag != tObj || d.objs[v.n].kind != objList {
		return 0, bad
	}
	o := &d.objs[v.n]
	if o.err != nil {
		return 0, o.err
	}
	o.stored = true
	if o.lkind == listEmpty {
		return 0, nil
	}
	if o.lkind != listGeneric {
		return 0, bad
	}
	ids := d.frameBuf[:0]
	for _, it := range o.items {
		if it.tag != tStr {
			return 0, bad
		}
		ids = append(ids, d.stacks.InternFrame(Frame{Name: d.strs[it.n], Filename: "??"}))
	}
	d.frameBuf = ids
	return d.internStack(ids), nil
}

// tableString returns the Strings ID of decoder string id.
func (d *decoder) tableString(id uint32) StringID {
	if int(id) < len(d.ctxIDs) && d.ctxIDs[id] != 0 {
		return d.ctxIDs[id]
	}
	return d.tableStringSlow(id)
}

func (d *decoder) tableStringSlow(id uint32) StringID {
	if id == sEmpty {
		return 0
	}
	if n := int(id) + 1 - len(d.ctxIDs); n > 0 {
		d.ctxIDs = append(d.ctxIDs, make([]StringID, n+len(d.ctxIDs)/2)...)
	}
	s := d.strings.Intern(d.strs[id])
	d.ctxIDs[id] = s
	return s
}

// badField returns the error for an item of the wrong type.
func (d *decoder) badField(c *object, what string, p kv, want string) error {
	return d.failAt(c.off, kindSchema, "%s: %s is %s, want %s", what, d.keyName(p.k), d.describe(d.resolve(p.v)), want)
}
