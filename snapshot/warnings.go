package snapshot

import (
	"fmt"
	"strings"

	"github.com/memscope/memscope/internal/addrmap"
	"github.com/memscope/memscope/internal/units"
)

// This file says what a replay could not know exactly, or found
// impossible, as Warnings: how much of the history the trace holds (a late
// start, a wrapped ring buffer, a one-entry trace), whether the true peak
// likely predates it, frees that waited for another stream's work, missing
// times, torch_npu's rounding, and — in one warning — every way the trace
// contradicts the snapshot's own segments.

func (t *Timeline) warn(kind, format string, args ...any) {
	t.Warnings = append(t.Warnings, Warning{Device: t.Device, Kind: kind, Message: fmt.Sprintf(format, args...)})
}

// watch follows the state after every event of a replay for what the
// warnings need.
type watch struct {
	trace        []Event // the events observed
	maxAfter     Numbers // the highest of each number after the first event
	events       bool    // maxAfter holds at least one event
	overReserved int     // states with more allocated than reserved
	firstOver    int     // the first of them (-1: the start)
	overAt       Numbers

	// Frees that waited for another stream (see deferredFrees): their
	// number and bytes, the most bytes waiting at once (active −
	// allocated) and after which event (-1: the start), and the bytes
	// waiting when allocated peaked.
	deferred      int
	deferredBytes int64
	waiting       int64
	waitingAt     int
	peakAllocated int64
	waitingAtPeak int64
}

func (w *watch) observe(i int, n Numbers) {
	if n.Allocated > n.Reserved {
		if w.overReserved == 0 {
			w.firstOver, w.overAt = i, n
		}
		w.overReserved++
	}
	gap := n.Active - n.Allocated
	if i < 0 {
		w.waiting, w.waitingAt = gap, -1
		w.peakAllocated, w.waitingAtPeak = n.Allocated, gap
		return
	}
	w.events = true
	w.maxAfter.Allocated = max(w.maxAfter.Allocated, n.Allocated)
	w.maxAfter.Reserved = max(w.maxAfter.Reserved, n.Reserved)
	if n.Allocated > w.peakAllocated {
		w.peakAllocated, w.waitingAtPeak = n.Allocated, gap
	}
	// A free with no other stream's work pending is a free_requested and
	// its free_completed, one after the other: the block is active, not
	// allocated, only between the two, and that state is not counted.
	ev := &w.trace[i]
	switch ev.Action {
	case ActionFreeRequested:
		if i+1 < len(w.trace) && w.trace[i+1].Action == ActionFreeCompleted && w.trace[i+1].Addr == ev.Addr {
			return
		}
	case ActionFreeCompleted:
		if i == 0 || w.trace[i-1].Action != ActionFreeRequested || w.trace[i-1].Addr != ev.Addr {
			w.deferred++
			w.deferredBytes += ev.Size
		}
	}
	if gap > w.waiting {
		w.waiting, w.waitingAt = gap, i
	}
}

// warnings reports what the replay could not know exactly. A trace that
// contradicts the segments gets that one warning and no other: what the
// rest would say rests on the same entries.
func (t *Timeline) warnings(e *engine, w *watch) {
	end := t.checkEnd(e)
	t.history()
	if !t.OneEntry {
		t.peakBefore(w)
		t.deferredFrees(w)
	}
	if len(t.Events) > 0 && !t.Timed {
		t.warn(WarnUntimed, "device %d: the trace records no times (no time_us: torch before 2.2, or torch_npu): events have an order but no time, so times read \"not recorded\" and annotations cannot be placed among the events", t.Device)
	}
	if t.Timed {
		t.timeBackwards(w.trace)
	}
	if t.NPURounding {
		t.warn(WarnNPURounding, "device %d: blocks are rounded as torch_npu's allocator rounds them (the request plus 32 B, up to a multiple of 512 B), as the segments show; the replay rounds the same way", t.Device)
	}
	t.contradictions(e, w, &end)
	if n := len(t.Warnings); n > 0 && t.Warnings[n-1].Kind == WarnContradiction {
		t.Warnings = t.Warnings[n-1:]
	}
}

