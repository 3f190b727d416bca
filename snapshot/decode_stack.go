package snapshot

import "fmt"

// This file bounds one stack's depth and charges the stack table for what
// its stacks cost downstream. A Python stack is as deep as the recursion
// limit lets it be (1,000 frames by default, a few times that with C++
// frames from stacks="all"); a hostile file can give one allocation
// millions of frames for a few hundred KB, and every analysis walks a
// stack frame by frame (the call tree, one level per frame).

// maxStackFrames is the most frames a stack keeps: its innermost and
// outermost halves, around one frame saying how many were dropped.
const maxStackFrames = 1 << 14

// internStack interns frames (innermost first) as a stack, keeping
// maxStackFrames of a deeper one, and charges a new stack's frames at
// costStackFrame (counted now, checked by the next charge).
func (d *decoder) internStack(frames []FrameID) StackID {
	if len(frames) > maxStackFrames {
		d.deepStacks++
		d.deepestStack = max(d.deepestStack, len(frames))
		half := maxStackFrames / 2
		elided := len(frames) - 2*half
		kept := make([]FrameID, 0, 2*half+1)
		kept = append(kept, frames[:half]...)
		kept = append(kept, d.stacks.InternFrame(Frame{Name: fmt.Sprintf("(%d frames elided)", elided), Filename: "<memscope>", Line: 1}))
		frames = append(kept, frames[len(frames)-half:]...)
	}
	n := d.stacks.Len()
	id := d.stacks.InternStack(frames)
	if d.stacks.Len() > n {
		d.used += int64(len(frames)) * costStackFrame
	}
	return id
}

// deepWarning says, once per snapshot, that stacks were cut to
// maxStackFrames.
func (d *decoder) deepWarning(s *Snapshot) {
	if d.deepStacks == 0 {
		return
	}
	s.Warnings = append(s.Warnings, Warning{Device: -1, Kind: WarnDeepStack, Message: fmt.Sprintf(
		"%d stacks had more than %d frames (the deepest %d): each keeps its %d innermost and %d outermost frames around a frame saying how many were dropped",
		d.deepStacks, maxStackFrames, d.deepestStack, maxStackFrames/2, maxStackFrames/2)})
}
