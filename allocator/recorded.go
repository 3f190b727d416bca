package allocator

import "github.com/memscope/memscope/snapshot"

// This file is the recorded run as an Outcome: the check's own numbers,
// for the column of the recorded settings.

// CapacityRecorded is Outcome.CapacityFrom of Recording.Recorded: the
// device answered as the recording shows, every cudaMalloc as it went.
const CapacityRecorded = "recorded"

// Recorded is the recorded run under its own settings, as the check
// replayed it, when the model matched every recorded decision and the end
// state (ReplayReport.Exact): then its numbers are the recording's — the
// peak and end of reserved, peak allocated, the segments, inactive_split
// at the peak, the first oom — where a what-if under the same settings,
// over a device of a fixed capacity and from a start state rebuilt under
// them (a late start), may miss them by a segment. whatIf is the what-if
// under the recorded settings: its capacity (the one the other settings'
// what-ifs run under) and its deferred frees are kept. Recorded returns
// nil when the check did not match (its numbers are then the model's
// guesses, and the what-if's are as good), and waits for the check.
func (rc *Recording) Recorded(whatIf *Outcome) *Outcome {
	<-rc.r.prog.done
	rep := rc.r.rep
	if !rep.Exact() {
		return nil
	}
	tl := rc.tl
	tl.Wait()
	seen := &rc.r.seen
	o := &Outcome{Device: rc.device, Settings: rc.r.set, Replay: rep, Capacity: 0, CapacityFrom: CapacityRecorded,
		Requests: seen.requests, Total: seen.requests,
		PeakReserved: tl.PeakReserved.Bytes, PeakReservedAt: seen.peakAt, EndReserved: tl.End.Reserved,
		PeakAllocated: seen.mostAllocated, PeakSegments: seen.mostSegs, EndSegments: seen.segs,
		InactiveSplit: seen.split, InactiveSplitBytes: seen.splitBytes,
		Retries: rep.Retries, EmptyCaches: rep.EmptyCaches, Window: rep.StartFromState, Stopped: -1}
	if whatIf != nil {
		o.Capacity, o.CapacityFrom, o.DeferredFrees = whatIf.Capacity, whatIf.CapacityFrom, whatIf.DeferredFrees
		o.OOMRequests = whatIf.OOMRequests
	}
	if len(tl.OOMs) > 0 {
		i := tl.OOMs[0]
		ev := &rc.s.Traces[rc.device][i]
		o.OOM = &WhatIfOOM{Index: i, Size: ev.Size, Stream: ev.Stream, Reserved: tl.OOMStates[0].Reserved}
		// The what-if stops at the first request it cannot serve; the
		// recording went on (the program caught the error, or the dump was
		// made right after it).
		o.Requests = 0
		for _, ev := range rc.s.Traces[rc.device][:i+1] {
			if ev.Action == snapshot.ActionAlloc || ev.Action == snapshot.ActionOOM {
				o.Requests++
			}
		}
	}
	return o
}
