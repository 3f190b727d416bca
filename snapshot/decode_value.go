package snapshot

import "math"

// This file holds the decoder's value model: a 16-byte tagged value, the
// arena of container objects it points into, and the string table (the
// memo and other bulk storage are in decode_store.go). Nothing here knows
// the snapshot schema; decode_consume.go does.

// tag says what a value holds.
type tag uint8

const (
	tNone    tag = iota
	tBool        // n: 0 or 1
	tInt         // n
	tUint64      // n: the bits of an int in [2^63, 2^64) (torch's −1 written as unsigned)
	tFloat       // n: math.Float64bits
	tStr         // n: string ID
	tBytes       // n: string ID
	tObj         // n: object index (dict or list)
	tTuple       // aux: length, n: where its items are in the tuple arena
	tFrame       // n: FrameID; a frame dict after conversion
	tStack       // n: StackID; a list of frames after conversion (0: an empty list)
	tEvent       // aux: list object, n: index in its events
	tBlock       // aux: list object, n: index in its blocks
	tSegment     // aux: list object, n: index in its segments
	tAnnot       // aux: list object, n: index in its annotations
)

var tagNames = [...]string{
	tNone: "None", tBool: "bool", tInt: "int", tFloat: "float", tStr: "str",
	tUint64: "int", tBytes: "bytes", tObj: "object", tFrame: "frame", tStack: "list of frames",
	tEvent: "trace entry", tBlock: "block", tSegment: "segment", tAnnot: "annotation",
	tTuple: "tuple",
}

// value is one Python value on the stack or in the memo. Containers live in
// the object arena; converted schema objects are referred to by ID.
type value struct {
	tag tag
	aux uint32
	n   int64
}

func intValue(n int64) value     { return value{tag: tInt, n: n} }
func floatValue(f float64) value { return value{tag: tFloat, n: int64(math.Float64bits(f))} }
func boolValue(b bool) value {
	if b {
		return value{tag: tBool, n: 1}
	}
	return value{tag: tBool}
}

func (v value) float() float64 { return math.Float64frombits(uint64(v.n)) }

// objKind is the Python type of an arena object.
type objKind uint8

const (
	objDict objKind = iota + 1
	objList
)

// listKind says what a list holds. It is fixed by the first item appended.
type listKind uint8

const (
	listEmpty    listKind = iota
	listGeneric           // items
	listFrames            // frames
	listEvents            // events
	listBlocks            // blocks
	listSegments          // segs
	listAnnots            // annots
)

var listKindNames = [...]string{
	listEmpty: "an empty list", listGeneric: "a list of plain values",
	listFrames: "a list of frames", listEvents: "a list of trace entries",
	listBlocks: "a list of blocks", listSegments: "a list of segments",
	listAnnots: "a list of annotations",
}

// kv is one dict item.
type kv struct{ k, v value }

// object is a dict or list under construction or kept whole.
//
// Dicts appended to a list are converted by shape into frames, trace entries,
// blocks, segments or annotations; a list of frames is converted into a stack
// when it is stored anywhere. A converted object is recycled when nothing but
// its one memo entry refers to it (the memo entry then holds the converted
// value); otherwise the conversion is cached in conv.
type object struct {
	kind    objKind
	lkind   listKind
	pinned  bool  // referenced from a container or pushed twice: never recycled
	stored  bool  // placed in a container: later changes are refused
	used    bool  // typed storage handed to a result: copy on a second use
	hasConv bool  // conv is valid
	memoN   uint8 // number of memo entries naming this object (saturating)
	memoIdx uint64
	keys    uint64 // dict: bit i set when known key i is present
	off     int64  // stream offset of the opcode that made it
	conv    value

	pairs  []kv      // dict items in order
	items  []value   // listGeneric items
	frames []FrameID // listFrames
	typed  *typedList
	err    error // the first item that could not be converted
}

// typedList is the storage of a list of converted schema objects.
type typedList struct {
	events eventStore
	blocks []Block
	segs   []Segment
	annots []Annotation
	legacy bool // a block or segment in it came from a ≤2.0 snapshot
}

// newObj returns a fresh object from the free list or the arena.
func (d *decoder) newObj(kind objKind) (value, error) {
	var i uint32
	if n := len(d.free); n > 0 {
		i = d.free[n-1]
		d.free = d.free[:n-1]
	} else {
		if len(d.objs) >= d.maxObjs {
			return value{}, d.fail(kindLimit, "more than %d containers kept at once", d.maxObjs)
		}
		c := cap(d.objs)
		d.objs = append(d.objs, object{})
		i = uint32(len(d.objs) - 1)
		if grown := cap(d.objs) - c; grown > 0 {
			if err := d.charge(int64(grown) * costObject); err != nil {
				return value{}, err
			}
		}
	}
	o := &d.objs[i]
	o.kind = kind
	o.off = d.opOff
	return value{tag: tObj, n: int64(i)}, nil
}

// recycle puts an object whose only reference is memo entry o.memoIdx (or
// none) back on the free list, replacing that memo entry with conv. Objects
// referred to from elsewhere keep conv as their cached conversion.
func (d *decoder) recycle(i uint32, conv value) {
	o := &d.objs[i]
	if o.pinned || o.memoN > 1 {
		o.conv, o.hasConv, o.stored = conv, true, true
		return
	}
	if o.memoN == 1 {
		if j := o.memoIdx; j < d.memo.n {
			if m := d.memo.at(j); m.tag == tObj && m.n == int64(i) {
				d.memo.put(j, conv)
			}
		} else if m, ok := d.memo.get(j); ok && m.tag == tObj && m.n == int64(i) {
			d.memo.set(j, conv)
		}
	}
	d.used -= int64(len(o.pairs)) * costPair // no longer held: see setItemsOp
	o.kind, o.lkind, o.stored, o.used, o.memoN, o.keys = 0, 0, false, false, 0, 0
	o.pairs, o.items, o.frames = o.pairs[:0], o.items[:0], o.frames[:0]
	o.typed, o.err = nil, nil
	d.free = append(d.free, i)
}

