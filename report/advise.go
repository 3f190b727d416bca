package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report/jsondoc"
	"github.com/memscope/memscope/snapshot"
)

// Advice is 'memscope advise' of one file: per device, what holds the
// allocated peak by term and the fixes, cheapest first.
type Advice struct {
	Source  string
	Devices []AdviceDevice
}

// AdviceDevice is one device's advice (attribution.Analysis.Advise).
type AdviceDevice = attribution.DeviceAdvice

func (*Advice) Kind() string { return "advise" }

// adviseTermNames are the terms as text and JSON name them.
var adviseTermNames = [attribution.NumAdviseTerms]string{"model states", "saved activations", "logits and loss",
	"temporaries", "leak", "other", "fragmentation"}

func adviseTermName(t attribution.AdviseTerm) string {
	if t >= 0 && t < attribution.NumAdviseTerms {
		return adviseTermNames[t]
	}
	return fmt.Sprintf("term %d", int(t))
}

// adviseTermNotes say what each term holds, in text.
var adviseTermNotes = [attribution.NumAdviseTerms]string{
	"parameters, gradients, optimizer state",
	"born in forward, kept for backward",
	"vocabulary-sized: the logits, their fp32 copies and gradients",
	"born and freed inside one phase",
	"kept from earlier steps to the end while the floor climbs",
	"the batch, workspaces, caches",
	"reserved but not allocated: on top of the peak, not in it",
}

// adviceFixWords words a fix from the catalog budget shares; a fused
// optimizer is named by the recorded optimizer's class, with foreach=False
// beside it.
func adviceFixWords(f attribution.AdviceFix) budgetFixWords {
	w := budgetFixText(budget.Fix{Kind: f.Kind, Shape: budget.Shape{ShardRanks: f.Ranks, LossChunks: f.Chunks}})
	if f.Kind == budget.FixFusedAdamW {
		class := cmpStr(f.Optimizer, "AdamW")
		w.name = fmt.Sprintf("a fused optimizer step (torch.optim.%s(..., fused=True)), or foreach=False", class)
		w.cost = "none with fused=True: its step makes no temporaries; foreach=False makes one parameter's at a time, in a slower loop"
	}
	return w
}

