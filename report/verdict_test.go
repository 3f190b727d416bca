package report

import (
	"testing"

	"github.com/memscope/memscope/attribution"
)

// TestFragVerdictText: each kind of fragmentation verdict says its words
// with its numbers and the settings it carries.
func TestFragVerdictText(t *testing.T) {
	frag := []attribution.Suggestion{{Setting: attribution.ExpandableSegments, Value: "True"}, {Setting: attribution.MaxSplitSize}}
	tests := []struct {
		name string
		v    attribution.FragVerdict
		want string
	}{
		{"nothing reserved", attribution.FragVerdict{Kind: attribution.FragNothingReserved}, "nothing reserved"},
		{"healthy", attribution.FragVerdict{Kind: attribution.FragHealthy, Free: 3 * mib, Share: 0.0312},
			"healthy: 3.1% of reserved is free (3.00 MiB)"},
		{"cached", attribution.FragVerdict{Kind: attribution.FragCached, Free: 40 * mib, Share: 0.4, Holes: 2, Largest: 32 * mib,
			Try: []attribution.Suggestion{{Setting: attribution.GarbageCollectionThreshold}}},
			"cached: 40.00 MiB (40% of reserved) is free but in large pieces (largest 32.00 MiB); it serves later requests, and garbage_collection_threshold can release it under pressure"},
		{"fragmented", attribution.FragVerdict{Kind: attribution.FragFragmented, Severity: attribution.SeverityProblem,
			Free: 30 * mib, Share: 0.11, Holes: 9, Largest: 4 * mib, Try: frag},
			"fragmented: 30.00 MiB (11% of reserved) is free in 9 holes, the largest 4.00 MiB; if allocations then fail or num_alloc_retries grows, try expandable_segments:True, or max_split_size_mb to stop large blocks being split, or bucket sequence lengths so request sizes repeat"},
		{"request fragmented", attribution.FragVerdict{Kind: attribution.FragRequestFragmented, Severity: attribution.SeverityProblem,
			Request: 64 * mib, Stranded: 50 * mib, Headroom: 30 * mib, Largest: 10 * mib, Try: frag[:1]},
			"fragmentation: the 64.00 MiB request would fit in the 50.00 MiB stranded in split segments plus the 30.00 MiB headroom, but the largest hole of its pool is 10.00 MiB; try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow in place, so free space stays contiguous)"},
		{"request too large", attribution.FragVerdict{Kind: attribution.FragRequestTooLarge, Request: 128 * mib, Stranded: 8 * mib,
			Headroom: 8 * mib, Free: 9 * mib},
			"not fragmentation: the 128.00 MiB request would not fit even in the 8.00 MiB stranded in split segments plus the 8.00 MiB headroom (9.00 MiB free in reserved segments in all)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fragVerdictText(tt.v); got != tt.want {
				t.Errorf("fragVerdictText(%+v) =\n %s\nwant\n %s", tt.v, got, tt.want)
			}
		})
	}
}

