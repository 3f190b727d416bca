package snapshot

import "slices"

// This file decides what a container becomes when it is filled. A dict
// appended to a list is classified once by its keys and converted into a
// frame, trace entry, block, segment or annotation, stored in the typed
// storage of that list; a list of frames stored anywhere becomes a StackID.
// Other containers stay whole (they are few: the top-level dict, settings,
// legacy history). Conversion errors do not stop decoding: they poison the
// list that received the bad item, and surface only if that list is used.

// class is the shape of a dict, from its keys.
type class uint8

const (
	clsGeneric class = iota
	clsFrame
	clsEvent
	clsBlock
	clsSegment
	clsAnnot
)

var classNames = [...]string{
	clsGeneric: "plain value", clsFrame: "frame", clsEvent: "trace entry",
	clsBlock: "block", clsSegment: "segment", clsAnnot: "annotation",
}

// classify returns a dict's shape from its key mask. The order matters:
// a trace entry has "action", a segment "blocks", a block "state" (or the
// legacy "history"), an annotation "stage", a frame "filename".
func classify(keys uint64) class {
	switch {
	case keys&(1<<kAction) != 0:
		return clsEvent
	case keys&(1<<kBlocks) != 0:
		return clsSegment
	case keys&(1<<kState|1<<kHistory) != 0:
		return clsBlock
	case keys&(1<<kStage) != 0:
		return clsAnnot
	case keys&(1<<kFilename) != 0:
		return clsFrame
	}
	return clsGeneric
}

// listKindOf is the list kind that holds items of class c.
var listKindOf = [...]listKind{
	clsGeneric: listGeneric, clsFrame: listFrames, clsEvent: listEvents,
	clsBlock: listBlocks, clsSegment: listSegments, clsAnnot: listAnnots,
}

// store prepares v to be kept inside a container: a list of frames (or an
// empty list) becomes its stack; any other container is pinned so that it
// is never recycled.
func (d *decoder) store(v value) value {
	if v.tag != tObj {
		return v
	}
	o := &d.objs[v.n]
	if o.hasConv {
		return o.conv
	}
	if o.kind == objList && (o.lkind == listFrames || o.lkind == listEmpty) && o.err == nil {
		// An empty list becomes the empty stack: tStack 0 stands for "an
		// empty list" wherever a list is expected.
		conv := value{tag: tStack, n: int64(d.internStack(o.frames))}
		d.recycle(uint32(v.n), conv)
		return conv
	}
	o.pinned, o.stored = true, true
	return v
}

// target returns the object a SETITEM(S) or APPEND(S) writes into.
func (d *decoder) target(c value, want objKind, op string) (*object, error) {
	if c.tag != tObj {
		if c.tag >= tFrame {
			return nil, d.fail(kindRefused, "%s into a container already stored elsewhere: not a memory snapshot", op)
		}
		return nil, d.fail(kindPickle, "%s into %s: not a valid pickle", op, d.describe(c))
	}
	o := &d.objs[c.n]
	if o.kind != want {
		return nil, d.fail(kindPickle, "%s into %s: not a valid pickle", op, d.describe(c))
	}
	if o.stored || o.hasConv {
		return nil, d.fail(kindRefused, "%s into a container already stored elsewhere: not a memory snapshot", op)
	}
	return o, nil
}

// setItems adds key/value pairs (alternating in items) to a dict.
func (d *decoder) setItems(dict value, items []value) error {
	return d.setItemsOp(dict, items, "SETITEMS")
}

// setItemsOp is setItems for opcode op, named in messages.
func (d *decoder) setItemsOp(dict value, items []value, op string) error {
	if len(items)%2 != 0 {
		return d.fail(kindPickle, "%s with a key but no value: not a valid pickle", op)
	}
	o, err := d.target(dict, objDict, op)
	if err != nil {
		return err
	}
	if err := d.charge(int64(len(items)/2) * costPair); err != nil {
		return err
	}
	keys := o.keys
	n := len(o.pairs)
	o.pairs = slices.Grow(o.pairs, len(items)/2)[:n+len(items)/2]
	pairs := o.pairs[n:]
	for i := range pairs {
		k, v := items[2*i], items[2*i+1]
		if k.tag == tStr {
			if k.n < numKeys {
				keys |= 1 << uint(k.n)
			}
		} else if k.tag == tObj {
			k = d.store(k)
		}
		if v.tag == tObj {
			v = d.store(v)
		}
		pairs[i] = kv{k, v}
	}
	o.keys = keys
	return nil
}

