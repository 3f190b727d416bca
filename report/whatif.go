package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/memscope/memscope/allocator"
	"github.com/memscope/memscope/internal/textsafe"
	"github.com/memscope/memscope/internal/units"
)

// WhatIf is 'memscope whatif' of one snapshot: per device, the recorded
// requests under the recorded settings (with the replay's check of the
// model against the recording) and under each setting asked for.
type WhatIf struct {
	Source  string
	Devices []allocator.DeviceWhatIfs
}

func (*WhatIf) Kind() string { return "whatif" }

func (r *WhatIf) writeText(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n", r.Source)
	for _, d := range r.Devices {
		ew.printf("\ndevice %d: ", d.Device)
		if d.Refused != "" {
			ew.printf("cannot model the allocator: %s\n", d.Refused)
			continue
		}
		rec := d.Runs[0]
		rep := rec.Replay
		t := rep.Total()
		ew.printf("the model matched %d of %d recorded decisions (%s)", t.Matched, t.Checked, percent(t.Matched, t.Checked))
		if rep.First != nil {
			ew.printf("; first divergence at %s", rep.First)
		}
		if rep.LostAt >= 0 {
			ew.printf("; %d divergences; checking stopped at event %d, %d entries unchecked: %s", rep.Divergences, rep.LostAt, rep.Unchecked, rep.LostWhy)
		}
		ew.printf("\n")
		recOOM := "no"
		if d.RecordedOOM >= 0 {
			recOOM = fmt.Sprintf("yes, at event %d", d.RecordedOOM)
		}
		ew.printf("recorded: peak reserved %s, at end %s, OOM %s\n", units.Bytes(d.RecordedPeak), units.Bytes(d.RecordedEnd), recOOM)
		cap := "unlimited"
		if rec.Capacity > 0 {
			cap = fmt.Sprintf("%s (%s)", units.Bytes(rec.Capacity), capacityWords(rec.CapacityFrom))
		}
		ew.printf("device capacity: %s\n", cap)
		if rec.Window {
			ew.printf("recording began late: the what-if covers the recorded window only, from the state rebuilt at its start\n")
			for _, o := range d.Runs[1:] {
				if o.StartPlaced {
					ew.printf("%s\n", wrap(fmt.Sprintf("under other settings that start state is re-made (its segments asked for and freed, then its live blocks): %s of it was cached, not live, and how much of that the program would have kept under another setting is not in the trace, so each peak is given with its bound: none of it kept, and all of it kept on top",
						units.Bytes(o.StartUnknown)), 100, "  "))
					break
				}
			}
		}
		ew.printf("\n")
		tw := newTable(ew, 0)
		head := []string{"", "recorded settings"}
		for _, c := range d.Confs {
			if strings.TrimSpace(c) == "" {
				c = "defaults" // --conf "": torch's default settings
			}
			head = append(head, textsafe.Escape(c))
		}
		fmt.Fprintf(tw, "%s\n", strings.Join(head, "\t"))
		row := func(name string, f func(o *allocator.Outcome) string) {
			cells := []string{name}
			for _, o := range d.Runs {
				cells = append(cells, f(o))
			}
			fmt.Fprintf(tw, "%s\n", strings.Join(cells, "\t"))
		}
		row("peak reserved", func(o *allocator.Outcome) string {
			if o.StartPlaced {
				return fmt.Sprintf("%s (%s to %s)", units.Bytes(o.PeakReserved), units.Bytes(o.PeakReservedLow), units.Bytes(o.PeakReservedHigh))
			}
			return units.Bytes(o.PeakReserved)
		})
		row("reserved at end", func(o *allocator.Outcome) string { return units.Bytes(o.EndReserved) })
		row("peak allocated", func(o *allocator.Outcome) string { return units.Bytes(o.PeakAllocated) })
		row("segments (peak/end)", func(o *allocator.Outcome) string { return fmt.Sprintf("%d/%d", o.PeakSegments, o.EndSegments) })
		row("inactive_split at peak", func(o *allocator.Outcome) string {
			return fmt.Sprintf("%d (%s)", o.InactiveSplit, units.Bytes(o.InactiveSplitBytes))
		})
		row("retries", func(o *allocator.Outcome) string { return fmt.Sprint(o.Retries) })
		row("OOM", func(o *allocator.Outcome) string {
			if o.OOM == nil {
				return "no"
			}
			return fmt.Sprintf("yes: event %d, %s", o.OOM.Index, units.Bytes(o.OOM.Size))
		})
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, o := range d.Runs {
			if o.PeakSegments == 0 && o.PeakReserved > 0 {
				// A column of 0/0 with memory reserved is expandable
				// segments', which torch's segment stat does not count.
				ew.printf("segments count cudaMalloc'd segments as torch's segment stat does: expandable segments' mapped memory is not among them\n")
				break
			}
		}
		if m := d.Model; m != nil {
			ew.printf("the recorded settings' column is the recorded run, as the replay matched it\n")
			if m.PeakReserved != rec.PeakReserved || (m.OOM == nil) != (rec.OOM == nil) {
				why := "its new segments at addresses of its own, which steer torch's ties among equal free blocks"
				if m.Window {
					why = "from the state rebuilt at the recording's start"
				}
				ew.printf("%s\n", wrap(fmt.Sprintf("the what-if under the recorded settings (%s) reserves %s at its peak (%+.1f%% of the recorded)%s: the other columns are what-ifs run the same way, so compare them with that",
					why, units.Bytes(m.PeakReserved), 100*(float64(m.PeakReserved)/float64(max(rec.PeakReserved, 1))-1), oomWords(m)), 100, "  "))
			}
		}
		for i, o := range d.Runs {
			name := "the recorded settings"
			if i > 0 {
				name = d.Confs[i-1]
			}
			if o.OOM != nil && i == 0 && d.Model != nil {
				ew.printf("the recorded run: out of memory at event %d (a request of %s on stream %d, %s reserved)\n",
					o.OOM.Index, units.Bytes(o.OOM.Size), o.OOM.Stream, units.Bytes(o.OOM.Reserved))
			} else if o.OOM != nil {
				ew.printf("%s: out of memory at event %d (a request of %s on stream %d, %s reserved); the program would have raised there, so the what-if stops\n",
					name, o.OOM.Index, units.Bytes(o.OOM.Size), o.OOM.Stream, units.Bytes(o.OOM.Reserved))
			}
			if len(o.ServedOOMs) > 0 && i > 0 {
				ew.printf("%s: serves the request the recorded run failed at event %d; the recording has nothing of what the program would have done after it\n",
					name, o.ServedOOMs[0])
			}
			if o.Unmatched > 0 {
				ew.printf("%s: %d frees of blocks the what-if did not hold were skipped\n", name, o.Unmatched)
			}
			if i > 0 {
				for _, r := range o.OOMRequests {
					ew.printf("%s: the recorded OOM at event %d holds its request rounded to %s by the recorded roundup_power2_divisions; the program asked for more than %s and at most %s, and the what-if asks for %s\n",
						name, r.Index, units.Bytes(r.Recorded), units.Bytes(r.From-1), units.Bytes(r.Recorded), units.Bytes(r.Used))
				}
			}
		}
		if n := d.Runs[0].DeferredFrees; n > 0 && len(d.Runs) > 1 {
			ew.printf("%d frees waited for work on other streams (record_stream); they complete where the recording has them, and in another run the GPU may finish them earlier or later, so a block reused here may not be there (and the reserved peak differ by a segment or more)\n", n)
		}
	}
	return ew.err
}