// count writes n and a noun: one for 1, else many ("s" appended when
// many is "").
func count(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return fmt.Sprintf("%d %s", n, many[0])
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// history decides how much of the device's history the trace holds: all of
// it since recording began (a late start, when blocks were already live),
// the last entries of a ring buffer that wrapped, or one entry.
func (t *Timeline) history() {
	s := t.snap
	n := len(t.Events)
	if n == 0 {
		return
	}
	t.MaxEntries, _ = settingInt(s.Settings, "trace_alloc_max_entries", t.Device)
	overflowed, flagged := settingBool(s.Settings, "trace_alloc_overflowed", t.Device)
	if n == 1 && (s.Legacy || t.MaxEntries <= 1) {
		t.oneEntry()
		return
	}
	var why string
	switch {
	case flagged:
		t.Wrapped, why = overflowed, "allocator_settings says trace_alloc_overflowed"
	case t.MaxEntries > 0:
		t.Wrapped, why = int64(n) >= t.MaxEntries, fmt.Sprintf("it is full: trace_alloc_max_entries = %d", t.MaxEntries)
	default:
		t.Wrapped, why = t.evictionCut(), "its first entries complete frees whose requests are gone"
	}
	live := t.Start.Active
	if t.Wrapped {
		t.warn(WarnWrapped, "device %d: the trace ring buffer wrapped (%s): only its last %s survive; %s in %s was live before the first of them, and whatever was allocated and freed earlier is lost; peaks are over the surviving entries only",
			t.Device, why, count(n, "entry", "entries"), units.Bytes(live), count(len(t.Initial), "block"))
		return
	}
	if live == 0 {
		return
	}
	var freedN int
	var freedBytes int64
	for i := range t.Initial {
		if b := &t.Initial[i]; b.FreeStack {
			freedN++
			freedBytes += b.Size
		}
	}
	why = "recording began late"
	if !flagged && t.MaxEntries == 0 {
		why += " (or the ring buffer dropped older entries: this torch records no overflow flag)"
	}
	msg := fmt.Sprintf("device %d: %s in %s was already live at the first recorded entry: %s, so their allocations are not in the trace",
		t.Device, units.Bytes(live), count(len(t.Initial), "block"), why)
	if freedN == 1 {
		msg += fmt.Sprintf("; 1 of them (%s) is freed in it", units.Bytes(freedBytes))
	} else if freedN > 1 {
		msg += fmt.Sprintf("; %d of them (%s) are freed in it", freedN, units.Bytes(freedBytes))
	}
	t.warn(WarnLateStart, "%s", msg)
}

// oneEntry says what a one-entry trace is, when the snapshot records no
// buffer larger than one entry: a recording that keeps one. The legacy
// call _record_memory_history(True, …) (torch ≈ 2.0's API, which torch
// 2.1+ still takes for a bool) keeps trace_alloc_max_entries entries, 1 by
// default; torch 2.11 writes a "snapshot" entry when the snapshot is
// taken, so that entry is all such a trace holds, as it is all
// enabled="state" records. Nothing was lost to a ring buffer that wrapped:
// there was never more.
func (t *Timeline) oneEntry() {
	t.OneEntry = true
	ev := &t.Events[0]
	what, which := "a "+ev.Action.String(), "keeps only the last"
	if ev.Action == ActionSnapshot {
		what = "torch's marker of the snapshot call"
		which = `keeps only that marker, as does enabled="state", which records the live blocks' stacks and no trace`
	}
	redo := "torch.cuda.memory._record_memory_history(max_entries=100000)"
	if t.snap.Legacy {
		what += ", in torch ≈ 2.0's format: each block keeps its own history"
		redo = "torch.cuda.memory._record_memory_history(True, trace_alloc_max_entries=100000) on torch 2.0, " + redo + " on 2.1 and later"
	}
	t.warn(WarnOneEntry, "device %d: the trace holds one entry (%s): a recording that keeps one trace entry, not a ring buffer that wrapped: the legacy call torch.cuda.memory._record_memory_history(True, …), whose trace_alloc_max_entries defaults to 1, %s; there is no timeline, only the end state: to record the history, record again with %s",
		t.Device, what, which, redo)
}

// evictionCut reports signs that the ring buffer dropped its oldest
// entries, as opposed to recording having started late: a free_completed
// whose free_requested is not in the trace. Eviction cuts anywhere, a late
// start only between actions; pairs split by a late start are rare (only
// frees pending on another stream).
func (t *Timeline) evictionCut() bool {
	req := map[uint64]bool{}
	for i := range t.Events {
		ev := &t.Events[i]
		switch ev.Action {
		case ActionFreeRequested:
			req[ev.Addr] = true
		case ActionFreeCompleted:
			if !req[ev.Addr] {
				return true
			}
			delete(req, ev.Addr)
		case ActionAlloc:
			delete(req, ev.Addr)
		}
		if i > 64 {
			break // eviction cuts at the very beginning
		}
	}
	return false
}

// settingInt reads an integer setting, or its entry for device when the
// setting is per device (a list indexed by device, or a dict keyed by the
// device number).
func settingInt(settings map[string]any, key string, device int) (int64, bool) {
	n, ok := perDevice(settings, key, device).(int64)
	return n, ok
}

func settingBool(settings map[string]any, key string, device int) (v, ok bool) {
	switch x := perDevice(settings, key, device).(type) {
	case bool:
		return x, true
	case int64:
		return x != 0, true
	}
	return false, false
}

func perDevice(settings map[string]any, key string, device int) any {
	switch v := settings[key].(type) {
	case []any:
		if device >= 0 && device < len(v) {
			return v[device]
		}
		return nil
	case map[string]any:
		return v[fmt.Sprint(device)]
	default:
		return v
	}
}

// The memory reserved at the first entry says the true peak predates the
// trace when it is at least peakBeforeRatio times the highest allocated the
// trace replays (the start included) and at least peakBeforeMargin above
// it. The caching allocator keeps what it reserved until empty_cache, so
// reserved at the first entry is what requests made before recording
// needed, with their rounding and the holes between them; in a steady run
// that is 1.0 to 1.4 times the allocated peak (the fixtures recorded from a
// later step: at most 1.22; whatif-varlen's variable lengths: 1.35), while
// a recording begun after a step twice as big holds twice the peak it
// replays. The margin keeps small recordings quiet, where one 20 MiB
// segment serving a few small blocks is many times what they hold.
const (
	peakBeforeRatio  = 2
	peakBeforeMargin = 128 << 20
)

// peakBefore warns when the true peak likely predates the trace: torch's
// own peak counters (when a tool saved memory_stats in the snapshot) are
// above the replay's, or the memory reserved at the first entry exceeds
// every state the trace replays, or is far above the highest allocated
// the trace replays (peakBeforeRatio).
func (t *Timeline) peakBefore(w *watch) {
	stats := t.memoryStats()
	var parts []string
	for _, q := range []struct {
		name, key string
		replay    int64
	}{
		{"allocated", "allocated_bytes.all.peak", t.PeakAllocated.Bytes},
		{"reserved", "reserved_bytes.all.peak", t.PeakReserved.Bytes},
	} {
		if v, ok := stats[q.key]; ok && v > q.replay {
			parts = append(parts, fmt.Sprintf("peak %s %s (%s), %s above the replay's %s",
				q.name, units.Bytes(v), q.key, units.Bytes(v-q.replay), units.Bytes(q.replay)))
		}
	}
	if len(parts) > 0 {
		t.warn(WarnPeakBefore, "device %d: the true peak predates the recording: torch's own counters in the snapshot (memory_stats) say %s",
			t.Device, strings.Join(parts, ", and "))
		return
	}
	if !w.events {
		return
	}
	if t.Start.Reserved > w.maxAfter.Reserved {
		t.warn(WarnPeakBefore, "device %d: the true peak likely predates the recording: %s was reserved at the first recorded entry, more than at any moment the trace replays (its peaks: %s allocated, %s reserved after the first entry); the allocator had reserved it for requests made before recording began",
			t.Device, units.Bytes(t.Start.Reserved), units.Bytes(w.maxAfter.Allocated), units.Bytes(w.maxAfter.Reserved))
		return
	}
	if peak := t.PeakAllocated.Bytes; t.Start.Reserved >= peakBeforeRatio*peak && t.Start.Reserved-peak >= peakBeforeMargin {
		t.warn(WarnPeakBefore, "device %d: the true peak likely predates the recording: %s was reserved at the first recorded entry (%s of it free, held from requests made before recording began), %.1f× the highest allocated the trace replays (%s at its peak); the caching allocator keeps what it reserved, so the run needed more before the trace than at any moment in it: start recording before the largest step to see that peak (torch.cuda.max_memory_allocated() in the run gives its size)",
			t.Device, units.Bytes(t.Start.Reserved), units.Bytes(t.Start.Reserved-t.Start.Allocated),
			float64(t.Start.Reserved)/float64(max(peak, 1)), units.Bytes(peak))
	}
}

// deferredFrees warns when frees waited for another stream's work long
// enough to matter: a block freed while a stream other than its own still
// has work queued on it (record_stream, a collective's buffers) is
// free_requested at once and free_completed only when that work is done,
// active and not allocated meanwhile, memory no request can reuse. The
// warning needs such a free (a free_completed not right after its own
// free_requested) and, at some moment, the bytes waiting at once (active −
// allocated) at least 1 MiB and 1/deferredShare of the allocated peak.
func (t *Timeline) deferredFrees(w *watch) {
	const deferredShare = 20
	if w.deferred == 0 || w.waiting < 1<<20 || deferredShare*w.waiting < t.PeakAllocated.Bytes {
		return
	}
	at := "at the first recorded entry"
	if w.waitingAt >= 0 {
		at = fmt.Sprintf("after event %d", w.waitingAt)
	}
	verb := "were"
	if w.deferred == 1 {
		verb = "was"
	}
	msg := fmt.Sprintf("device %d: %s (%s) %s freed while another stream still had work queued on them (record_stream, a tensor used on a side stream, a collective's buffers): each stays active, not allocated, until that work is done (its free_completed comes long after its free_requested), and no request can reuse its memory meanwhile; active exceeds allocated by up to %s (%s, %.0f%% of the allocated peak, %s), by %s at the allocated peak and %s at the end",
		t.Device, count(w.deferred, "block"), units.Bytes(w.deferredBytes), verb,
		units.Bytes(w.waiting), at, 100*float64(w.waiting)/float64(max(t.PeakAllocated.Bytes, 1)), units.Bytes(t.PeakAllocated.Bytes),
		units.Bytes(w.waitingAtPeak), units.Bytes(t.End.Active-t.End.Allocated))
	if longest := t.longestWait(); longest > 0 {
		msg += fmt.Sprintf("; the longest wait was %s", units.Duration(longest))
	}
	t.warn(WarnDeferredFrees, "%s", msg)
}

// longestWait returns the longest time from a free_requested to its
// free_completed when other entries came between, in µs (0 untimed).
func (t *Timeline) longestWait() int64 {
	if !t.Timed {
		return 0
	}
	requested := map[uint64]int64{}
	var longest int64
	for i := range t.Events {
		ev := &t.Events[i]
		switch ev.Action {
		case ActionFreeRequested:
			requested[ev.Addr] = ev.TimeUS
		case ActionFreeCompleted:
			if at, ok := requested[ev.Addr]; ok {
				longest = max(longest, ev.TimeUS-at)
				delete(requested, ev.Addr)
			}
		}
	}
	return longest
}

// memoryStats returns the device's peak counters from a memory_stats entry
// of the snapshot: torch.cuda.memory_stats()'s flat keys, its nested form,
// or either keyed by device ("0": {...}). A dict not keyed by device counts
// only for a snapshot of one device.
func (t *Timeline) memoryStats() map[string]int64 {
	ms := t.snap.MemoryStats
	if ms == nil {
		return nil
	}
	if d, ok := ms[fmt.Sprint(t.Device)].(map[string]any); ok {
		ms = d
	} else if len(t.snap.index().devices) != 1 {
		return nil
	}
	out := map[string]int64{}
	var flatten func(prefix string, m map[string]any)
	flatten = func(prefix string, m map[string]any) {
		for k, v := range m {
			switch v := v.(type) {
			case int64:
				out[prefix+k] = v
			case map[string]any:
				flatten(prefix+k+".", v)
			}
		}
	}
	flatten("", ms)
	return out
}

// timed reports whether a trace's entries carry times.
func timed(events []Event) bool {
	for i := range events {
		if events[i].TimeUS != 0 {
			return true
		}
	}
	return false
}

// endCheck is how the replay's end state compares with the segments.
type endCheck struct {
	missing, extra, sized, state int
	sizeDiff                     int64
	example                      *LiveBlock // the first block with another size
	exampleSize                  int64      // its size in the segments
	reserved, segReserved        int64
}

// checkEnd compares the replay's final live set with the end-state segments.
func (t *Timeline) checkEnd(e *engine) endCheck {
	var c endCheck
	// found marks the slab slots of live blocks the end state holds (an
	// address may repeat in a damaged end state): the live blocks not
	// marked are extra.
	found := make([]bool, len(e.slab))
	hits := 0
	for _, si := range t.snap.SegmentsOf(t.Device) {
		seg := &t.snap.Segments[si]
		c.segReserved += seg.TotalSize
		for bi := range seg.Blocks {
			b := &seg.Blocks[bi]
			if bi+addrmap.PrefetchAhead < len(seg.Blocks) {
				e.live.Prefetch(seg.Blocks[bi+addrmap.PrefetchAhead].Address)
			}
			if !b.State.Active() {
				continue
			}
			j, ok := e.live.Get(b.Address)
			if !ok {
				c.missing++
				continue
			}
			if !found[j] {
				found[j] = true
				hits++
			}
			lb := &e.slab[j]
			if lb.Size != b.Size {
				c.sized++
				c.sizeDiff += lb.Size - b.Size
				if c.example == nil {
					c.example, c.exampleSize = lb, b.Size
				}
			}
			if lb.PendingFree != (b.State == BlockActivePendingFree) {
				c.state++
			}
		}
	}
	c.extra = e.live.Len() - hits
	c.reserved = e.n.Reserved
	return c
}

// contradictions writes one warning listing every way the trace
// contradicts the snapshot's segments; when the only disagreement is in
// block sizes, a warning that explains the first one in bytes instead.
func (t *Timeline) contradictions(e *engine, w *watch, end *endCheck) {
	var parts []string
	add := func(n int, format string, args ...any) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf(format, args...))
		}
	}
	estimated := e.estimated
	for i := range t.Initial {
		if t.Initial[i].Estimated {
			estimated++
		}
	}
	add(e.insane, "%s with a negative size or an impossible address range skipped", count(e.insane, "entry", "entries"))
	add(e.unknownFrees, "%s of blocks never allocated", count(e.unknownFrees, "free"))
	add(e.doubleAllocs, "%s at an address already in use", count(e.doubleAllocs, "allocation"))
	add(estimated, "%s fitting in no free space of a reserved segment (sized by the rounded request)", count(estimated, "allocation"))
	add(t.initInconsistent, "%s the end state cannot follow from", count(t.initInconsistent, "entry or block", "entries or blocks"))
	if w.overReserved > 0 {
		at := "at the first entry"
		if w.firstOver >= 0 {
			at = fmt.Sprintf("first at event %d", w.firstOver)
		}
		add(1, "allocated exceeds reserved in %d states (%s: %s allocated, %s reserved)",
			w.overReserved, at, units.Bytes(w.overAt.Allocated), units.Bytes(w.overAt.Reserved))
	}
	blocks := end.missing + end.extra + end.state
	add(blocks, "the replay ends with %s other than the segments' (%d missing, %d extra, %d in another state)",
		count(blocks, "block"), end.missing, end.extra, end.state)
	if end.reserved != end.segReserved {
		add(1, "the replay ends with %s reserved, the segments total %s", units.Bytes(end.reserved), units.Bytes(end.segReserved))
	}
	if len(parts) > 0 {
		add(end.sized, "%s of another size", count(end.sized, "block"))
		t.warn(WarnContradiction, "device %d: the trace contradicts the snapshot's own segments, so the numbers replayed from it may be wrong: %s",
			t.Device, strings.Join(parts, "; "))
		return
	}
	if end.sized == 0 {
		return
	}
	b := end.example
	r := t.round.round(b.Requested)
	how := fmt.Sprintf("the trace's alloc rounds %d B to %d B", b.Requested, r)
	if b.Size != r {
		how = fmt.Sprintf("the replay gives the trace's alloc of %d B (rounded to %d B) the whole %d B free block it was cut from", b.Requested, r, b.Size)
	}
	verb := "differ"
	if end.sized == 1 {
		verb = "differs"
	}
	t.warn(WarnSizes, "device %d: %s %s in size between the trace and the segments (%+d B in all): block %#x is %d B in the segments but %s",
		t.Device, count(end.sized, "block"), verb, end.sizeDiff, b.Addr, end.exampleSize, how)
}

// timeBackwards warns when an entry's time_us is before the one before it:
// a clock that is not monotonic (another host's, a reset, a hand-edited
// file) makes times after the start negative or out of order, and every
// duration across such an entry wrong.
func (t *Timeline) timeBackwards(trace []Event) {
	n, first := 0, -1
	var most int64
	prev := int64(0)
	for i := range trace {
		ts := trace[i].TimeUS
		if ts == 0 {
			continue
		}
		if prev != 0 && ts < prev {
			if first < 0 {
				first = i
			}
			n++
			most = max(most, prev-ts)
		}
		prev = ts
	}
	if n == 0 {
		return
	}
	t.warn(WarnTimeBackwards, "device %d: time runs backwards at %s (the first: entry %d at time_us %d, after %d; the largest step back %d µs): "+
		"times and durations across them are not reliable, and a time before the first entry reads as negative",
		t.Device, count(n, "entry", "entries"), first, trace[first].TimeUS, prevTime(trace, first), most)
}

// prevTime is the last recorded time before entry i.
func prevTime(trace []Event, i int) int64 {
	for j := i - 1; j >= 0; j-- {
		if trace[j].TimeUS != 0 {
			return trace[j].TimeUS
		}
	}
	return 0
}
