package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// Advice is 'memscope advise' of one file: per device, what holds the
// allocated peak by term and the fixes, cheapest first.
type Advice struct {
	Source  string
	Devices []AdviceDevice
}

// AdviceDevice is one device's advice.
type AdviceDevice struct {
	Device int
	Advice *attribution.Advice
	// Timeline is the device's replay, for where the peak lies in its
	// history (nil: the peak's event index is printed as it is).
	Timeline *snapshot.Timeline
}

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

// adviceFixWords words a fix from the catalog budget shares.
func adviceFixWords(f attribution.AdviceFix) budgetFixWords {
	return budgetFixText(budget.Fix{Kind: f.Kind, Shape: budget.Shape{ShardRanks: f.Ranks, LossChunks: f.Chunks}})
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
		ew.printf("\nwhat holds the peak:\n")
		tw := newTable(w, 0)
		for k := range attribution.NumAdviseTerms {
			h := a.Holders[k]
			if h.Bytes == 0 {
				continue
			}
			share, blocks := "", ""
			if k != attribution.TermFragmentation {
				share = fmt.Sprintf("%.1f%%", 100*float64(h.Bytes)/float64(max(a.Peak, 1)))
				blocks = fmt.Sprintf("%d block%s", h.Count, plural(h.Count))
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
		ew.printf("\nfixes, cheapest first (bytes from this snapshot's blocks; new peak over the whole step):\n")
		for i, f := range a.Fixes {
			fw := adviceFixWords(f)
			ew.printf("  %d. %s\n     targets %s: removes %s at the peak (%s) → new peak %s (%s)",
				i+1, fw.name, adviseTermName(f.Term), units.Bytes(f.Removes), fmt.Sprintf("%d block%s", f.Blocks, plural(f.Blocks)), units.Bytes(f.NewPeak),
				signedPercent(f.NewPeak-a.Peak, a.Peak))
			if f.NewPeakIndex != a.PeakIndex {
				where := eventWhere(dv.Timeline, f.NewPeakIndex)
				if f.NewPeakIndex >= 0 {
					where = "at " + where
				}
				ew.printf(", now %s", where)
			}
			if f.Fit != nil {
				ew.printf("; %s", fitVerdictText(f.Fit.Verdict))
			}
			ew.printf("\n     cost: %s\n", fw.cost)
		}
		if c := a.Combination; c != nil {
			ew.printf("\n%s\n", adviceCombinationText(a, c))
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
	together := "together"
	if c.Fit.Verdict != budget.Fits {
		together = "not even all together"
	}
	return fmt.Sprintf("no single fix fits %s (%s): %s, %s → new peak %s (%s), %s",
		fitName(&c.Fit), units.Bytes(c.Fit.Memory), together, strings.Join(nums, " + "), units.Bytes(c.NewPeak),
		signedPercent(c.NewPeak-a.Peak, a.Peak), fitVerdictText(c.Fit.Verdict))
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
	// Combination is, with --device-memory, when no fix alone fits, the
	// cheapest run of fixes that does (absent otherwise).
	Combination *AdviceCombinationJSON `json:"combination,omitempty"`
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
	Fixes             []int         `json:"fixes"` // positions in the device's fixes, from 0
	Names             []string      `json:"names"`
	NewPeak           int64         `json:"new_peak"`
	NewPeakEventIndex int           `json:"new_peak_event_index"`
	Fit               BudgetFitJSON `json:"fit"`
}

// AdviceHolderJSON is one term at the peak.
type AdviceHolderJSON struct {
	Term   string `json:"term"`
	Bytes  int64  `json:"bytes"`
	Blocks int    `json:"blocks"`
}

// AdviceFixJSON is one fix, worded from the catalog budget shares.
type AdviceFixJSON struct {
	Name              string         `json:"name"`
	Term              string         `json:"term"`
	Cost              string         `json:"cost"`
	CostRank          int            `json:"cost_rank"`
	Removes           int64          `json:"removes"`
	Blocks            int            `json:"blocks"`
	NewPeak           int64          `json:"new_peak"`
	NewPeakEventIndex int            `json:"new_peak_event_index"`
	Ranks             int64          `json:"ranks,omitempty"`
	Chunks            int64          `json:"chunks,omitempty"`
	Fit               *BudgetFitJSON `json:"fit,omitempty"`
}

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
		j.Settings = settingsJSON(a.Settings)
		if ia := a.Inference; ia != nil {
			j.Inference = &AdviceInferenceJSON{*inferenceJSON(ia.Inference), ia.Headroom, ia.MoreSteps}
		}
		if c := a.Combination; c != nil {
			cj := &AdviceCombinationJSON{Fixes: append([]int{}, c.Fixes...), Names: []string{}, NewPeak: c.NewPeak,
				NewPeakEventIndex: c.NewPeakIndex, Fit: *budgetFitJSON(&c.Fit)}
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
			Ranks: x.Ranks, Chunks: x.Chunks, Fit: budgetFitJSON(x.Fit)})
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
		ew.printf("  %s: reserved peak %s (%s)\n", s.Conf, units.Bytes(s.PeakReserved), signedPercent(s.PeakReserved-s.Recorded, s.Recorded))
	}
}

// settingsJSON converts simulated settings, never null.
func settingsJSON(sets []attribution.SettingAdvice) []AdviceSettingJSON {
	out := []AdviceSettingJSON{}
	for _, x := range sets {
		out = append(out, AdviceSettingJSON{x.Conf, x.PeakReserved, x.Recorded, x.OOM})
	}
	return out
}
