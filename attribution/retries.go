package attribution

import (
	"github.com/memscope/memscope/allocator"
	"github.com/memscope/memscope/snapshot"
)

// AllocRetries is torch's num_alloc_retries over the recording: the
// requests whose cudaMalloc failed and were tried again after the cache
// was released. ok is false where it cannot be told: the recording began
// late (torch's count holds what came before it), the allocator model
// does not follow the recording, or a release before a request could be
// a retry's or an empty_cache()'s (allocator.ReplayReport's
// RetriesUncertain: the cap is not known).
//
// A retry releases cached segments before it tries again, unless there
// is nothing to release, and then it fails: a recording from the start
// with no segment released or unmapped and no OOM has none, and nothing
// is replayed. Otherwise the model replays the trace (allocator.Replay)
// and counts them as torch does, unless the simulation of the
// fragmentation verdict did so already.
func (d *Device) AllocRetries() (n int, ok bool) {
	t := d.Timeline
	if t == nil || t.Start.Reserved > 0 || t.Start.Allocated > 0 {
		return 0, false
	}
	s := d.an.Snapshot
	released := false
	for i := range s.Traces[d.Device] {
		if a := s.Traces[d.Device][i].Action; a == snapshot.ActionSegmentFree || a == snapshot.ActionSegmentUnmap {
			released = true
			break
		}
	}
	if !released && len(t.OOMs) == 0 {
		return 0, true
	}
	// The fragmentation verdict's simulation, where it ran, checked the
	// recorded decisions already.
	rep := d.sim.rep.Load()
	if rep == nil {
		var err error
		if rep, err = allocator.ReplayWith(s, d.Device, allocator.ReplayOptions{Timeline: t}); err != nil {
			return 0, false
		}
	}
	if !rep.Exact() || rep.StartFromState || rep.RetriesUncertain > 0 {
		return 0, false
	}
	return rep.Retries, true
}
