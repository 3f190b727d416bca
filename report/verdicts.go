package report

import (
	"fmt"
	"strings"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// The words of the verdicts: attribution decides them as values (kind,
// severity, numbers, settings to try) and these functions say them, the
// same in text, JSON and HTML.

// suggestionText is a setting to try as PYTORCH_CUDA_ALLOC_CONF spells it:
// "expandable_segments:True", or the bare option without a value.
func suggestionText(s attribution.Suggestion) string {
	if s.Value == "" {
		return s.Setting.String()
	}
	return s.Setting.String() + ":" + s.Value
}

// fragVerdictText says whether the free memory at a moment is a problem
// and what to try.
func fragVerdictText(v attribution.FragVerdict) string {
	s := fragKindText(v)
	switch {
	case v.Static != "":
		return s + " (from the free blocks alone: the allocator model cannot tell here: " + v.Static + ")"
	case !v.Simulated || v.Kind == attribution.FragRequestFragmented || v.Kind == attribution.FragRequestTooLarge || v.Kind == attribution.FragFragmented:
		return s
	case v.Best != "":
		return fmt.Sprintf("%s; by simulation no allocator setting tried lowers the reserved peak by 10%% or more over the same requests (the most, %s: %s, %s)",
			s, v.Best, units.Bytes(v.BestPeak), signedPercent(v.BestPeak-v.Recorded, v.Recorded))
	}
	return s + "; by simulation no allocator setting tried lowers the reserved peak by 1% or more over the same requests"
}

// pctChange is got against was, in percent.
func pctChange(got, was int64) float64 {
	return 100 * (float64(got)/float64(max(was, 1)) - 1)
}

// fragKindText words the verdict's kind.
func fragKindText(v attribution.FragVerdict) string {
	switch v.Kind {
	case attribution.FragNothingReserved:
		return "nothing reserved"
	case attribution.FragRequestFragmented:
		if v.Simulated {
			return fmt.Sprintf("fragmentation, by simulation: the same requests under %s and the same capacity were all served; the %s request found no hole of its pool larger than %s, with %s stranded in split segments and %s headroom; try PYTORCH_CUDA_ALLOC_CONF=%s",
				trySetting(v.Try, 0), units.Bytes(v.Request), units.Bytes(v.Largest), units.Bytes(v.Stranded), units.Bytes(v.Headroom), trySetting(v.Try, 0))
		}
		return fmt.Sprintf("fragmentation: the %s request would fit in the %s stranded in split segments plus the %s headroom, but the largest hole of its pool is %s; try PYTORCH_CUDA_ALLOC_CONF=%s (segments grow in place, so free space stays contiguous)",
			units.Bytes(v.Request), units.Bytes(v.Stranded), units.Bytes(v.Headroom), units.Bytes(v.Largest), trySetting(v.Try, 0))
	case attribution.FragRequestTooLarge:
		if v.Simulated {
			return fmt.Sprintf("not fragmentation, by simulation: even expandable_segments:True runs out of memory on the same requests under the same capacity; the %s request needed more than the %s free in reserved segments (%s stranded in split segments) plus the %s headroom could give",
				units.Bytes(v.Request), units.Bytes(v.Free), units.Bytes(v.Stranded), units.Bytes(v.Headroom))
		}
		return fmt.Sprintf("not fragmentation: the %s request would not fit even in the %s stranded in split segments plus the %s headroom (%s free in reserved segments in all)",
			units.Bytes(v.Request), units.Bytes(v.Stranded), units.Bytes(v.Headroom), units.Bytes(v.Free))
	case attribution.FragHealthy:
		return fmt.Sprintf("healthy: %.1f%% of reserved is free (%s)", 100*v.Share, units.Bytes(v.Free))
	case attribution.FragFragmented:
		if v.Simulated {
			return fmt.Sprintf("fragmented, by simulation: the same requests under %s reserve %s at their peak, %.0f%% less than the recorded %s; %s (%.0f%% of reserved) is free at the peak in %s, the largest %s; try PYTORCH_CUDA_ALLOC_CONF=%s",
				v.Best, units.Bytes(v.BestPeak), -pctChange(v.BestPeak, v.Recorded), units.Bytes(v.Recorded), units.Bytes(v.Free), 100*v.Share, nouns(v.Holes, "hole"), units.Bytes(v.Largest), v.Best)
		}
		return fmt.Sprintf("fragmented: %s (%.0f%% of reserved) is free in %s, the largest %s; if allocations then fail or num_alloc_retries grows, try %s, or %s to stop large blocks being split, or bucket sequence lengths so request sizes repeat",
			units.Bytes(v.Free), 100*v.Share, nouns(v.Holes, "hole"), units.Bytes(v.Largest), trySetting(v.Try, 0), trySetting(v.Try, 1))
	case attribution.FragCached:
		return fmt.Sprintf("cached: %s (%.0f%% of reserved) is free but in large pieces (largest %s); it serves later requests, and %s can release it under pressure",
			units.Bytes(v.Free), 100*v.Share, units.Bytes(v.Largest), trySetting(v.Try, 0))
	}
	return fmt.Sprintf("fragmentation verdict of kind %d", int(v.Kind))
}

// trySetting words the verdict's i-th setting to try; a verdict always
// carries the settings its words name.
func trySetting(try []attribution.Suggestion, i int) string {
	if i >= len(try) {
		return "(no setting)"
	}
	return suggestionText(try[i])
}

// oomVerdictText says what failed at an out-of-memory event and what to
// change.
func oomVerdictText(v attribution.OOMVerdict) string {
	within := "from the device"
	if v.Cap != nil {
		within = "under the cap"
	}
	var s string
	switch {
	case v.Simulated && v.Kind == attribution.OOMFragmentation:
		s = fmt.Sprintf("fragmentation, by simulation: the same requests under %s with the same capacity were all served (reserved peak %s); no free block could take the %s request (the largest in the %s pool was %s) though %s was free in split segments and %s more could be reserved %s; set PYTORCH_CUDA_ALLOC_CONF=%s",
			suggestionText(v.Served[0].Suggestion), units.Bytes(v.Served[0].PeakReserved), units.Bytes(v.Request), v.Pool, units.Bytes(v.Largest),
			units.Bytes(v.Stranded), units.Bytes(v.Headroom), within, suggestionText(v.Served[0].Suggestion))
		for _, f := range v.Served[1:] {
			s += fmt.Sprintf(" (%s also serves them, reserved peak %s)", suggestionText(f.Suggestion), units.Bytes(f.PeakReserved))
		}
		if len(v.NotServed) > 0 {
			s += "; " + suggestionsText(v.NotServed) + " would not: still out of memory"
		}
	case v.Simulated && len(v.Uncertain) > 0 && v.Uncertain[0].Setting == attribution.ExpandableSegments:
		u := v.Uncertain[0]
		s = fmt.Sprintf("capacity, by simulation, as far as it can tell: expandable_segments:True (free space kept contiguous) serves the same requests under the same capacity (reserved peak %s) only if the program kept none of the %s cached when the recording began, which the trace cannot tell; %s allocated + %s requested = %s, with %s free in reserved segments (%s stranded in split segments of the %s pool, the largest block %s) and %s more that could be reserved %s",
			units.Bytes(u.PeakReserved), units.Bytes(u.Unknown), units.Bytes(v.Allocated), units.Bytes(v.Request), units.Bytes(v.Allocated+v.Request),
			units.Bytes(v.Free), units.Bytes(v.Stranded), v.Pool, units.Bytes(v.Largest), units.Bytes(v.Headroom), within)
		if len(v.NotServed) > 0 {
			s += "; " + suggestionsText(v.NotServed) + " still run out of memory"
		}
	case v.Simulated:
		s = fmt.Sprintf("capacity, by simulation: even expandable_segments:True (free space kept contiguous) runs out of memory on the same requests under the same capacity; %s allocated + %s requested = %s, with %s free in reserved segments (%s stranded in split segments of the %s pool, the largest block %s) and %s more that could be reserved %s",
			units.Bytes(v.Allocated), units.Bytes(v.Request), units.Bytes(v.Allocated+v.Request),
			units.Bytes(v.Free), units.Bytes(v.Stranded), v.Pool, units.Bytes(v.Largest), units.Bytes(v.Headroom), within)
		if len(v.Served) > 0 {
			s += fmt.Sprintf("; %s serves them (reserved peak %s)", suggestionText(v.Served[0].Suggestion), units.Bytes(v.Served[0].PeakReserved))
		}
	case v.Kind == attribution.OOMFragmentation:
		s = fmt.Sprintf("fragmentation, by the free blocks: no free block could take the %s request (the largest in the %s pool was %s), but it would have fit in the %s free in split segments (stranded: release cannot return them) plus the %s the allocator could still reserve %s; set PYTORCH_CUDA_ALLOC_CONF=%s so free space stays contiguous (or %s to keep large blocks whole)",
			units.Bytes(v.Request), v.Pool, units.Bytes(v.Largest), units.Bytes(v.Stranded), units.Bytes(v.Headroom), within,
			trySetting(v.Try, 0), trySetting(v.Try, 1))
	default:
		s = fmt.Sprintf("capacity, by the free blocks: %s allocated + %s requested = %s does not fit: only %s was free in reserved segments (%s stranded in split segments of the %s pool, the largest block %s) and %s more could be reserved %s",
			units.Bytes(v.Allocated), units.Bytes(v.Request), units.Bytes(v.Allocated+v.Request),
			units.Bytes(v.Free), units.Bytes(v.Stranded), v.Pool, units.Bytes(v.Largest), units.Bytes(v.Headroom), within)
	}
	if c := v.Cap; c != nil {
		s += fmt.Sprintf("; a per-process cap applied (torch.cuda.set_per_process_memory_fraction): the device still had %s free, but the allocator would not reserve past a limit between %s (the most reserved) and %s (reserved then plus the %s segment refused)",
			units.Bytes(v.DeviceFree), units.Bytes(c.Low), units.Bytes(c.High), units.Bytes(v.AllocSize))
	} else {
		s += fmt.Sprintf("; the device had %s free, less than the %s segment needed: it was full", units.Bytes(v.DeviceFree), units.Bytes(v.AllocSize))
	}
	if v.Kind == attribution.OOMCapacity {
		s += "; shrink what is live at this moment or raise the limit"
	}
	return s
}

// suggestionsText lists settings: "a", "a and b", "a, b and c".
func suggestionsText(ss []attribution.Suggestion) string {
	var parts []string
	for _, x := range ss {
		parts = append(parts, suggestionText(x))
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// oomKindText names an OOM verdict's kind.
func oomKindText(k attribution.OOMKind) string {
	if k == attribution.OOMFragmentation {
		return "fragmentation"
	}
	return "capacity"
}

// leakReasonText says why a leak analysis has no verdict; "" when it has
// one.
func leakReasonText(l *attribution.Leak) string {
	switch l.Reason {
	case attribution.LeakDecided:
		return ""
	case attribution.LeakNoHistory:
		return "no allocation history recorded (record it with torch.cuda.memory._record_memory_history)"
	case attribution.LeakFewSteps:
		s := "too few steps to tell (need a first step and at least 3 steady ones)"
		switch {
		case !l.TwoSteps:
		case l.Hint > 0:
			s += fmt.Sprintf("; over the 2 steady steps recorded, the floor grew %s per step", units.Bytes(l.Hint))
		default:
			s += "; over the 2 steady steps recorded, the floor did not grow"
		}
		return s
	}
	return fmt.Sprintf("no verdict, for a reason of kind %d", int(l.Reason))
}

// findingText is one finding in a line: the verdict with the numbers it
// rests on.
func findingText(f attribution.Finding) string {
	switch f.Kind {
	case attribution.FindingLeak:
		l := f.Leak
		switch {
		case l.Found:
			top := l.Sites[0]
			return fmt.Sprintf("leak: the floor after each step grows by %s per step over %d steady steps; %s keeps %s per step alive (%d steps)",
				units.Bytes(l.GrowthPerStep), len(l.Steps), top.Label, units.Bytes(top.BytesPerStep), top.Steps)
		case l.Reason == attribution.LeakDecided:
			return fmt.Sprintf("no leak: the floor did not grow step over step (%d steady steps)", len(l.Steps))
		}
		return "leak: " + leakReasonText(l)
	case attribution.FindingFragmentation:
		return "at the peak, " + fragVerdictText(f.Frag.Verdict)
	case attribution.FindingOOM:
		o := f.OOM
		s := fmt.Sprintf("out of memory %d (event %d), a %s request from %s: %s",
			o.N, o.Index, units.Bytes(o.Request), o.SiteLabel, oomVerdictText(o.Verdict))
		if o.Verdict.Kind == attribution.OOMCapacity {
			// Outside memscope oom, say where what was live is listed.
			s += " ('memscope oom' lists it by site and category)"
		}
		return s
	}
	return fmt.Sprintf("finding of kind %d", int(f.Kind))
}

// deviceWarnings words a device's warnings: the replay's, the one saying
// the ring buffer wrapped with the estimate of what it lost.
func deviceWarnings(d *attribution.DeviceSummary) []string {
	out := warningStrings(d.Warnings)
	if d.Lost == nil {
		return out
	}
	for i, w := range d.Warnings {
		if w.Kind == snapshot.WarnWrapped {
			out[i] += "; " + lostText(d.Lost)
		}
	}
	return out
}

// lostText says how many entries a wrapped ring buffer lost, by the steps'
// annotations.
func lostText(l *attribution.Lost) string {
	what := fmt.Sprintf("%d whole steps", l.Steps)
	if l.Steps == 1 {
		what = "1 whole step"
	}
	switch {
	case l.Steps > 0 && l.CutStep >= 0:
		what += fmt.Sprintf(" and the start of step %d", l.CutStep)
	case l.CutStep >= 0:
		what = fmt.Sprintf("the start of step %d", l.CutStep)
	}
	return fmt.Sprintf("by the steps' annotations, which outlive their entries, about %d entries were lost: %s, at the median %d entries of the %d steps recorded whole",
		l.Entries, what, l.PerStep, l.Complete)
}