// TestOOMVerdictText: the two kinds of OOM verdict, on the device and
// under a per-process cap (the numbers of attribution's TestOOMVerdicts).
func TestOOMVerdictText(t *testing.T) {
	base := attribution.OOMVerdict{Severity: attribution.SeverityProblem, Request: 64 * mib, Allocated: 50 * mib, Free: 50 * mib,
		Pool: attribution.LargePool, Largest: 10 * mib, Stranded: 50 * mib, AllocSize: 64 * mib}
	with := func(kind attribution.OOMKind, headroom, deviceFree int64, c *attribution.Cap, try ...attribution.Suggestion) attribution.OOMVerdict {
		v := base
		v.Kind, v.Headroom, v.DeviceFree, v.Cap, v.Try = kind, headroom, deviceFree, c, try
		return v
	}
	tests := []struct {
		name string
		v    attribution.OOMVerdict
		want string
	}{
		{"fragmentation, device full", with(attribution.OOMFragmentation, 30*mib, 30*mib, nil,
			attribution.Suggestion{Setting: attribution.ExpandableSegments, Value: "True"}, attribution.Suggestion{Setting: attribution.MaxSplitSize}),
			"fragmentation, by the free blocks: no free block could take the 64.00 MiB request (the largest in the large pool was 10.00 MiB), but it would have fit in the 50.00 MiB free in split segments (stranded: release cannot return them) plus the 30.00 MiB the allocator could still reserve from the device; set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so free space stays contiguous (or max_split_size_mb to keep large blocks whole); the device had 30.00 MiB free, less than the 64.00 MiB segment needed: it was full"},
		{"capacity, device full", with(attribution.OOMCapacity, 5*mib, 5*mib, nil),
			"capacity, by the free blocks: 50.00 MiB allocated + 64.00 MiB requested = 114.00 MiB does not fit: only 50.00 MiB was free in reserved segments (50.00 MiB stranded in split segments of the large pool, the largest block 10.00 MiB) and 5.00 MiB more could be reserved from the device; the device had 5.00 MiB free, less than the 64.00 MiB segment needed: it was full; shrink what is live at this moment or raise the limit"},
		{"capacity under a cap", with(attribution.OOMCapacity, 0, 100<<30, &attribution.Cap{Low: 100 * mib, High: 164 * mib}),
			"capacity, by the free blocks: 50.00 MiB allocated + 64.00 MiB requested = 114.00 MiB does not fit: only 50.00 MiB was free in reserved segments (50.00 MiB stranded in split segments of the large pool, the largest block 10.00 MiB) and 0 B more could be reserved under the cap; a per-process cap applied (torch.cuda.set_per_process_memory_fraction): the device still had 100.00 GiB free, but the allocator would not reserve past a limit between 100.00 MiB (the most reserved) and 164.00 MiB (reserved then plus the 64.00 MiB segment refused); shrink what is live at this moment or raise the limit"},
	}
	// By simulation: the settings that served the requests, and those that
	// did not (attribution's TestOOMVerdictBySimulation decides them).
	exp := attribution.Suggestion{Setting: attribution.ExpandableSegments, Value: "True"}
	split := attribution.Suggestion{Setting: attribution.MaxSplitSize, Value: "128"}
	pow2 := attribution.Suggestion{Setting: attribution.RoundupPower2Divisions, Value: "4"}
	simFrag := with(attribution.OOMFragmentation, 30*mib, 30*mib, nil, exp, split)
	simFrag.Simulated, simFrag.Served, simFrag.NotServed = true, []attribution.SimulatedFix{{Suggestion: exp, PeakReserved: 120 * mib}, {Suggestion: split, PeakReserved: 130 * mib}}, []attribution.Suggestion{pow2}
	simCap := with(attribution.OOMCapacity, 5*mib, 5*mib, nil)
	simCap.Simulated, simCap.NotServed = true, []attribution.Suggestion{exp, split, pow2}
	tests = append(tests, []struct {
		name string
		v    attribution.OOMVerdict
		want string
	}{
		{"fragmentation by simulation", simFrag,
			"fragmentation, by simulation: the same requests under expandable_segments:True with the same capacity were all served (reserved peak 120.00 MiB); no free block could take the 64.00 MiB request (the largest in the large pool was 10.00 MiB) though 50.00 MiB was free in split segments and 30.00 MiB more could be reserved from the device; set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (max_split_size_mb:128 also serves them, reserved peak 130.00 MiB); roundup_power2_divisions:4 would not: still out of memory; the device had 30.00 MiB free, less than the 64.00 MiB segment needed: it was full"},
		{"capacity by simulation", simCap,
			"capacity, by simulation: even expandable_segments:True (free space kept contiguous) runs out of memory on the same requests under the same capacity; 50.00 MiB allocated + 64.00 MiB requested = 114.00 MiB, with 50.00 MiB free in reserved segments (50.00 MiB stranded in split segments of the large pool, the largest block 10.00 MiB) and 5.00 MiB more that could be reserved from the device; the device had 5.00 MiB free, less than the 64.00 MiB segment needed: it was full; shrink what is live at this moment or raise the limit"},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := oomVerdictText(tt.v); got != tt.want {
				t.Errorf("oomVerdictText(%+v) =\n %s\nwant\n %s", tt.v, got, tt.want)
			}
		})
	}
	for k, want := range map[attribution.OOMKind]string{attribution.OOMCapacity: "capacity", attribution.OOMFragmentation: "fragmentation"} {
		if got := oomKindText(k); got != want {
			t.Errorf("oomKindText(%d) = %q, want %q", k, got, want)
		}
	}
}