func (r *Advice) writeText(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n", r.Source)
	for _, dv := range r.Devices {
		a := dv.Advice
		ew.printf("\ndevice %d: allocated peak %s", dv.Device, units.Bytes(a.Peak))
		if a.Step >= 0 {
			ew.printf(" in step %d %s", a.Step, a.Phase)
		}
		ew.printf(" (%s); reserved %s\n", eventWhere(dv.Timeline, a.PeakIndex), units.Bytes(a.Reserved))
		if a.Fit != nil {
			ew.printf("on %s (%s), allocated bytes alone (the allocator reserves more; the CUDA context is outside it): %s\n",
				fitName(a.Fit), units.Bytes(a.Fit.Memory), budgetFitText(a.Fit))
		}
		settingsAdviceText(ew, a.Settings)
		noHistory := dv.Timeline != nil && (len(dv.Timeline.Events) == 0 || dv.Timeline.OneEntry)
		const record = "no allocation history was recorded, so no step is known: advise looks at a training step's peak or generate()'s; record one with torch.cuda.memory._record_memory_history(max_entries=100000)\n"
		if !a.Training {
			if ia := a.Inference; ia != nil {
				inferenceAdviceText(ew, ia, a.Fit != nil)
				continue
			}
			if noHistory {
				ew.printf(record)
				continue
			}
			ew.printf("no backward and no KV cache recognised in this recording: advise covers training peaks and generate()-style inference\n")
			continue
		}
		if a.Step < 0 {
			if noHistory {
				ew.printf(record)
				continue
			}
			ew.printf("the peak falls outside the recorded steps (setup, or after the last step): advise looks at a step's peak\n")
			continue
		}
		o := a.OOM
		if o != nil {
			ew.printf("%s\n", wrap(adviceOOMText(dv.Timeline, o), 100, "  "))
			ew.printf("\nwhat holds the failed step's need (live at the OOM, and what it still had to allocate):\n")
		} else {
			ew.printf("\nwhat holds the peak:\n")
		}
		tw := newTable(w, 0)
		for k := range attribution.NumAdviseTerms {
			h := a.Holders[k]
			if h.Bytes == 0 {
				continue
			}
			share, blocks := "", ""
			if k != attribution.TermFragmentation {
				of := a.Peak
				if o != nil {
					of = o.Need
				}
				share = fmt.Sprintf("%.1f%%", 100*float64(h.Bytes)/float64(max(of, 1)))
				blocks = nouns(h.Count, "block")
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", adviseTermNames[k], units.Bytes(h.Bytes), share, blocks, adviseTermNotes[k])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if ew.err != nil {
			return ew.err
		}
		if a.LogitsBytes > 0 && a.Holders[attribution.TermLogits].Bytes > 0 {
			ew.printf("the loss's largest tensor: %s (%s B)\n", units.Bytes(a.LogitsBytes), commas(a.LogitsBytes))
		}
		if a.Frag != nil && a.Holders[attribution.TermFragmentation].Bytes > 0 {
			ew.printf("the free memory in reserved segments at the peak: %s\n", fragVerdictText(*a.Frag))
		}
		if len(a.Fixes) == 0 {
			ew.printf("\nno fix found that lowers the peak by 1%% or more\n")
			continue
		}
		// ref is the peak the fixes lower: the recorded one, or the
		// failed step's need.
		ref, refIndex, moment, peak := a.Peak, a.PeakIndex, "the peak", "new peak"
		if o != nil {
			ref, refIndex, moment, peak = o.Need, o.NeedIndex, "the failed moment", "step peak"
			ew.printf("\nfixes for the failed step, those that fit under %s first, then cheapest first (bytes from this snapshot's blocks and what the step still had to allocate; each peak is the step's, at least):\n",
				limitName(o.Limit))
		} else {
			ew.printf("\nfixes, cheapest first (bytes from this snapshot's blocks; new peak over the whole step):\n")
		}
		for i, f := range a.Fixes {
			fw := adviceFixWords(f)
			ew.printf("  %d. %s\n     targets %s: removes %s at %s (%s) → %s %s (%s)",
				i+1, fw.name, adviseTermName(f.Term), units.Bytes(f.Removes), moment, nouns(f.Blocks, "block"),
				peak, units.Bytes(f.NewPeak), signedPercent(f.NewPeak-ref, ref))
			if f.NewPeakIndex != refIndex {
				where := eventWhere(dv.Timeline, f.NewPeakIndex)
				if f.NewPeakIndex >= 0 {
					where = "at " + where
				}
				ew.printf(", now %s", where)
			}
			switch {
			case f.Limit != nil:
				ew.printf("; %s", limitFitText(o.Limit, *f.Limit))
			case f.Fit != nil:
				ew.printf("; %s", fitVerdictText(f.Fit.Verdict))
			}
			ew.printf("\n     cost: %s\n", fw.cost)
		}
		switch c := a.Combination; {
		case c != nil:
			ew.printf("\n%s\n", adviceCombinationText(a, c))
		case o != nil && !anyFits(a.Fixes):
			ew.printf("\nno fix alone fits under %s, and fewer than two combine\n", limitName(o.Limit))
		}
	}
	return ew.err
}

// adviceCombinationText words a run of fixes: "no single fix fits H100
// (80 GiB): together, 1 + 3 + 5 → new peak 61.2 GiB (−38.0%), fits".
func adviceCombinationText(a *attribution.Advice, c *attribution.AdviceCombination) string {
	nums := make([]string, len(c.Fixes))
	for i, f := range c.Fixes {
		nums[i] = fmt.Sprint(f + 1)
	}
	if o := a.OOM; o != nil && c.Limit != nil {
		together := "together"
		if !c.Limit.Fits() {
			together = "not even all together"
		}
		return fmt.Sprintf("no single fix fits under %s: %s, %s → step peak %s (%s), %s",
			limitName(o.Limit), together, strings.Join(nums, " + "), units.Bytes(c.NewPeak),
			signedPercent(c.NewPeak-o.Need, o.Need), limitFitText(o.Limit, *c.Limit))
	}
	together := "together"
	if c.Fit.Verdict != budget.Fits {
		together = "not even all together"
	}
	return fmt.Sprintf("no single fix fits %s (%s): %s, %s → new peak %s (%s), %s",
		fitName(&c.Fit), units.Bytes(c.Fit.Memory), together, strings.Join(nums, " + "), units.Bytes(c.NewPeak),
		signedPercent(c.NewPeak-a.Peak, a.Peak), fitVerdictText(c.Fit.Verdict))
}

// anyFits reports whether a fix alone fits an OOM'd step's limit.
func anyFits(fixes []attribution.AdviceFix) bool {
	for _, f := range fixes {
		if f.Limit != nil && f.Limit.Fits() {
			return true
		}
	}
	return false
}

// adviceOOMText says which step ran out of memory, the limit it had and
// what it needed: "out of memory in step 0 optimizer (event 198), under a
// per-process cap between …: the step needed 2.07 GiB allocated at least
// (…); does not fit: at least 503 MiB over".
func adviceOOMText(t *snapshot.Timeline, o *attribution.AdviceOOM) string {
	s := fmt.Sprintf("out of memory in step %d %s (%s), under %s: the step needed %s allocated at least: %s live at the OOM + %s more",
		o.Step, o.Phase, eventWhere(t, o.Index), limitText(o.Limit), units.Bytes(o.Need), units.Bytes(o.Live), units.Bytes(o.More))
	switch {
	case o.Needs != nil:
		s += fmt.Sprintf(" (the rest of %s's two moments per parameter, the %s request among them)", cmpStr(o.Needs.Optimizer, "the optimizer"), units.Bytes(o.Request))
	default:
		s += " (the failed request; what the step would have allocated after it was not recorded, so this and each peak below are what the failed moment needed)"
	}
	if o.Need > o.Live+o.More {
		s += fmt.Sprintf(", its recorded events reaching %s", units.Bytes(o.Need))
	}
	switch o.Fit.Verdict {
	case attribution.LimitDoesNotFit:
		s += "; " + limitFitText(o.Limit, o.Fit)
	case attribution.LimitUnsure:
		s += fmt.Sprintf("; whether these allocated bytes alone are above the cap, its bounds (%s and %s) do not tell", units.Bytes(o.Limit.Low), units.Bytes(o.Limit.High))
	default:
		// It did not fit: the limit bounds reserved memory, and what was
		// reserved but free could not serve the request.
		s += fmt.Sprintf("; it ran out though these allocated bytes alone are not above %s: the limit bounds reserved memory (%s at the OOM, %s of it free in pieces the request could not use; 'memscope oom' says whether a setting helps)",
			limitName(o.Limit), units.Bytes(o.Reserved), units.Bytes(max(o.Reserved-o.Live, 0)))
	}
	if o.NoBackward {
		s += "; no backward was recorded: the step ran out of memory in its forward, so the forward's terms (saved activations, the loss, the batch) are the ones to shrink (under torch.no_grad nothing is saved, and checkpointing does not apply)"
	}
	return s
}

// limitText says the limit an OOM'd step had, with where it comes from.
func limitText(l attribution.Limit) string {
	switch l.Source {
	case attribution.LimitGiven:
		if l.Name != "" {
			return fmt.Sprintf("%s (%s, as given)", l.Name, units.Bytes(l.Low))
		}
		return fmt.Sprintf("a limit of %s (as given)", units.Bytes(l.Low))
	case attribution.LimitCap:
		return fmt.Sprintf("a per-process cap between %s (the most reserved) and %s (reserved at the OOM plus the segment refused)",
			units.Bytes(l.Low), units.Bytes(l.High))
	}
	return fmt.Sprintf("the device's %s (reserved at the OOM plus what the driver had free)", units.Bytes(l.Low))
}

// limitName is a short name of the limit: "the cap", "the device", "H200".
func limitName(l attribution.Limit) string {
	switch {
	case l.Source == attribution.LimitCap:
		return "the cap"
	case l.Source == attribution.LimitGiven && l.Name != "":
		return l.Name
	case l.Source == attribution.LimitGiven:
		return "the given " + units.Bytes(l.Low)
	}
	return "the device"
}

// limitFitText says a peak against an OOM'd step's limit: "fits under the
// cap, 244.00 MiB (15.7%) of it left".
func limitFitText(l attribution.Limit, f attribution.LimitFit) string {
	name := limitName(l)
	switch f.Verdict {
	case attribution.LimitFits:
		return fmt.Sprintf("fits under %s, %s (%.1f%%) of it left", name, units.Bytes(f.Headroom), 100*float64(f.Headroom)/float64(max(l.Low, 1)))
	case attribution.LimitTight:
		return fmt.Sprintf("tight: fits under %s with %s left, under %.0f%% of it, and the allocator reserves more than it allocates",
			name, units.Bytes(f.Headroom), 100*budget.MinHeadroom)
	case attribution.LimitUnsure:
		return fmt.Sprintf("cannot tell: %s is above %s and below %s, the bounds the OOM gives %s; pass it as --device-memory to decide",
			units.Bytes(f.Peak), units.Bytes(l.Low), units.Bytes(l.High), name)
	case attribution.LimitDoesNotFit:
		if l.High > l.Low {
			return fmt.Sprintf("does not fit: at least %s over %s", units.Bytes(f.Over), name)
		}
		return fmt.Sprintf("does not fit: %s over %s", units.Bytes(f.Over), name)
	}
	return fmt.Sprintf("limit verdict %d", int(f.Verdict))
}

// limitVerdictWord is a limit verdict as JSON names it.
func limitVerdictWord(v attribution.LimitVerdict) string {
	switch v {
	case attribution.LimitFits:
		return "fits"
	case attribution.LimitTight:
		return "tight"
	case attribution.LimitUnsure:
		return "cannot tell"
	case attribution.LimitDoesNotFit:
		return "does not fit"
	}
	return fmt.Sprintf("verdict %d", int(v))
}

// limitSourceWord is where a limit comes from, as JSON names it.
func limitSourceWord(s attribution.LimitSource) string {
	switch s {
	case attribution.LimitGiven:
		return "given"
	case attribution.LimitCap:
		return "cap"
	case attribution.LimitDevice:
		return "device"
	}
	return fmt.Sprintf("source %d", int(s))
}

// fitName is the fit's device name, or "the device" for a size.
func fitName(f *budget.Fit) string {
	if f.Device == "" {
		return "the device"
	}
	return f.Device
}

// signedPercent is d as a signed percentage of of: "−66.4%".
func signedPercent(d, of int64) string {
	if of == 0 {
		return "n/a"
	}
	p := 100 * float64(d) / float64(of)
	if p < 0 {
		return fmt.Sprintf("−%.1f%%", -p)
	}
	return fmt.Sprintf("+%.1f%%", p)
}

// AdviceFileJSON is the entry of one file in the advise document.
type AdviceFileJSON struct {
	Source  string       `json:"source"`
	Devices []AdviceJSON `json:"devices"`
}

// AdviceJSON is one device's advice.
type AdviceJSON struct {
	Device   int  `json:"device"`
	Training bool `json:"training"` // false: no backward; advise covers training peaks
	// Peak is allocated bytes at the peak, after event EventIndex.
	Peak        int64              `json:"peak"`
	Reserved    int64              `json:"reserved"`
	EventIndex  int                `json:"event_index"`
	Step        int                `json:"step"`
	Phase       string             `json:"phase"`
	Holders     []AdviceHolderJSON `json:"holders"`
	LogitsBytes int64              `json:"logits_bytes"`
	Layers      int                `json:"layers"`
	Fixes       []AdviceFixJSON    `json:"fixes"`
	Fit         *BudgetFitJSON     `json:"fit,omitempty"`
	// Combination is, with --device-memory or on an OOM'd step, when no
	// fix alone fits, the cheapest run of fixes that does (absent
	// otherwise).
	Combination *AdviceCombinationJSON `json:"combination,omitempty"`
	// OOM is, on a device that ran out of memory inside a step, that step
	// held against its limit (absent otherwise).
	OOM *AdviceOOMJSON `json:"oom,omitempty"`
	// FragVerdict is the verdict on the free memory at the peak, as frag
	// words it ("" when there is none).
	FragVerdict string `json:"frag_verdict"`
	// Inference, for a recording with no backward whose KV cache was
	// recognised: summary's inference object, and with --device-memory the
	// headroom at the peak and the decode steps of cache growth it holds.
	Inference *AdviceInferenceJSON `json:"inference,omitempty"`
	// Settings: the allocator settings the model says lower the reserved
	// peak over the same requests, largest saving first.
	Settings []AdviceSettingJSON `json:"settings"`
}

// AdviceSettingJSON is one simulated allocator setting.
type AdviceSettingJSON struct {
	Conf         string `json:"conf"`
	PeakReserved int64  `json:"peak_reserved"`
	Recorded     int64  `json:"recorded_peak_reserved"`
	OOM          bool   `json:"oom"`
	// Low and High bound peak_reserved for a late start re-made under the
	// setting, Unknown its cached bytes (attribution.SettingAdvice); 0
	// otherwise.
	Low     int64 `json:"peak_reserved_low"`
	High    int64 `json:"peak_reserved_high"`
	Unknown int64 `json:"start_unknown_bytes"`
}

// AdviceInferenceJSON is an inference run's memory against the device.
type AdviceInferenceJSON struct {
	InferenceJSON
	Headroom  int64 `json:"headroom"`
	MoreSteps int64 `json:"more_decode_steps"`
}

// AdviceCombinationJSON is a run of fixes applied together
// (attribution.AdviceCombination).
type AdviceCombinationJSON struct {
	Fixes             []int    `json:"fixes"` // positions in the device's fixes, from 0
	Names             []string `json:"names"`
	NewPeak           int64    `json:"new_peak"`
	NewPeakEventIndex int      `json:"new_peak_event_index"`
	// Fit holds the run against --device-memory; on an OOM'd step Limit
	// holds it against the step's limit instead.
	Fit   *BudgetFitJSON `json:"fit,omitempty"`
	Limit *LimitFitJSON  `json:"limit,omitempty"`
}

// AdviceOOMJSON is an OOM'd step held against its limit
// (attribution.AdviceOOM).
type AdviceOOMJSON struct {
	EventIndex int    `json:"event_index"`
	Step       int    `json:"step"`
	Phase      string `json:"phase"`
	Request    int64  `json:"request"`
	Live       int64  `json:"live"`
	More       int64  `json:"more"`
	// Optimizer names the optimizer whose state the step was making when
	// More is the rest of it ("" when More is the failed request alone).
	Optimizer      string       `json:"optimizer"`
	Need           int64        `json:"need"`
	NeedEventIndex int          `json:"need_event_index"`
	Partial        bool         `json:"partial"`
	NoBackward     bool         `json:"no_backward"`
	Limit          LimitJSON    `json:"limit"`
	Fit            LimitFitJSON `json:"fit"`
}

// LimitJSON is the memory an OOM'd step had (attribution.Limit).
type LimitJSON struct {
	Low    int64  `json:"low"`
	High   int64  `json:"high"`
	Source string `json:"source"` // given, cap, device
	Device string `json:"device"` // the GPU's name with source given, "" otherwise
}

// LimitFitJSON is jsondoc.LimitFitJSON.
type LimitFitJSON = jsondoc.LimitFitJSON

func limitFitJSON(f *attribution.LimitFit) *LimitFitJSON {
	if f == nil {
		return nil
	}
	return &LimitFitJSON{Peak: f.Peak, Verdict: limitVerdictWord(f.Verdict), Headroom: f.Headroom, Over: f.Over}
}

// AdviceHolderJSON is one term at the peak.
type AdviceHolderJSON struct {
	Term   string `json:"term"`
	Bytes  int64  `json:"bytes"`
	Blocks int    `json:"blocks"`
}

// AdviceFixJSON is jsondoc.AdviceFixJSON.
type AdviceFixJSON = jsondoc.AdviceFixJSON

func (r *Advice) fileEntry() any {
	f := AdviceFileJSON{Source: r.Source, Devices: []AdviceJSON{}}
	for _, dv := range r.Devices {
		a := dv.Advice
		j := AdviceJSON{Device: dv.Device, Training: a.Training, Peak: a.Peak, Reserved: a.Reserved, EventIndex: a.PeakIndex,
			Step: a.Step, Phase: a.Phase, Holders: []AdviceHolderJSON{}, LogitsBytes: a.LogitsBytes, Layers: a.Layers,
			Fixes: []AdviceFixJSON{}, Fit: budgetFitJSON(a.Fit)}
		if a.Frag != nil {
			j.FragVerdict = fragVerdictText(*a.Frag)
		}
		if a.Training && a.Step >= 0 {
			for k := range attribution.NumAdviseTerms {
				j.Holders = append(j.Holders, AdviceHolderJSON{Term: adviseTermNames[k], Bytes: a.Holders[k].Bytes, Blocks: a.Holders[k].Count})
			}
		}
		j.Fixes = adviceFixesJSON(a.Fixes)
		j.Settings = SettingsJSONOf(a.Settings)
		if ia := a.Inference; ia != nil {
			j.Inference = &AdviceInferenceJSON{*inferenceJSON(ia.Inference), ia.Headroom, ia.MoreSteps}
		}
		if o := a.OOM; o != nil {
			oj := &AdviceOOMJSON{EventIndex: o.Index, Step: o.Step, Phase: o.Phase, Request: o.Request, Live: o.Live, More: o.More,
				Need: o.Need, NeedEventIndex: o.NeedIndex, Partial: o.Partial, NoBackward: o.NoBackward,
				Limit: LimitJSON{o.Limit.Low, o.Limit.High, limitSourceWord(o.Limit.Source), o.Limit.Name}, Fit: *limitFitJSON(&o.Fit)}
			if o.Needs != nil {
				oj.Optimizer = o.Needs.Optimizer
			}
			j.OOM = oj
		}
		if c := a.Combination; c != nil {
			cj := &AdviceCombinationJSON{Fixes: append([]int{}, c.Fixes...), Names: []string{}, NewPeak: c.NewPeak,
				NewPeakEventIndex: c.NewPeakIndex, Limit: limitFitJSON(c.Limit)}
			if c.Limit == nil {
				cj.Fit = budgetFitJSON(&c.Fit)
			}
			for _, i := range c.Fixes {
				cj.Names = append(cj.Names, adviceFixWords(a.Fixes[i]).name)
			}
			j.Combination = cj
		}
		f.Devices = append(f.Devices, j)
	}
	return f
}

// adviceFixesJSON converts fixes, never null.
func adviceFixesJSON(fixes []attribution.AdviceFix) []AdviceFixJSON {
	out := []AdviceFixJSON{}
	for _, x := range fixes {
		fw := adviceFixWords(x)
		out = append(out, AdviceFixJSON{Name: fw.name, Term: adviseTermName(x.Term), Cost: fw.cost, CostRank: x.CostRank,
			Removes: x.Removes, Blocks: x.Blocks, NewPeak: x.NewPeak, NewPeakEventIndex: x.NewPeakIndex,
			Ranks: x.Ranks, Chunks: x.Chunks, Fit: budgetFitJSON(x.Fit), Limit: limitFitJSON(x.Limit)})
	}
	return out
}

// inferenceAdviceText writes where an inference run's memory is and, with a
// device size, the headroom in decode steps.
func inferenceAdviceText(ew *errWriter, ia *attribution.InferenceAdvice, device bool) {
	ew.printf("\ninference: weights %s, KV cache %s at the end", units.Bytes(ia.Weights.Bytes), units.Bytes(ia.KVCache.Bytes))
	if ia.Growing && ia.DecodeSteps > 0 {
		ew.printf(" (growing %s per decode step)", units.Bytes(ia.GrowthPerStep))
	} else {
		ew.printf(" (allocated once)")
	}
	ew.printf(", %s of activations at the %s peak\n", units.Bytes(ia.Activations), cmpStr(ia.PeakPhase, "device's"))
	if ia.Engine != "" {
		share := ""
		if ia.Peak > 0 {
			share = fmt.Sprintf(" (%.1f%% of the allocated peak)", 100*float64(ia.KVCache.Bytes)/float64(ia.Peak))
		}
		ew.printf("%s\n", wrap(fmt.Sprintf("the KV cache%s is %s's pool, allocated once at start-up and sized by %s: the requests do not grow it, so a smaller footprint is that setting lowered (the pool then holds fewer tokens at once: fewer concurrent sequences or a shorter context)",
			share, ia.Engine, engineKnob(ia.Engine)), 100, "  "))
	}
	if ia.Trainer > 0 {
		ew.printf("%s\n", wrap(fmt.Sprintf("gradients and optimizer state (%s) share this GPU with the cache, a trainer beside the engine (an RL job's actor and rollout): releasing the cache and weights between rollouts (vLLM's sleep mode, LLM.sleep(); verl's free_cache_engine) gives the training step their bytes", units.Bytes(ia.Trainer)), 100, "  "))
	}
	if !device {
		return
	}
	switch {
	case ia.Headroom < 0:
		ew.printf("the peak does not fit: %s short\n", units.Bytes(-ia.Headroom))
	case ia.MoreSteps > 0:
		ew.printf("headroom at the peak: %s, about %s more decode steps of this cache's growth (a longer output, or more sequences at once)\n",
			units.Bytes(ia.Headroom), commas(ia.MoreSteps))
	default:
		ew.printf("headroom at the peak: %s\n", units.Bytes(ia.Headroom))
	}
}

// settingsAdviceText writes the allocator settings the model says lower
// the reserved peak.
func settingsAdviceText(ew *errWriter, sets []attribution.SettingAdvice) {
	if len(sets) == 0 {
		return
	}
	ew.printf("allocator settings, the same requests simulated (memscope whatif), reserved peak %s as recorded:\n", units.Bytes(sets[0].Recorded))
	for _, s := range sets {
		if s.OOM {
			ew.printf("  %s: runs out of memory under the same capacity\n", s.Conf)
			continue
		}
		if s.High > 0 {
			ew.printf("  %s: reserved peak %s (%s; between %s and %s: the %s cached when the recording began has a history the trace does not hold)\n",
				s.Conf, units.Bytes(s.PeakReserved), signedPercent(s.PeakReserved-s.Recorded, s.Recorded), units.Bytes(s.Low), units.Bytes(s.High), units.Bytes(s.Unknown))
			continue
		}
		ew.printf("  %s: reserved peak %s (%s)\n", s.Conf, units.Bytes(s.PeakReserved), signedPercent(s.PeakReserved-s.Recorded, s.Recorded))
	}
}

// settingsJSON converts simulated settings, never null.
// SettingsJSONOf is the allocator settings the model says lower the
// reserved peak, as advise's and frag --simulate's documents write them.
func SettingsJSONOf(sets []attribution.SettingAdvice) []AdviceSettingJSON {
	out := []AdviceSettingJSON{}
	for _, x := range sets {
		out = append(out, AdviceSettingJSON{x.Conf, x.PeakReserved, x.Recorded, x.OOM, x.Low, x.High, x.Unknown})
	}
	return out
}
