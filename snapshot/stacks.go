package snapshot

import "unsafe"

// Frame is one stack frame, innermost first within a stack.
type Frame struct {
	Name     string
	Filename string
	Line     int64 // 0 when the frame has no line: C++ frames, and torch's −1 (pickled as −1 or as 2^64−1)
	// FX fields, present with augment_with_fx_traces=True; "" otherwise.
	FXNodeOp, FXNodeName, FXNodeTarget, FXOriginalTrace string
}

// FrameID indexes Stacks.Frames.
type FrameID uint32

// StackID identifies one interned stack; 0 is the empty stack.
type StackID uint32

// Stacks is the one stack table of a snapshot: frames interned by value and
// stacks (frame ID lists, innermost first) interned by value.
type Stacks struct {
	Frames []Frame

	frameIndex map[Frame]FrameID
	stackIndex map[string]StackID // key: the frame IDs' bytes in machine order
	offsets    []uint32           // stack s is ids[offsets[s]:offsets[s+1]]
	ids        []FrameID
}

// NewStacks returns a table holding only the empty stack (ID 0).
func NewStacks() *Stacks {
	return &Stacks{
		frameIndex: map[Frame]FrameID{},
		stackIndex: map[string]StackID{"": 0},
		offsets:    []uint32{0, 0},
	}
}

// InternFrame returns the ID of f, adding it if new.
func (t *Stacks) InternFrame(f Frame) FrameID {
	if id, ok := t.frameIndex[f]; ok {
		return id
	}
	id := FrameID(len(t.Frames))
	t.Frames = append(t.Frames, f)
	t.frameIndex[f] = id
	return id
}

// InternStack returns the ID of the stack made of frames (innermost first),
// adding it if new. The slice is copied.
func (t *Stacks) InternStack(frames []FrameID) StackID {
	if len(frames) == 0 {
		return 0
	}
	key := unsafe.Slice((*byte)(unsafe.Pointer(&frames[0])), len(frames)*4)
	if id, ok := t.stackIndex[string(key)]; ok {
		return id
	}
	id := StackID(len(t.offsets) - 1)
	t.ids = append(t.ids, frames...)
	t.offsets = append(t.offsets, uint32(len(t.ids)))
	t.stackIndex[string(key)] = id
	return id
}

// Len returns the number of stacks, the empty one included.
func (t *Stacks) Len() int { return len(t.offsets) - 1 }

// Stack returns the frame IDs of stack id, innermost first. The slice aliases
// the table and must not be modified.
func (t *Stacks) Stack(id StackID) []FrameID {
	if int(id)+1 >= len(t.offsets) {
		return nil
	}
	return t.ids[t.offsets[id]:t.offsets[id+1]:t.offsets[id+1]]
}

// Frame returns frame id.
func (t *Stacks) Frame(id FrameID) *Frame { return &t.Frames[id] }

// Files returns every frame's file name, by FrameID (the recording's files
// read together, as srcpath.Neutral.Files takes them).
func (t *Stacks) Files() []string {
	out := make([]string, len(t.Frames))
	for i := range t.Frames {
		out[i] = t.Frames[i].Filename
	}
	return out
}

// RewriteFiles replaces every frame's file name f with rename(f), once per
// distinct name: memscope's --neutral-paths. Frame and stack IDs stay as
// they are; frames that become equal keep their own IDs.
func (t *Stacks) RewriteFiles(rename func(string) string) {
	done := map[string]string{}
	for i := range t.Frames {
		fr := &t.Frames[i]
		to, ok := done[fr.Filename]
		if !ok {
			to = rename(fr.Filename)
			done[fr.Filename] = to
		}
		if to == fr.Filename {
			continue
		}
		if t.frameIndex != nil {
			if id, ok := t.frameIndex[*fr]; ok && id == FrameID(i) {
				delete(t.frameIndex, *fr)
			}
		}
		fr.Filename = to
		if t.frameIndex != nil {
			if _, ok := t.frameIndex[*fr]; !ok {
				t.frameIndex[*fr] = FrameID(i)
			}
		}
	}
}
