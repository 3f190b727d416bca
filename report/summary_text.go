package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// summaryTextOptions tune summaryText.
type summaryTextOptions struct {
	Stacks    bool // print each top site's stack
	AllFrames bool // native frames too, not only their count
}

// summaryText writes sum as aligned text, fitting 100 columns.
func summaryText(w io.Writer, sum *attribution.Summary, opt summaryTextOptions) error {
	ew := &errWriter{w: w}
	ew.printf("%s (%s", sum.Source, sum.Format)
	if sum.Format == "pickle" {
		ew.printf(" protocol %d", sum.Protocol)
	}
	ew.printf(")\n")
	if len(sum.Devices) == 0 {
		ew.printf("no device has segments or recorded events\n")
	}
	for i := range sum.Devices {
		deviceText(ew, sum, &sum.Devices[i], opt)
	}
	if len(sum.Warnings) > 0 {
		ew.printf("\nwarnings:\n")
		for _, wn := range sum.Warnings {
			ew.printf("  - %s\n", wn.Message)
		}
	}
	return ew.err
}

func deviceText(ew *errWriter, sum *attribution.Summary, d *attribution.DeviceSummary, opt summaryTextOptions) {
	ew.printf("\ndevice %d: %s, %s, %s (%d active)",
		d.Device, nouns(d.Events, "event"), nouns(d.Segments, "segment"), nouns(d.Blocks, "block"), d.ActiveBlocks)
	if d.OOMs > 0 {
		ew.printf(", %s", nouns(d.OOMs, "out-of-memory event"))
	}
	if r := d.AllocRetries; r != nil && *r > 0 {
		ew.printf(", %s (cudaMalloc failed, the cache released, tried again)", nouns(*r, "allocation retry"))
	}
	ew.printf("\n\n")

	tw := newTable(ew, tabwriter.AlignRight)
	fprintf(tw, "\trequested\tallocated\tactive\treserved\tdevice used\t\n")
	used := "not recorded"
	if d.DeviceUsed != nil {
		used = units.Bytes(*d.DeviceUsed)
	}
	row := func(name string, n snapshot.Numbers, dev string) {
		fprintf(tw, "%-8s\t%s\t%s\t%s\t%s\t%s\t\n", name, units.Bytes(n.Requested),
			units.Bytes(n.Allocated), units.Bytes(n.Active), units.Bytes(n.Reserved), dev)
	}
	row("at start", d.Start, "")
	row("at peak", d.AtPeak, used)
	row("at end", d.End, "")
	usedPeak := ""
	if d.DeviceUsedPeak != nil {
		usedPeak = units.Bytes(*d.DeviceUsedPeak)
	}
	fprintf(tw, "%-8s\t%s\t%s\t%s\t%s\t%s\t\n", "own peak", units.Bytes(d.PeakRequested.Bytes),
		units.Bytes(d.PeakAllocated.Bytes), units.Bytes(d.PeakActive.Bytes), units.Bytes(d.PeakReserved.Bytes), usedPeak)
	tw.Flush()
	if d.DeviceUsedPeak != nil {
		ew.printf("(device used: the highest the capture run sampled per step, from its steps file)\n")
	}

	ew.printf("\npeak allocated %s ", units.Bytes(d.PeakAllocated.Bytes))
	if note := endStateNote(d); note != "" {
		ew.printf("%s\n", note)
	} else if d.PeakAllocated.Index < 0 {
		ew.printf("was already live before the first recorded event\n")
	} else {
		if d.Timed {
			ew.printf("at +%s of %s (event %d)", units.Duration(d.PeakOffsetUS), units.Duration(d.DurationUS), d.PeakAllocated.Index)
		} else {
			ew.printf("at event %d of %d (time not recorded)", d.PeakAllocated.Index, d.Events)
		}
		if d.PeakStep != nil {
			ew.printf(", step %d %s", *d.PeakStep, d.PeakPhase)
		} else if d.PeakPhase != "" {
			ew.printf(", in %s", d.PeakPhase)
		}
		ew.printf("\n")
		ew.printf("  %s\n", wrap(stepsLine(d.Steps, stepsFromText(d.StepsSource, d.StepsRange, d.Events)+cutByText(d.StepsCutBy)), 98, "    "))
		if len(d.PeakRanges) > 0 {
			names := make([]string, len(d.PeakRanges))
			for i, r := range d.PeakRanges {
				names[i] = r.Name
			}
			ew.printf("  inside: %s\n", clip(strings.Join(names, " > "), 90))
		}
	}

	if len(d.TopSites) > 0 {
		ew.printf("\ntop sites live at peak (%s, %s allocated):\n", nouns(d.LiveAtPeak, "block"), units.Bytes(d.AtPeak.Allocated))
		tw = newTable(ew, 0)
		fprintf(tw, "  %10s\t%6s\t%6s\t%s\n", "allocated", "share", "blocks", siteHeading)
		for _, s := range d.TopSites {
			lines := siteLines(sum.Stacks, s, 70)
			if s.FreeStack {
				lines[0] = clip(lines[0]+" [freed here; allocated before recording]", 70)
			}
			fprintf(tw, "  %10s\t%5.1f%%\t%6d\t%s\n", units.Bytes(s.Bytes), 100*s.Share, s.Count, lines[0])
			for _, l := range lines[1:] {
				fprintf(tw, "\t\t\t%s\n", l)
			}
			if opt.Stacks {
				tw.Flush()
				siteStackText(ew, sum.Stacks, s.Stack, opt.AllFrames)
			}
		}
		tw.Flush()
	}
	if d.Joined {
		ew.printf("\ntop operators live at peak (profiler trace joined: %.1f%% of its window's bytes matched):\n", 100*d.OpsCovered)
		joinWindowsText(ew, d.Join)
		for _, r := range d.Ops {
			ew.printf("  %10s  %5d  %s\n", units.Bytes(r.Bytes.Bytes), r.Count, clipTail(r.Label, 80))
		}
	}
	if d.Timeline != nil {
		timelineSampleText(ew, sum.TimelineSource, "at the peak", *d.Timeline) // errors stick in ew
	}
	var cats []string
	for c := attribution.Category(0); c < attribution.NumCategories; c++ {
		if b := d.Categories[c]; b.Bytes > 0 {
			cats = append(cats, fmt.Sprintf("%s %s", c, units.Bytes(b.Bytes)))
		}
	}
	if len(cats) > 0 {
		ew.printf("\n%s\n", wrap("at peak by category: "+strings.Join(cats, ", "), 98, "  "))
	}
	privatePoolsText(ew, d.PrivatePools, "at the peak")
	if d.Inference != nil {
		inferenceText(ew, d.Inference)
	}
	if len(d.Findings) > 0 {
		ew.printf("\nfindings:\n")
		for _, f := range d.Findings {
			mark := "  "
			if f.Problem() {
				mark = "! "
			}
			ew.printf("%s%s\n", mark, wrap(findingText(f), 96, "    "))
		}
	}
	if len(d.Fixes) > 0 {
		ew.printf("\nwhat to change, cheapest first (memscope advise for all, with costs):\n")
		for i, f := range d.Fixes {
			if f.Limit != nil {
				// The device ran out of memory: advise fits the failed step.
				ew.printf("  %d. %s\n     removes %s at the OOM → the failed step's peak %s at least: %s\n", i+1, adviceFixWords(f).name,
					units.Bytes(f.Removes), units.Bytes(f.NewPeak), limitVerdictWord(f.Limit.Verdict))
				continue
			}
			ew.printf("  %d. %s\n     removes %s at the peak → new peak %s (%s)\n", i+1, adviceFixWords(f).name,
				units.Bytes(f.Removes), units.Bytes(f.NewPeak), signedPercent(f.NewPeak-d.PeakAllocated.Bytes, d.PeakAllocated.Bytes))
		}
	}
	if len(d.Warnings) > 0 {
		ew.printf("\nwarnings:\n")
		for _, wn := range deviceWarnings(d) {
			ew.printf("  - %s\n", wrap(wn, 94, "    "))
		}
	}
}

