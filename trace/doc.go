// Package trace reads the Chrome traces written by torch.profiler (Kineto's
// export_chrome_trace and tensorboard_trace_handler, .json or .json.gz, the
// object form with "traceEvents" and the legacy array form) and the files
// written by export_memory_timeline, and says which operator and which
// nn.Module allocated the GPU memory they record.
//
// # Reading
//
// Open and Decode stream a trace one event at a time and keep only what the
// memory questions need: the [memory] and [OutOfMemory] instant events,
// cpu_op and user_annotation intervals per thread, python_function events
// with their parent tree, fwdbwd flows and sequence numbers, and the
// device, distributed and time-base metadata. Traces of torch 1.9–1.12 are
// read too: ops of category "Operator" with the tid quoted, memory events
// with Bytes only, whose running sum stands in for Total Allocated
// (Recorded says what the events carried). CUDA runtime and driver calls
// are kept as plain intervals because torch's key_averages counts them;
// kernels, copies and everything else only as counts. Memory use grows with
// the number of kept events, never with the bytes of skipped ones.
//
// The result is a *Trace of plain structs linked by index: Ops, PyFuncs and
// Memory refer to threads, names and each other through ThreadID, StringID,
// OpID and PyID. All times are absolute Unix-epoch nanoseconds (the trace's
// baseTimeNanoseconds plus the relative ts; older traces carry absolute ts).
// The caller owns the returned Trace; nothing in it aliases decoder buffers.
//
// # Attribution
//
// Decode attributes every memory event as torch's own event tree does
// (FORMATS.md §3.7): to the innermost cpu_op or user_annotation on the same
// (pid, tid) whose interval contains it, ties going to the latest start; an
// event with no such op falls back to the innermost enclosing
// python_function. Backward ops are linked to the forward op that created
// their autograd node, and from there to the forward op's nn.Module: among
// the ops that recorded the backward's sequence number (and the fwdbwd
// flow's), the one whose name matches the node's (XBackward0 and aten::x,
// CompiledFunctionBackward and CompiledFunction), since ops that make no
// node share the number (ForwardName, linkForward).
//
// Ops aggregates that per operator name and Modules per nn.Module: self and
// total allocated and net bytes, allocation counts, and the bytes still live
// at the Total Allocated peak. KeyAverages is a separate view that
// reproduces prof.key_averages()'s self_device_memory_usage column exactly,
// including its quirks (interval containment with no thread check, duplicate
// nested nodes folded away).
//
// # Memory timelines
//
// Series gives allocated and reserved bytes over time per device from the
// running totals of the memory events, and Peak the high-water mark with the
// ops open around it. OpenMemoryTimeline reads export_memory_timeline's
// .json, .json.gz and .raw.json.gz files into per-category series;
// OpenProfile takes either kind of file and tells them apart by their
// first bytes, for commands that accept both as a trace.
//
// # Errors
//
// Unreadable input gives one-line errors naming the file and the byte offset
// (of the decompressed stream for .gz files). A trace cut short keeps the
// events read before the damage and reports what was lost in Warnings.
package trace
