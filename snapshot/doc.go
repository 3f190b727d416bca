// Package snapshot reads PyTorch CUDA caching-allocator snapshots (the
// pickles written by torch.cuda.memory._dump_snapshot) into a typed model,
// and replays their recorded history into a timeline of requested,
// allocated, active and reserved memory.
//
// # Reading
//
// Open and Decode detect the encoding from the first bytes: a pickle
// (protocols 2 to 5), the same data as JSON, the HTML page of
// torch.cuda._memory_viz trace_plot/segment_plot (base64 pickle inside), or
// any of those gzipped. A torch.profiler Chrome trace or an
// export_memory_timeline file, JSON too, is recognised from its first bytes
// and refused at once with the command that reads it. The pickle is read by a streaming unpickler that
// knows the snapshot schema: it never builds a tree of the whole file and
// never instantiates anything (a pickle that refers to a Python class is
// refused by name). Dicts are recognised by their keys — "action" for a
// trace entry, "blocks" for a segment, "state" (or the ≤2.0 "history") for
// a block, "stage" for an annotation, "filename" for a frame — wherever they
// sit, and converted once, so a frame or a frames list shared through the
// pickle memo costs one conversion. Frames are interned by value into one
// Stacks table; events and blocks hold a StackID. Unknown top-level keys,
// unknown keys inside entries and unknown actions are kept as far as the
// model allows (UnknownKeys, ActionUnknown) and never fail a decode.
//
// Every error is one line, "decoding NAME at byte N: what was wrong", N
// counting bytes of the pickle or JSON stream after gunzip or base64. A file
// that ends early, wherever after the start of its "segments", yields the
// error and a partial Snapshot with a Warning (WarnLost) saying what was
// lost: the segments read, the complete device traces and the first entries
// of the one being read. A gzip stream is read to its end, so a wrong
// checksum or length is a warning, as are bytes after the snapshot's end
// (WarnTrailing). Limits on nesting, lengths, memo indexes and containers,
// and a budget on everything the decoder materialises (budget.go: strings,
// list items with each copy of a memo entry, dict pairs; proportional to
// the input's size, Options.MaxMemory to raise it) keep hostile input from
// exhausting memory. Values the replay would index or sum with (device
// indexes, addresses of entries replayed by address, sizes) are checked once
// decoded (decode_check.go): one that no torch writes is an error naming
// its segment or trace entry, "decoding NAME: device_traces[0][5] (alloc):
// …".
//
// Batches of trace entries — nearly all of a big snapshot — take a fast
// path (decode_fast.go): a scanner reads a batch's opcodes into a tape on a
// second goroutine while the decoding goroutine resolves the tape before it
// against the memo, in stream order, so the result is the general
// machine's to the bit (a differential test and a fuzz target hold them
// equal). The memo's dense entries are packed into 8-byte words, and the
// first list of entries is sized from the bytes its first thousand took,
// so that it is filled in place and never copied.
//
// The unpickler assumes what every pickle.dump output satisfies: a
// container is complete before it is stored in another one. A pickle that
// changes a container after storing it is refused.
//
// # What a replay cannot know
//
// Replay says, as Warnings with a Kind, how much history the trace holds
// and how far to trust it: blocks already live at the first entry (a late
// start), a ring buffer that wrapped (allocator_settings'
// trace_alloc_overflowed and trace_alloc_max_entries, also per device, or
// a cut free pair at the start), a one-entry trace from a recording that
// keeps one (the legacy _record_memory_history(True, …), whose
// trace_alloc_max_entries defaults to 1, or enabled="state": Timeline.OneEntry)
// that did not, a true peak that likely predates the trace (reserved at
// the first entry above every replayed state, or at least twice the
// highest allocated replayed and 128 MiB above it, or a memory_stats
// entry's peaks above the replay's), frees that waited for another
// stream's work (record_stream: active well above allocated), entries
// without time_us, and torch_npu's block rounding, recognised from the
// segments and replayed. A trace that contradicts the segments (negative sizes,
// frees of unknown blocks, allocated above reserved, an end state that is
// not the segments) gets one warning listing it all and no other;
// entries with impossible sizes are skipped, so no number goes negative.
//
// # Invariants
//
// Snapshot.CheckValid and Timeline.CheckValid verify what the analyses rely
// on (IDs in range of their tables, devices among Devices(), blocks sorted
// and inside their segment, sizes and their sums per device within bounds
// that keep every replayed number from overflowing; peaks the first maxima
// of their series, Start and End the sums of what is live and reserved).
// Every Snapshot Decode returns passes, the valid part of a salvaged one
// included, and so does every Timeline Replay makes of it: the decoder
// rejects the values that would break them. Tests and fuzz targets call
// both.
//
// # Ownership
//
// A returned Snapshot owns all its memory: its slices, its Stacks and
// Strings tables are not shared with the decoder or with other snapshots,
// and nothing holds on to the input. A Snapshot is not safe for concurrent
// mutation; concurrent reads are fine. Replay, Devices, Ranges,
// SegmentsOf and AnnotationsOf index the segments and annotations by
// device on first use and rebuild the index when those slices are
// replaced or change length; a caller that edits a Device field in place
// after that must replace the slice.
package snapshot
