package serve

import (
	"net/http"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/report"
)

// Compare is /api/compare?a=&b=: the diff at the two views' peaks by
// site, category and phase, the document `memscope diff --json` writes
// for a device pair (report.DeviceDiffJSON, docs/json.md; attribution.
// CompareDevices), each list cut to its first maxCompareRows rows, and
// the two views on one axis aligned by step and phase.
type Compare struct {
	SourceA string                `json:"source_a"`
	SourceB string                `json:"source_b"`
	Diff    report.DeviceDiffJSON `json:"diff"`
	// Aligned holds one slot per (step, phase) of either run, in A's order
	// then B's extra ones: each run's allocated bytes on entry, at the
	// phase's peak and on exit (null where the run has no such phase).
	Aligned []Slot `json:"aligned"`
	// Truncated is set when the slots were cut at maxSteps.
	Truncated bool `json:"truncated"`
}

// Slot is one step's phase in both runs.
type Slot struct {
	Step  int         `json:"step"`
	Phase string      `json:"phase"`
	A     *PhaseBytes `json:"a"`
	B     *PhaseBytes `json:"b"`
}

// PhaseBytes is allocated bytes around one phase.
type PhaseBytes struct {
	Start int64 `json:"start"`
	Peak  int64 `json:"peak"`
	End   int64 `json:"end"`
	Event int   `json:"peak_event"`
}

const maxCompareRows = 100

func (s *Server) compare(w http.ResponseWriter, r *http.Request) {
	if len(s.views) < 2 {
		writeJSON(w, r, http.StatusBadRequest, apiError{"compare needs two snapshots or devices: run memscope serve A B"})
		return
	}
	a, err := intParam(r, "a", 0, 0, int64(len(s.views)-1))
	if err == nil {
		var b int64
		if b, err = intParam(r, "b", 1, 0, int64(len(s.views)-1)); err == nil {
			va, vb := s.views[a], s.views[b]
			first, second := va, vb
			if first.id > second.id {
				first, second = second, first
			}
			first.mu.Lock()
			if second != first {
				second.mu.Lock()
			}
			res := compareViews(va, vb)
			if second != first {
				second.mu.Unlock()
			}
			first.mu.Unlock()
			writeJSON(w, r, http.StatusOK, res)
			return
		}
	}
	writeJSON(w, r, http.StatusBadRequest, apiError{err.Error()})
}

func compareViews(va, vb *view) *Compare {
	dd := attribution.CompareDevices(va.d, vb.d)
	doc := report.DeviceDiffJSONOf(&dd)
	for _, d := range []*[]attribution.Delta{&doc.Sites, &doc.Categories, &doc.Phases} {
		*d = (*d)[:min(len(*d), maxCompareRows)]
	}
	out := &Compare{SourceA: va.source, SourceB: vb.source, Diff: doc, Aligned: []Slot{}}
	type key struct {
		step  int
		phase string
	}
	at := map[key]int{}
	add := func(ph *attribution.Phase, isB bool) {
		k := key{ph.Step, ph.Name}
		i, ok := at[k]
		if !ok {
			if len(out.Aligned) == maxSteps {
				out.Truncated = true
				return
			}
			i = len(out.Aligned)
			at[k] = i
			out.Aligned = append(out.Aligned, Slot{Step: ph.Step, Phase: ph.Name})
		}
		pb := &PhaseBytes{Start: ph.Start.Allocated, Peak: ph.Peak.Allocated, End: ph.End.Allocated, Event: ph.PeakIndex}
		if isB {
			out.Aligned[i].B = pb
		} else {
			out.Aligned[i].A = pb
		}
	}
	for i := range va.d.Phases.List {
		add(&va.d.Phases.List[i], false)
	}
	for i := range vb.d.Phases.List {
		add(&vb.d.Phases.List[i], true)
	}
	return out
}
