// Package allocator is a model of torch 2.11's CUDA caching allocator
// (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator) and a replay
// that checks the model against a snapshot's recorded history, decision by
// decision. It owns the allocator's rules; package snapshot owns the
// recording, and attribution and report build on both.
//
// # The model
//
// An Allocator is one device. It keeps pools (the default small and large
// pools, and private pools by PoolID), each with its free blocks ordered
// as torch orders them: by stream, by size, then by a tie-break
// (Settings.TieBreak). Malloc does what malloc does: round_size (with
// roundup_power2_divisions), the pool by rounded size, get_free_block's
// best fit on the request's stream with the oversize rules
// (max_split_size, max_non_split_rounding) and, for expandable segments,
// best fit over the size a block could grow to; garbage_collect_cached_blocks
// under a memory fraction and a GC threshold; alloc_block (a cudaMalloc of
// get_allocation_size, or mapped pages of an expandable segment: 2 MiB
// pages in the small pool, large_segment_size pages in the large one, at
// the lowest address where free and unmapped space fits, filling holes
// first); on failure release_available_cached_blocks (with a
// max_split_size), then release_cached_blocks and the retry; and finally
// the oom. A found block is split at its low end when should_split says
// so. Free and FreeCompleted are free and free_block, kept apart for
// record_stream frees (free_requested now, free_completed later), merging
// with free neighbours of the same mapping. EmptyCache is empty_cache():
// every unsplit free block released, every whole free page of an
// expandable segment unmapped, the address space of one with nothing left
// mapped given back without a record.
//
// Every step records what torch records (Record: segment_alloc,
// segment_free, segment_map, segment_unmap, alloc, free_requested,
// free_completed, oom), drained by the caller. What the model cannot know
// it asks a Device: whether a cudaMalloc or a page mapping succeeds, and
// at which address a segment or an address-space reservation lies.
//
// The tie-break among free blocks of equal size changed four times in
// 2026 (ALLOCATOR.md §3.5). torch 2.11, the fixtures' version, orders by
// address (TieAddress): replayed under it every fixture matches all its
// decisions, while both counter orders of later torch diverge on most of
// them (TestTieBreak). TieSegmentCounter, current main's, needs no
// addresses at all.
//
// # Replay
//
// Replay drives a fresh Allocator with one device's recorded requests
// (each alloc with its size and stream, each free_requested and
// free_completed at its recorded place, each oom) under the recorded
// allocator_settings (SettingsFromSnapshot; ParseConf reads a
// PYTORCH_CUDA_ALLOC_CONF string), and checks each recorded decision: every
// segment_alloc, segment_free, segment_map and segment_unmap (action,
// address, size and place in the event order), every alloc's block (its
// segment and offset), every oom (the model failed the request too), every
// snapshot entry (active bytes), and at the end the simulated segments
// against the snapshot's, block for block. The recording answers the
// Device's questions: a new segment's address is the recorded one; a
// cudaMalloc failed when the recording shows the retry path instead (a run
// of segment_free before the segment_alloc inside one request, or an oom).
// A run of releases outside any request, or before a request the cache
// could serve, is checked as an empty_cache() call. The free_completed
// entries just before a release or an oom are left to the model's release
// to complete (synchronize_and_free_events): torch completes them after
// get_free_block has failed, not before it. When the trace does
// not begin at an empty allocator (recording began late, or the ring
// buffer wrapped), the model starts from the state snapshot.Timeline
// rebuilds backwards from the end-state segments; after a divergence it is
// rebuilt the same way from the recorded state at that entry (a resync),
// so that one difference does not hide the checks after it. The
// ReplayReport counts checks and matches per Kind and holds the first
// Divergence as a value. A CUDA graph's private pool is driven too: the
// trace entries name no pool, so a request goes to the private pool whose
// segment (the end state names each segment's pool) held its recorded
// block while that segment was reserved (poolRoutes, replay.go).
//
// Replay refuses (ErrNotReplayable, with the reason) a device with no
// trace, a torch ≤ 2.0 snapshot, backend:cudaMallocAsync, torch_npu's
// rounding; an expandable segment mapped before the first entry is taken
// from its mapped ranges (one reservation per stream and pool, from the
// first range on, unmapped between and after them: load). After a
// divergence with expandable segments it stops checking (LostAt), and so it
// does once its resyncs have loaded states worth a sixteenth of the trace
// (LostTooOften): each loads the whole recorded state. The what-ifs then
// know the device's refusals the check found before it stopped, not those
// after, and the empty_cache() calls only the check could tell from the
// request's own release (see below) up to there.
//
// # What-if
//
// WhatIf drives a fresh Allocator under other settings by the same
// recorded requests: each alloc with its size and stream, each
// free_requested and free_completed at its recorded place (a deferred
// free keeps its place; those just before a release are held for the
// next request, as Replay holds them), each recorded oom as a request of
// its size (the entry holds it rounded under the recorded settings; where
// roundup_power2_divisions rounded it past 512 bytes, the what-if asks
// for the middle of the sizes that round to it, Outcome.OOMRequests), and
// each empty_cache() at its place. The entry after a run of segment
// entries tells most of them: a run before a free or any entry but a
// request, or at the end of the trace, is an empty_cache(); one before an
// oom, or that begins with a new segment, is the request's. A run of
// releases before an alloc is an empty_cache() where the replay under the
// recorded settings (the check that the model and torch agree on this
// trace, whose device refusals are also WhatIf's) found the cache could
// serve the request or the cap had room for its segment. The check runs
// on a goroutine of its own beside the what-ifs (NewRecording, then
// Recording.WhatIfs), which wait for it only at such a run; a what-if
// whose capacity comes from the check's refusals runs as if there were
// none and is run again when the check finds one. Its Device has a
// capacity: cudaMalloc and page maps
// succeed while reserved + size fits; the capacity is the caller's, else
// the per-process cap given, else the recorded oom's (reserved then plus
// its device_free); where the oom had room on the device (a cap refused
// it), or failed cudaMallocs show with no oom, the what-if runs under a
// cap just below the least reserved + size of those failures; else
// unlimited. New segments are placed downwards from
// a high address, as the driver placed them in the fixtures: under torch
// 2.11's address tie-break a later segment wins ties, and the what-if
// under the recorded settings then reproduces each fixture's peak. The
// first request the what-if cannot serve ends it (the program would have
// raised there); a recorded oom it serves is reported, since what the
// program did after that point is not in the recording. The Outcome holds
// the peaks (reserved, allocated, segments, inactive_split at the peak of
// reserved), the end, the retries, the OOM and, for a recording that
// began late, that it covers the recorded window only. A late recording
// under its own settings starts from the rebuilt state as it is; under
// other settings that state is re-made under them (whatif_start.go: its
// segments asked for and freed, then its live blocks), and the reserved
// peak comes with a bound, since the cached part of the start state
// (Outcome.StartUnknown) has a history the trace does not hold: from the
// same start with none of it kept, to the point plus all of it.
// TestWhatIfServeTruth holds both against torch on serving fixtures
// recorded from the start, late and wrapped. TestWhatIfTruth
// holds it against torch on the what-if fixtures, every pair of settings,
// with its misses and their cause (GPU timing of record_stream frees:
// Outcome.DeferredFrees counts the frees whose completion a what-if takes
// from the recording).
//
// # What cannot be known
//
// From ALLOCATOR.md §3.11: whether a cudaMalloc succeeds depends on the
// driver and on memory outside the allocator (CUDA context, NCCL, other
// processes) — replay takes it from the recording, a what-if needs a
// capacity (best anchored at an oom: reserved plus its device_free); the
// addresses cudaMalloc and cuMemAddressReserve return (replay takes them
// from the recording; under TieAddress they steer ties); when a
// record_stream block's events complete (replay keeps the recorded place
// of free_completed; release_cached_blocks completes them all); thread
// interleaving (the recorded order is authoritative); the program's own
// reaction to allocator state (cuDNN workspaces sized by the largest free
// block, code that catches an OOM and retries smaller) — so a what-if is
// "same requests, different allocator", no more; a trace that wrapped or
// began late (the rebuilt start state cannot say in which order older
// segments were created, and gives them address order); mid-run setting
// changes (allocator_settings holds only the last); CUDA-graph replays
// (no allocator calls), IPC imports, FreeMemoryCallbacks and the
// use_count of private pools (whether release_cached_blocks may free them:
// the model keeps them).
//
// # Ownership
//
// An Allocator owns its state and is not safe for concurrent use; the
// slices Drain returns are reused by the next call, those Segments returns
// are the caller's. Replay reads the Snapshot and keeps nothing of it in
// the report it returns.
package allocator