// oomWords is ", and runs out of memory at event N" for a what-if that
// does, else "".
func oomWords(o *allocator.Outcome) string {
	if o.OOM == nil {
		return ""
	}
	return fmt.Sprintf(", and runs out of memory at event %d", o.OOM.Index)
}

func percent(n, of int) string {
	if of == 0 {
		return "no checks"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

func capacityWords(from string) string {
	switch from {
	case allocator.CapacityGiven:
		return "given"
	case allocator.CapacityOOM:
		return "from the recorded OOM: reserved then plus the device's free memory"
	case allocator.CapacityOOMCap:
		return "a per-process cap, from the recorded OOM: the device had room, so a cap refused the request; just below every failed cudaMalloc's reserved plus size"
	case allocator.CapacityFailures:
		return "a per-process cap, from the recorded retries: just below every failed cudaMalloc's reserved plus size"
	case allocator.CapacityCap:
		return "the per-process cap"
	case allocator.CapacityRecorded:
		return "as recorded"
	}
	return from
}

// WhatIfFileJSON is the entry of one file in the whatif document.
type WhatIfFileJSON struct {
	Source  string             `json:"source"`
	Devices []WhatIfDeviceJSON `json:"devices"`
}

// WhatIfDeviceJSON is one device's what-ifs.
type WhatIfDeviceJSON struct {
	Device       int    `json:"device"`
	Refused      string `json:"refused,omitempty"`
	RecordedPeak int64  `json:"recorded_peak_reserved"`
	RecordedEnd  int64  `json:"recorded_end_reserved"`
	RecordedOOM  int    `json:"recorded_oom_event"`
	// DeferredFrees counts the record_stream frees whose completion the
	// what-ifs take from the recording.
	DeferredFrees int `json:"deferred_frees"`
	// Replay is the check of the model against the recording.
	Replay *WhatIfReplayJSON `json:"replay,omitempty"`
	// WhatIfPeak, where the recorded settings' run is the replay's (the
	// model matched every decision: runs[0].replayed), is the what-if's
	// reserved peak under the recorded settings, run as the other
	// settings' are, and WhatIfOOMEvent where it ran out of memory (-1:
	// nowhere).
	WhatIfPeak     int64           `json:"what_if_peak_reserved,omitempty"`
	WhatIfOOMEvent *int            `json:"what_if_oom_event,omitempty"`
	Runs           []WhatIfRunJSON `json:"runs"`
}

// WhatIfReplayJSON is the replay check under the recorded settings.
type WhatIfReplayJSON struct {
	Checked         int    `json:"checked"`
	Matched         int    `json:"matched"`
	Exact           bool   `json:"exact"`
	FirstDivergence string `json:"first_divergence,omitempty"`
	// StoppedAt is the event checking stopped at (StoppedWhy says why),
	// absent when it went to the end.
	StoppedAt  *int   `json:"stopped_at,omitempty"`
	StoppedWhy string `json:"stopped_why,omitempty"`
}

// WhatIfRunJSON is one what-if: the recorded requests under one setting.
type WhatIfRunJSON struct {
	Conf     string `json:"conf"`
	Recorded bool   `json:"recorded_settings"`
	// Replayed: the numbers are the recorded run's, as the replay check
	// matched it, not a what-if's.
	Replayed           bool   `json:"replayed"`
	Capacity           int64  `json:"capacity"`
	CapacityFrom       string `json:"capacity_from"`
	Window             bool   `json:"window_only"`
	Requests           int    `json:"requests"`
	TotalRequests      int    `json:"total_requests"`
	PeakReserved       int64  `json:"peak_reserved"`
	PeakReservedEvent  int    `json:"peak_reserved_event"`
	EndReserved        int64  `json:"end_reserved"`
	PeakAllocated      int64  `json:"peak_allocated"`
	PeakSegments       int    `json:"peak_segments"`
	EndSegments        int    `json:"end_segments"`
	InactiveSplit      int    `json:"inactive_split"`
	InactiveSplitBytes int64  `json:"inactive_split_bytes"`
	Retries            int    `json:"retries"`
	EmptyCaches        int    `json:"empty_caches"`
	OOM                bool   `json:"oom"`
	OOMEvent           int    `json:"oom_event"`
	OOMSize            int64  `json:"oom_size"`
	ServedOOMs         []int  `json:"served_ooms"`
	Unmatched          int    `json:"unmatched_frees"`
	// OOMRequests are the recorded ooms whose request the recorded
	// rounding hides (allocator.Outcome.OOMRequests).
	OOMRequests []WhatIfOOMRequestJSON `json:"oom_requests"`
	// StartPlaced: a late recording's start state re-made under this
	// setting; StartUnknown its cached bytes, whose history is unknown;
	// PeakReservedLow and PeakReservedHigh the bound on peak_reserved
	// (allocator.Outcome); OOMUncertain an OOM that keeping none of the
	// cached memory avoids.
	StartPlaced      bool  `json:"start_replaced"`
	StartUnknown     int64 `json:"start_unknown_bytes"`
	PeakReservedLow  int64 `json:"peak_reserved_low"`
	PeakReservedHigh int64 `json:"peak_reserved_high"`
	OOMUncertain     bool  `json:"oom_uncertain"`
}

// WhatIfOOMRequestJSON is a recorded oom's request, known to a range.
type WhatIfOOMRequestJSON struct {
	Event    int   `json:"event"`
	Recorded int64 `json:"recorded_size"`
	From     int64 `json:"smallest_request"`
	Used     int64 `json:"used"`
}

func (r *WhatIf) fileEntry() any {
	f := WhatIfFileJSON{Source: r.Source, Devices: []WhatIfDeviceJSON{}}
	for _, d := range r.Devices {
		dj := WhatIfDeviceJSON{Device: d.Device, Refused: d.Refused, RecordedPeak: d.RecordedPeak,
			RecordedEnd: d.RecordedEnd, RecordedOOM: d.RecordedOOM, Runs: []WhatIfRunJSON{}}
		if d.Refused == "" && len(d.Runs) > 0 {
			rep := d.Runs[0].Replay
			t := rep.Total()
			rj := &WhatIfReplayJSON{Checked: t.Checked, Matched: t.Matched, Exact: rep.Exact()}
			if rep.First != nil {
				rj.FirstDivergence = rep.First.String()
			}
			if rep.LostAt >= 0 {
				at := rep.LostAt
				rj.StoppedAt, rj.StoppedWhy = &at, rep.LostWhy.String()
			}
			dj.Replay = rj
			dj.DeferredFrees = d.Runs[0].DeferredFrees
			if m := d.Model; m != nil {
				at := -1
				if m.OOM != nil {
					at = m.OOM.Index
				}
				dj.WhatIfPeak, dj.WhatIfOOMEvent = m.PeakReserved, &at
			}
		}
		for i, o := range d.Runs {
			run := WhatIfRunJSON{Recorded: i == 0, Capacity: o.Capacity, CapacityFrom: o.CapacityFrom,
				Window: o.Window, Requests: o.Requests, TotalRequests: o.Total,
				PeakReserved: o.PeakReserved, PeakReservedEvent: o.PeakReservedAt, EndReserved: o.EndReserved,
				PeakAllocated: o.PeakAllocated, PeakSegments: o.PeakSegments, EndSegments: o.EndSegments,
				InactiveSplit: o.InactiveSplit, InactiveSplitBytes: o.InactiveSplitBytes, Retries: o.Retries,
				EmptyCaches: o.EmptyCaches, OOMEvent: -1, ServedOOMs: []int{}, Unmatched: o.Unmatched,
				StartPlaced: o.StartPlaced, StartUnknown: o.StartUnknown, PeakReservedLow: o.PeakReservedLow,
				PeakReservedHigh: o.PeakReservedHigh, OOMUncertain: o.OOMUncertain}
			if i > 0 {
				run.Conf = d.Confs[i-1]
			}
			if o.OOM != nil {
				run.OOM, run.OOMEvent, run.OOMSize = true, o.OOM.Index, o.OOM.Size
			}
			run.ServedOOMs = append(run.ServedOOMs, o.ServedOOMs...)
			run.Replayed = i == 0 && d.Model != nil
			run.OOMRequests = []WhatIfOOMRequestJSON{}
			for _, r := range o.OOMRequests {
				run.OOMRequests = append(run.OOMRequests, WhatIfOOMRequestJSON{Event: r.Index, Recorded: r.Recorded, From: r.From, Used: r.Used})
			}
			dj.Runs = append(dj.Runs, run)
		}
		f.Devices = append(f.Devices, dj)
	}
	return f
}