// clip shortens s to n runes, keeping its end (the informative part of a
// path) behind "…".
// siteStackText writes a site's stack, innermost first: its Python frames
// (the user's, libraries', torch's), then one line counting the native
// frames left out (C++, CPython's interpreter, libc: a stacks="all"
// recording), unless all is set.
func siteStackText(ew *errWriter, st *snapshot.Stacks, id snapshot.StackID, all bool) {
	native := 0
	for _, fid := range st.Stack(id) {
		fr := st.Frame(fid)
		if !all && !attribution.IsPython(fr) {
			native++
			continue
		}
		ew.printf("        %s\n", clip(attribution.FrameLabel(fr), 90))
	}
	if native > 0 {
		ew.printf("        (%s of C++, CPython and libc not shown; --all-frames prints them)\n", nouns(native, "native frame"))
	}
}

// stepsFromText says where step boundaries came from (Phases.Source and
// Range; events is how many the trace holds).
func stepsFromText(source, rangeName string, events int) string {
	switch source {
	case "harness":
		return "memscope's step annotations"
	case "optimizer":
		return "Optimizer.step annotations"
	case "profiler":
		return "ProfilerStep annotations"
	case "record_function":
		return fmt.Sprintf("repeated %q ranges", rangeName)
	case "dataloader":
		return "DataLoader fetches"
	case "pattern":
		return "the allocation pattern, which repeats"
	case "kv cache":
		return "generate() calls, told by their KV cache"
	case "one pass":
		if rangeName != "" {
			return fmt.Sprintf("one pass through the model: the allocation pattern repeats inside one module call (%s), layers, not steps", rangeName)
		}
		return "one pass through the model: nothing repeats step over step"
	}
	if events == 0 {
		return "no events"
	}
	return "no annotation and no repeating allocation pattern"
}

