package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/units"
)

// The measured side of 'memscope budget': torch's per-phase peaks from a
// capture's truth.json, and the snapshot's phases with what was live at
// each peak, charged to the budget's terms.

// truthFile is the part of a truth.json (schema memscope-truth/v1, written
// by capture/harness.py) the budget reads: the model shape the harness ran,
// the device, and the per-phase peaks torch measured.
type truthFile struct {
	DeviceName  string `json:"device_name"`
	DeviceTotal int64  `json:"device_total"`
	Args        struct {
		Vocab, Hidden, Intermediate, Layers, Heads, Seq, Batch int64
		KVHeads                                                int64 `json:"kv_heads"`
		Checkpointing                                          *int
	} `json:"args"`
	Phases []struct {
		Step          int    `json:"step"`
		Phase         string `json:"phase"`
		PeakAllocated int64  `json:"peak_allocated"`
		PeakRequested int64  `json:"peak_requested"`
	} `json:"phases"`
}

func readTruthFile(path string) (*truthFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t truthFile
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &t, nil
}

// steadyPhase reports whether a phase of step counts as measured: steady
// steps only, not step 0 (the optimizer creates its state lazily there),
// unless step 0 is all there is (lastStep is 0); never the setup outside
// steps (step -1).
func steadyPhase(step, lastStep int) bool { return step >= 1 || lastStep == 0 && step == 0 }

// measure reads the measured phase peaks: from the snapshot (peaks, and what
// was live at each by category and term) and from truth.json (torch's own
// peak counters, which take precedence for the peak numbers).
func (o *budgetOptions) measure(cc *cmdContext, p *budget.Prediction, tr *truthFile) (*measuredDoc, []string, error) {
	md := &measuredDoc{Sources: []string{}}
	var notes []string
	byPhase := map[string]*budget.Measured{}
	var order []string
	get := func(name string) *budget.Measured {
		if m := byPhase[name]; m != nil {
			return m
		}
		byPhase[name] = &budget.Measured{Phase: name}
		order = append(order, name)
		return byPhase[name]
	}
	if o.snapshot != "" {
		d, err := o.snapshotDevice(cc)
		if err != nil {
			return nil, nil, err
		}
		md.Sources = append(md.Sources, o.snapshot)
		if d.Phases.Source == "none" || len(d.Phases.Steps) == 0 {
			notes = append(notes, o.snapshot+": no training phases found; nothing to compare")
		}
		last := -1
		for _, st := range d.Phases.Steps {
			last = max(last, st.Step)
		}
		// The highest peak of each phase name (the first to reach it),
		// then what was live there: one moment per name, not one per step
		// of a rising staircase.
		best := map[string]int{}
		for i, ph := range d.Phases.List {
			if !steadyPhase(ph.Step, last) || ph.Last < ph.First {
				continue
			}
			get(ph.Name)
			if j, ok := best[ph.Name]; !ok || ph.Peak.Allocated > d.Phases.List[j].Peak.Allocated {
				best[ph.Name] = i
			}
		}
		for _, name := range order {
			ph := d.Phases.List[best[name]]
			m := get(ph.Name)
			if ph.Peak.Allocated <= m.Peak {
				continue
			}
			mo := d.At(ph.PeakIndex, fmt.Sprintf("step %d %s", ph.Step, ph.Name))
			*m = budget.Measured{Phase: ph.Name, Step: ph.Step, Peak: mo.Allocated, Requested: mo.Requested,
				ByCategory: map[string]int64{}, HasTerms: true}
			for c := range attribution.NumCategories {
				if mo.Categories[c].Count > 0 {
					m.ByCategory[c.String()] = mo.Categories[c].Bytes
				}
			}
			for i, b := range mo.Live {
				if !b.PendingFree {
					m.ByTerm[p.Classify(ph.Name, mo.Category[i].String(), b.Requested)] += b.Size
				}
			}
		}
		if last == 0 {
			notes = append(notes, o.snapshot+": only step 0 was recorded; the optimizer creates its state there, so it is not a steady step")
		}
	}
	if tr != nil {
		md.Sources = append(md.Sources, o.truth)
		last := -1
		for _, row := range tr.Phases {
			last = max(last, row.Step)
		}
		for _, row := range tr.Phases {
			if !steadyPhase(row.Step, last) {
				continue
			}
			m := get(row.Phase)
			if m.HasTerms && m.Step == row.Step && m.Peak != row.PeakAllocated {
				notes = append(notes, fmt.Sprintf("step %d %s: the snapshot's replay gives %s, torch %s; using torch's",
					row.Step, row.Phase, units.Bytes(m.Peak), units.Bytes(row.PeakAllocated)))
			}
			if m.HasTerms && m.Step == row.Step || !m.HasTerms && row.PeakAllocated > m.Peak {
				m.Step, m.Peak, m.Requested = row.Step, row.PeakAllocated, row.PeakRequested
			}
		}
	}
	var ms []budget.Measured
	for _, name := range order {
		ms = append(ms, *byPhase[name])
	}
	md.Phases = budget.Compare(p, ms)
	within := 0
	for _, c := range md.Phases {
		if c.Within {
			within++
		}
	}
	switch {
	case len(md.Phases) == 0:
		notes = append(notes, "no measured phase matches a predicted one (forward, backward, optimizer)")
	case within == 0:
		notes = append(notes, "every phase is off by more than 15%: check that the capture ran this model and shape")
	}
	return md, notes, nil
}

// snapshotDevice opens and analyses the snapshot and picks the device.
func (o *budgetOptions) snapshotDevice(cc *cmdContext) (*attribution.Device, error) {
	s, err := openSnapshot(cc, o.snapshot)
	if err != nil {
		return nil, err
	}
	an := attribution.Analyze(s, attribution.Options{Device: o.device})
	for _, d := range an.Devices {
		if o.device >= 0 || len(d.Timeline.Events) > 0 {
			return d, nil
		}
	}
	return nil, badInput(errors.New(o.snapshot + ": no device has recorded events"))
}