// TestFindingText: each kind of finding, and each reason a leak has no
// verdict, says its words; a problem is marked in the summary's text.
func TestFindingText(t *testing.T) {
	leak := &attribution.Leak{Found: true, Steps: []int{1, 2, 3, 4}, GrowthPerStep: 8 * mib,
		Sites: []attribution.LeakSite{{SiteBytes: attribution.SiteBytes{Label: "train.py:12 step"}, Steps: 4, BytesPerStep: 8 * mib}}}
	oom := &attribution.OOM{N: 1, Index: 618, Request: 128 * mib, SiteLabel: "train.py:30 forward",
		Verdict: attribution.OOMVerdict{Kind: attribution.OOMCapacity, Request: 128 * mib, Allocated: 900 * mib, Free: 8 * mib,
			Pool: attribution.LargePool, Largest: 4 * mib, Stranded: 8 * mib, Headroom: 8 * mib, DeviceFree: 4 * mib, AllocSize: 128 * mib}}
	tests := []struct {
		name string
		f    attribution.Finding
		want string
	}{
		{"leak", attribution.Finding{Kind: attribution.FindingLeak, Severity: attribution.SeverityProblem, Leak: leak},
			"leak: the floor after each step grows by 8.00 MiB per step over 4 steady steps; train.py:12 step keeps 8.00 MiB per step alive (4 steps)"},
		{"no leak", attribution.Finding{Kind: attribution.FindingLeak, Leak: &attribution.Leak{Steps: []int{1, 2, 3}}},
			"no leak: the floor did not grow step over step (3 steady steps)"},
		{"no history", attribution.Finding{Kind: attribution.FindingLeak, Severity: attribution.SeverityNoVerdict,
			Leak: &attribution.Leak{Reason: attribution.LeakNoHistory}},
			"leak: no allocation history recorded (record it with torch.cuda.memory._record_memory_history)"},
		{"few steps", attribution.Finding{Kind: attribution.FindingLeak, Severity: attribution.SeverityNoVerdict,
			Leak: &attribution.Leak{Reason: attribution.LeakFewSteps}},
			"leak: too few steps to tell (need a first step and at least 3 steady ones)"},
		{"two steps, growing", attribution.Finding{Kind: attribution.FindingLeak, Severity: attribution.SeverityNoVerdict,
			Leak: &attribution.Leak{Reason: attribution.LeakFewSteps, TwoSteps: true, Hint: 2 * mib}},
			"leak: too few steps to tell (need a first step and at least 3 steady ones); over the 2 steady steps recorded, the floor grew 2.00 MiB per step"},
		{"two steps, flat", attribution.Finding{Kind: attribution.FindingLeak, Severity: attribution.SeverityNoVerdict,
			Leak: &attribution.Leak{Reason: attribution.LeakFewSteps, TwoSteps: true}},
			"leak: too few steps to tell (need a first step and at least 3 steady ones); over the 2 steady steps recorded, the floor did not grow"},
		{"fragmentation", attribution.Finding{Kind: attribution.FindingFragmentation,
			Frag: &attribution.Fragmentation{Verdict: attribution.FragVerdict{Kind: attribution.FragHealthy, Free: 3 * mib, Share: 0.0312}}},
			"at the peak, healthy: 3.1% of reserved is free (3.00 MiB)"},
		{"oom", attribution.Finding{Kind: attribution.FindingOOM, Severity: attribution.SeverityProblem, OOM: oom},
			"out of memory 1 (event 618), a 128.00 MiB request from train.py:30 forward: capacity, by the free blocks: 900.00 MiB allocated + 128.00 MiB requested = 1.00 GiB does not fit: only 8.00 MiB was free in reserved segments (8.00 MiB stranded in split segments of the large pool, the largest block 4.00 MiB) and 8.00 MiB more could be reserved from the device; the device had 4.00 MiB free, less than the 128.00 MiB segment needed: it was full; shrink what is live at this moment or raise the limit ('memscope oom' lists it by site and category)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := findingText(tt.f); got != tt.want {
				t.Errorf("findingText(%s) =\n %s\nwant\n %s", tt.name, got, tt.want)
			}
		})
	}
	for k, want := range map[attribution.FindingKind]string{attribution.FindingLeak: "leak",
		attribution.FindingFragmentation: "fragmentation", attribution.FindingOOM: "oom"} {
		if got := k.String(); got != want {
			t.Errorf("FindingKind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

// TestSuggestionText: a setting to try is written as PYTORCH_CUDA_ALLOC_CONF
// spells it, with its value when it has one.
func TestSuggestionText(t *testing.T) {
	for _, tt := range []struct {
		s    attribution.Suggestion
		want string
	}{
		{attribution.Suggestion{Setting: attribution.ExpandableSegments, Value: "True"}, "expandable_segments:True"},
		{attribution.Suggestion{Setting: attribution.MaxSplitSize, Value: "512"}, "max_split_size_mb:512"},
		{attribution.Suggestion{Setting: attribution.MaxSplitSize}, "max_split_size_mb"},
		{attribution.Suggestion{Setting: attribution.GarbageCollectionThreshold, Value: "0.8"}, "garbage_collection_threshold:0.8"},
	} {
		if got := suggestionText(tt.s); got != tt.want {
			t.Errorf("suggestionText(%+v) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

// TestTreeNodeText: the call tree's summary nodes are named and described
// here; frame and site nodes keep their own names.
func TestTreeNodeText(t *testing.T) {
	for _, tt := range []struct {
		n          attribution.TreeNode
		name, path string
	}{
		{attribution.TreeNode{Kind: attribution.TreeFrame, Name: "step train.py:12", Path: "/w/train.py:12 step"}, "step train.py:12", "/w/train.py:12 step"},
		{attribution.TreeNode{Kind: attribution.TreeSite, Name: "(no history recorded)", Path: "(no history recorded)"}, "(no history recorded)", "(no history recorded)"},
		{attribution.TreeNode{Kind: attribution.TreeSelf, Path: "/w/train.py:12 step"}, "(self)", "allocated in /w/train.py:12 step itself"},
		{attribution.TreeNode{Kind: attribution.TreeSmaller, Smaller: 7, MinShare: 0.002, MaxNodes: 200}, "(7 smaller)",
			"7 smaller callees, each under 0.2% of the total or past the 200-node limit"},
		{attribution.TreeNode{Kind: attribution.TreeRoot, Name: "peak"}, "all", "allocated at peak"},
	} {
		if name, path := treeNodeText(&tt.n); name != tt.name || path != tt.path {
			t.Errorf("treeNodeText(%+v) = %q, %q; want %q, %q", tt.n, name, path, tt.name, tt.path)
		}
	}
}

// TestStepsFromText: each source of step boundaries is said in words.
func TestStepsFromText(t *testing.T) {
	for _, tt := range []struct {
		source, rangeName string
		events            int
		want              string
	}{
		{"harness", "", 10, "memscope's step annotations"},
		{"optimizer", "", 10, "Optimizer.step annotations"},
		{"profiler", "", 10, "ProfilerStep annotations"},
		{"record_function", "train_step", 10, `repeated "train_step" ranges`},
		{"dataloader", "", 10, "DataLoader fetches"},
		{"pattern", "", 10, "the allocation pattern, which repeats"},
		{"none", "", 10, "no annotation and no repeating allocation pattern"},
		{"none", "", 0, "no events"},
	} {
		if got := stepsFromText(tt.source, tt.rangeName, tt.events); got != tt.want {
			t.Errorf("stepsFromText(%q, %q, %d) = %q, want %q", tt.source, tt.rangeName, tt.events, got, tt.want)
		}
	}
}