// makeTuple returns a tuple of items.
func (d *decoder) makeTuple(items []value) (value, error) {
	if len(items) > maxStack {
		return value{}, d.fail(kindLimit, "tuple of more than %d items", maxStack)
	}
	if err := d.charge(int64(len(items)) * costValue); err != nil {
		return value{}, err
	}
	for i, it := range items {
		if it.tag == tObj {
			items[i] = d.store(it)
		}
	}
	return d.tuples.add(items), nil
}

// appendItems appends items to a list, converting schema dicts by shape.
func (d *decoder) appendItems(list value, items []value) error {
	return d.appendItemsOp(list, items, "APPENDS")
}

// appendItemsOp is appendItems for opcode op, named in messages.
func (d *decoder) appendItemsOp(list value, items []value, op string) error {
	o, err := d.target(list, objList, op)
	if err != nil {
		return err
	}
	li := uint32(list.n)
	var cost int64 // of what is copied: a value shared through the memo is copied at each use
	for _, it := range items {
		if it.tag == tObj {
			if c := &d.objs[it.n]; c.hasConv {
				it = c.conv
			} else if c.kind == objDict {
				d.appendDict(o, li, uint32(it.n), c)
				continue
			} else {
				it = d.store(it)
			}
		}
		switch it.tag {
		case tFrame:
			cost += costFrame
			if d.admit(o, clsFrame) {
				o.frames = append(o.frames, FrameID(it.n))
			}
		case tEvent:
			cost += costEvent
			if d.admit(o, clsEvent) {
				o.typed.events.add(d.objs[it.aux].typed.events.at(int(it.n)))
			}
		case tBlock:
			cost += costBlock
			if d.admit(o, clsBlock) {
				o.typed.blocks = append(o.typed.blocks, d.objs[it.aux].typed.blocks[it.n])
			}
		case tSegment:
			cost += costSeg
			if d.admit(o, clsSegment) {
				src := &d.objs[it.aux]
				o.typed.segs = append(o.typed.segs, src.typed.segs[it.n])
				o.typed.legacy = o.typed.legacy || src.typed.legacy
			}
		case tAnnot:
			cost += costAnnot
			if d.admit(o, clsAnnot) {
				o.typed.annots = append(o.typed.annots, d.objs[it.aux].typed.annots[it.n])
			}
		default:
			cost += costValue
			if d.admit(o, clsGeneric) {
				o.items = append(o.items, it)
			}
		}
	}
	if o.lkind == listEvents && o.typed != nil {
		d.reserveEvents(&o.typed.events)
	}
	return d.charge(cost)
}

// appendDict converts dict c (object ci) by shape and appends it to list o
// (object li). A dict that fails to convert poisons the list.
func (d *decoder) appendDict(o *object, li, ci uint32, c *object) {
	cls := classify(c.keys)
	if o.lkind != listKindOf[cls] && !d.admit(o, cls) && cls != clsGeneric {
		// Converted all the same, so that a later reference to the same
		// dict finds it; the list is already poisoned.
		if o.typed == nil {
			o.typed = &typedList{}
		}
	}
	var conv value
	var err error
	switch cls {
	case clsGeneric:
		c.pinned, c.stored = true, true
		if o.lkind == listGeneric {
			o.items = append(o.items, value{tag: tObj, n: int64(ci)})
		}
		return
	case clsFrame:
		var f FrameID
		if f, err = d.convFrame(c); err == nil {
			o.frames = append(o.frames, f)
			conv = value{tag: tFrame, n: int64(f)}
		}
	case clsEvent:
		if err = d.convEvent(c, o.typed.events.next()); err == nil {
			conv = value{tag: tEvent, aux: li, n: int64(o.typed.events.n - 1)}
		} else {
			o.typed.events.drop()
		}
	case clsBlock:
		var b Block
		var legacy bool
		if b, legacy, err = d.convBlock(c); err == nil {
			o.typed.blocks = append(o.typed.blocks, b)
			o.typed.legacy = o.typed.legacy || legacy
			conv = value{tag: tBlock, aux: li, n: int64(len(o.typed.blocks) - 1)}
		}
	case clsSegment:
		var s Segment
		var legacy bool
		if s, legacy, err = d.convSegment(c); err == nil {
			o.typed.segs = append(o.typed.segs, s)
			o.typed.legacy = o.typed.legacy || legacy
			conv = value{tag: tSegment, aux: li, n: int64(len(o.typed.segs) - 1)}
		}
	case clsAnnot:
		var a Annotation
		if a, err = d.convAnnot(c); err == nil {
			o.typed.annots = append(o.typed.annots, a)
			conv = value{tag: tAnnot, aux: li, n: int64(len(o.typed.annots) - 1)}
		}
	}
	if err != nil {
		d.poison(o, err)
		c.pinned, c.stored = true, true // keep it whole: it may be looked at again
		return
	}
	d.recycle(ci, conv)
}