// cutByText says that another device's OOM ended a device's one pass
// (-1: none did).
func cutByText(device int) string {
	if device < 0 {
		return ""
	}
	return fmt.Sprintf(", cut short by device %d's out-of-memory error (one process drives these GPUs: DataParallel, or a model split over them)", device)
}

// inferenceText says where an inference run's memory is: weights, the KV
// cache and its growth, the prefill's activations.
func inferenceText(ew *errWriter, inf *attribution.Inference) {
	head := "inference"
	switch {
	case inf.Calls == 1:
		head += " (1 generate() call)"
	case inf.Calls > 1:
		head += fmt.Sprintf(" (%d generate() calls; the first is described)", inf.Calls)
	}
	ew.printf("\n%s:\n", head)
	row := func(name string, b int64, text string) {
		// The name and size lead the first line; the text wraps under
		// itself (a placeholder word holds their columns).
		lead := fmt.Sprintf("  %-9s %12s  ", name, units.Bytes(b))
		w := string(wrap(strings.Repeat("#", len(lead)-1)+" "+text, 98, strings.Repeat(" ", len(lead))))
		ew.printf("%s%s\n", lead, safeText(w[len(lead):]))
	}
	row("weights", inf.Weights.Bytes, "parameters at the end: the floor under every token")
	kv := fmt.Sprintf("at the end in %d blocks, %s of tensors; ", inf.KVCache.Count, units.Bytes(inf.KVRequested))
	if inf.Growing {
		kv += fmt.Sprintf("%s after the prefill, then %s more per decode step over %d steps (a torch.cat per token)",
			units.Bytes(inf.KVAfterPrefill), units.Bytes(inf.GrowthPerStep), inf.DecodeSteps)
	} else if inf.Engine != "" {
		kv += "allocated once by " + inf.Engine + "'s KV cache allocator, a pool sized by " + engineKnob(inf.Engine) + ", not by the requests"
	} else {
		kv += "allocated once, it does not grow (a static cache or a pool)"
	}
	row("kv cache", inf.KVCache.Bytes, kv)
	if inf.Trainer > 0 {
		row("trainer", inf.Trainer, "gradients and optimizer state at the end: a trainer shares this GPU with the cache (an RL job's actor beside its rollout)")
	}
	what := "activations, temporaries and logits"
	switch inf.PeakPhase {
	case "prefill":
		row("prefill", inf.Activations, what+" at the prefill's peak ("+units.Bytes(inf.Peak)+" allocated)")
		if inf.DecodePeakIndex >= 0 {
			row("decode", inf.DecodeActivations, "activations and temporaries at the decode steps' peak ("+units.Bytes(inf.DecodePeak)+" allocated)")
		}
	case "generate":
		row("peak", inf.Activations, what+" at generate()'s peak ("+units.Bytes(inf.Peak)+
			" allocated); the prefill is not told apart from the decode steps: the cache does not grow and one forward was seen")
	default:
		row("peak", inf.Activations, what+" at the peak ("+units.Bytes(inf.Peak)+" allocated)")
	}
}
