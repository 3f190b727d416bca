package serve

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/report"
)

// SitesAnswer is /api/sites: the sites at a moment, searchable, and the
// call tree of the frames that count.
type SitesAnswer struct {
	Label string            `json:"label"`
	Event int               `json:"event"`
	Total int               `json:"total"` // sites at the moment
	Match int               `json:"match"` // sites matching q
	Sites []report.SiteJSON `json:"sites"`
	Tree  *TreeNode         `json:"tree"`
}

// TreeNode is one node of the call tree (attribution.TreeNode).
type TreeNode struct {
	Name     string      `json:"name"`
	Path     string      `json:"path"`
	Kind     string      `json:"kind"`
	Bytes    int64       `json:"bytes"`
	Count    int         `json:"count"`
	Children []*TreeNode `json:"children"`
}

var treeKinds = map[attribution.TreeNodeKind]string{attribution.TreeFrame: "frame", attribution.TreeSite: "site",
	attribution.TreeSelf: "self", attribution.TreeSmaller: "smaller", attribution.TreeRoot: "root"}

func tree(n *attribution.TreeNode) *TreeNode {
	out := &TreeNode{Name: n.Name, Path: n.Path, Kind: treeKinds[n.Kind], Bytes: n.Bytes, Count: n.Count, Children: []*TreeNode{}}
	if n.Kind == attribution.TreeSmaller {
		out.Name = fmt.Sprintf("(%d smaller callees)", n.Smaller)
	}
	if n.Kind == attribution.TreeSelf {
		out.Name = "(self)"
	}
	for _, c := range n.Children {
		out.Children = append(out.Children, tree(c))
	}
	return out
}

func (s *Server) sites(v *view, r *http.Request) (any, error) {
	m, err := momentOf(v, r)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query().Get("q")
	out := &SitesAnswer{Label: m.Label, Event: m.Index, Total: len(m.Sites), Sites: v.siteRows(m.Sites, maxSites, q)}
	ql := strings.ToLower(q)
	for _, s := range m.Sites {
		if strings.Contains(strings.ToLower(s.Label), ql) {
			out.Match++
		}
	}
	out.Tree = tree(v.d.UserTree(m, treeMin, treeNodes))
	return out, nil
}

// StepRow is one step of /api/steps.
type StepRow struct {
	Step       int     `json:"step"`
	FloorStart int64   `json:"floor_start"`
	FloorEnd   int64   `json:"floor_end"`
	Peak       int64   `json:"peak"`
	PeakPhase  string  `json:"peak_phase"`
	Phases     []Phase `json:"phases"`
}

// Steps is /api/steps?offset=&limit= (or ?step=N&limit=: the page, from
// a multiple of limit, showing step N): one page of the steps, in order.
type Steps struct {
	From  string `json:"from"` // where the boundaries came from
	Total int    `json:"total"`
	// Offset is the index of the page's first step among all Total, Limit
	// the page's size asked for; Steps holds at most Limit of them.
	Offset    int       `json:"offset"`
	Limit     int       `json:"limit"`
	Steps     []StepRow `json:"steps"`
	PeakPhase *Phase    `json:"peak_phase"`
	// PeakOffset is the index of the step holding the device's peak among
	// all Total (the offset of the page showing it), -1 when no step does.
	PeakOffset int `json:"peak_offset"`
}

// Bounds of a page of /api/steps.
const (
	defaultStepsPage = 100
	maxStepsPage     = 1000
)

func (s *Server) steps(v *view, r *http.Request) (any, error) {
	p := v.d.Phases
	limit, err := intParam(r, "limit", defaultStepsPage, 1, maxStepsPage)
	if err != nil {
		return nil, err
	}
	offset, err := intParam(r, "offset", 0, 0, int64(max(len(p.Steps)-1, 0)))
	if err != nil {
		return nil, err
	}
	if r.URL.Query().Has("step") {
		// The page, of limit steps from a multiple of limit, that shows
		// step n.
		n, err := intParam(r, "step", 0, math.MinInt32, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(p.Steps, func(st attribution.Step) bool { return int64(st.Step) == n })
		if i < 0 {
			if len(p.Steps) == 0 {
				return nil, badf("step=%d: the recording has no steps", n)
			}
			return nil, badf("step=%d: no such step: the steps are %d to %d", n, p.Steps[0].Step, p.Steps[len(p.Steps)-1].Step)
		}
		offset = int64(i) / limit * limit
	}
	out := &Steps{From: p.Source, Total: len(p.Steps), Offset: int(offset), Limit: int(limit), Steps: []StepRow{}, PeakOffset: -1}
	for _, st := range p.Steps[min(int(offset), len(p.Steps)):min(int(offset+limit), len(p.Steps))] {
		row := StepRow{Step: st.Step, FloorStart: st.FloorStart, FloorEnd: st.FloorEnd, Peak: st.Peak, PeakPhase: st.PeakPhase, Phases: []Phase{}}
		for _, k := range st.Phases {
			row.Phases = append(row.Phases, v.phase(&p.List[k]))
		}
		out.Steps = append(out.Steps, row)
	}
	if p.PeakPhase >= 0 {
		ph := v.phase(&p.List[p.PeakPhase])
		out.PeakPhase = &ph
		for i := range p.Steps {
			if slices.Contains(p.Steps[i].Phases, p.PeakPhase) {
				out.PeakOffset = i
				break
			}
		}
	}
	return out, nil
}

// Leaks is /api/leaks: the device's leak verdict, the document `memscope
// leaks --json` writes for it (report.LeakJSON, docs/json.md), its sites
// cut to the first maxSites.
type Leaks = report.LeakJSON

func (s *Server) leaks(v *view, r *http.Request) (any, error) {
	out := report.LeakJSONOf(v.an.Sites(), v.d)
	out.Sites = out.Sites[:min(len(out.Sites), maxSites)]
	return &out, nil
}

// OOM is one out-of-memory event of /api/oom: its post-mortem, the
// document `memscope oom --json` writes for it (report.OOMJSON,
// docs/json.md), with the top 10 sites live then.
type OOM = report.OOMJSON

func (s *Server) ooms(v *view, r *http.Request) (any, error) {
	out := []OOM{}
	tab := v.an.Sites()
	for _, o := range v.d.OOMs {
		out = append(out, report.OOMJSONOf(tab, v.d, o, 10))
	}
	return out, nil
}