// admit fixes the list's kind from its first item and reports whether an
// item of class c fits it. A misfit poisons the list.
func (d *decoder) admit(o *object, c class) bool {
	want := listKindOf[c]
	if o.lkind == listEmpty {
		o.lkind = want
		if want >= listEvents && o.typed == nil {
			o.typed = &typedList{}
			d.used += costTyped // checked by the next charge
			if want == listEvents {
				d.used += 4 * costEvent // the first chunk (eventStore.newChunk)
			}
		}
		if want == listEvents && d.sized && !d.hinted {
			d.hinted = true
			o.typed.events.sizable, o.typed.events.start = true, o.off
		}
		return true
	}
	if o.lkind == want {
		return true
	}
	if o.err == nil {
		o.err = d.failAt(o.off, kindSchema, "list mixes %ss with %ss", classNames[classOfList(o.lkind)], classNames[c])
	}
	return false
}

// reserveEvents sizes the first list of entries of a pickle of known size
// so that it is filled in place and never copied (the list holds nearly
// all of a big snapshot): its capacity is what the bytes left hold at the
// bytes per entry read so far. The estimate is made at 1,000 entries and
// re-made each time the count doubles, and when the room left runs short:
// the first entries carry most of the frame definitions (each frame dict
// is written where it is first used), and the first step's mix of entries
// is not the run's, so an early estimate is short (at 1,000 entries: 74%
// of the count of the fsdp2 fixture, 82% on gensnap -realistic, 58% on a
// 1 GB capture in issue 34; the margin of 15% made the first two 85% and
// 94%), and a short one costs, at the end, a copy of the whole list
// (flat) with the garbage collector running against it. Grown early, the
// copy is of the few entries read so far: up to 65,536 entries the list
// only makes room for the next 131,072, and the first estimate past that
// sizes it. The unused capacity is never touched (Event holds no
// pointers): address space, not memory; but the runtime counts it as heap
// against the soft memory limit, so it is bounded by what the bytes left
// could hold (16 bytes an entry at the least) and by the entries the
// decoding budget left can pay for.
func (d *decoder) reserveEvents(s *eventStore) {
	if !s.sizable || len(s.chunks) != 0 || s.n < 1000 {
		return
	}
	room := cap(s.cur) - len(s.cur)
	if s.n < s.check && room >= reserveSlack {
		return
	}
	s.check = 2 * s.n
	used, left := d.in.offset()-s.start, d.in.remaining()
	if used <= 0 || left <= 0 {
		return
	}
	most := float64(left / 16)
	if d.budget > 0 {
		most = min(most, float64(max(d.budget/heldPerUsed-d.used, 0)/costEvent))
	}
	more := min(float64(s.n)*float64(left)/float64(used)*1.15+1024, most, 1<<31-float64(s.n))
	if s.n < settledAt {
		// Early: room for the entries up to the estimate that counts,
		// a few MB, as the early estimates can overshoot by a third too
		// (one window's mix of entries).
		more = min(more, 2*settledAt)
	} else if room < reserveSlack && s.reserved {
		// Short again near the end of the room: grow by a quarter at the
		// least, so that copies stay few whatever the estimate says.
		more = min(max(more, float64(cap(s.cur)/4)), most)
	}
	if int(more) > room {
		s.reserve(int(more))
	}
	s.reserved = true
}

// settledAt is the count of entries whose bytes give the estimate that
// sizes the list: made at the first doubling past it (128,000 entries,
// tens of steps of a small model's run, 6 MB copied once).
const settledAt = 1 << 16

// reserveSlack is the room left in a reserved list under which its size
// is estimated again: a few APPENDS batches of 1,000 entries.
const reserveSlack = 4096

func classOfList(k listKind) class {
	for c, lk := range listKindOf {
		if lk == k {
			return class(c)
		}
	}
	return clsGeneric
}

// poison records the first conversion error of a list.
func (d *decoder) poison(o *object, err error) {
	if o.err == nil {
		o.err = err
	}
}