// resolve returns the cached conversion of an object value, or v itself.
func (d *decoder) resolve(v value) value {
	if v.tag == tObj {
		if o := &d.objs[v.n]; o.hasConv {
			return o.conv
		}
	}
	return v
}

// Well-known strings get fixed IDs so that dict keys and enum values can be
// told apart by comparing integers. IDs below numKeys are keys with a bit in
// object.keys.
const (
	sEmpty = iota
	kAction
	kAddr
	kDeviceFree
	kSize
	kStream
	kTimeUS
	kCompileContext
	kUserMetadata
	kFrames
	kCppFrames
	kDevice
	kAddress
	kTotalSize
	kAllocatedSize
	kActiveSize
	kRequestedSize
	kSegmentType
	kSegmentPoolID
	kIsExpandable
	kBlocks
	kState
	kHistory
	kRealSize
	kName
	kFilename
	kLine
	kFXNodeOp
	kFXNodeName
	kFXNodeTarget
	kFXOriginalTrace
	kStage
	kSegments
	kDeviceTraces
	kAllocatorSettings
	kExternalAnnotations
	numKeys
)

// The action strings follow the keys: action a has string ID
// vAlloc + a - ActionAlloc. Then come the other enum values.
const (
	vAlloc             = numKeys
	vActiveAllocated   = vAlloc + 10 // the ten actions ActionAlloc..ActionAnnotate
	vActivePendingFree = vActiveAllocated + 1
	vInactive          = vActiveAllocated + 2
	vSmall             = vActiveAllocated + 3
	vStart             = vActiveAllocated + 4
	numKnown           = vActiveAllocated + 5
)

// knownStrings lists the well-known strings in ID order.
var knownStrings = func() []string {
	s := []string{
		sEmpty: "", kAction: "action", kAddr: "addr", kDeviceFree: "device_free",
		kSize: "size", kStream: "stream", kTimeUS: "time_us",
		kCompileContext: "compile_context", kUserMetadata: "user_metadata",
		kFrames: "frames", kCppFrames: "cpp_frames", kDevice: "device",
		kAddress: "address", kTotalSize: "total_size",
		kAllocatedSize: "allocated_size", kActiveSize: "active_size",
		kRequestedSize: "requested_size", kSegmentType: "segment_type",
		kSegmentPoolID: "segment_pool_id", kIsExpandable: "is_expandable",
		kBlocks: "blocks", kState: "state", kHistory: "history",
		kRealSize: "real_size", kName: "name", kFilename: "filename",
		kLine: "line", kFXNodeOp: "fx_node_op", kFXNodeName: "fx_node_name",
		kFXNodeTarget: "fx_node_target", kFXOriginalTrace: "fx_original_trace",
		kStage: "stage", kSegments: "segments", kDeviceTraces: "device_traces",
		kAllocatorSettings:   "allocator_settings",
		kExternalAnnotations: "external_annotations",
	}
	for a := ActionAlloc; a < numActions; a++ {
		s = append(s, a.String())
	}
	return append(s, "active_allocated", "active_pending_free", "inactive", "small", "START")
}()

// initStrings seeds the decoder's string table with the well-known strings.
func (d *decoder) initStrings() {
	if len(knownStrings) != numKnown {
		panic("invariant violation: knownStrings out of step with its IDs")
	}
	d.strs = append(d.strs[:0], knownStrings...)
	d.strIdx = make(map[string]uint32, 1024)
	for i, s := range knownStrings {
		d.strIdx[s] = uint32(i)
	}
}

// intern returns the string value for b, adding it to the table if new.
// A hit does not allocate.
func (d *decoder) intern(b []byte) value {
	// torch writes the action and compile_context strings anew in every
	// entry: a few recent strings are looked up before the map.
	h := 0
	if len(b) > 0 {
		h = (len(b)*7 + int(b[0]) + 3*int(b[len(b)/2])) & (len(d.recent) - 1)
	}
	if r := &d.recent[h]; r.ok && string(b) == r.s {
		return value{tag: tStr, n: int64(r.id)}
	}
	if id, ok := d.strIdx[string(b)]; ok {
		d.recent[h] = recentString{d.strs[id], id, true}
		return value{tag: tStr, n: int64(id)}
	}
	s := string(b)
	id := uint32(len(d.strs))
	d.strs = append(d.strs, s)
	d.strIdx[s] = id
	d.used += int64(len(s)) + costString // checked by the next charge
	return value{tag: tStr, n: int64(id)}
}

// internString is intern for a Go string (the JSON path).
func (d *decoder) internString(s string) value {
	if id, ok := d.strIdx[s]; ok {
		return value{tag: tStr, n: int64(id)}
	}
	id := uint32(len(d.strs))
	d.strs = append(d.strs, s)
	d.strIdx[s] = id
	d.used += int64(len(s)) + costString
	return value{tag: tStr, n: int64(id)}
}

// keyID returns the known-key ID of a dict key, or -1.
func keyID(k value) int {
	if k.tag == tStr && k.n < numKeys {
		return int(k.n)
	}
	return -1
}
