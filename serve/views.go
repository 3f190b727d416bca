package serve

import (
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/snapshot"
)

// Bounds of the moment, sites and steps answers.
const (
	maxSegments = 2000
	maxBlocks   = 20000
	maxSites    = 500
	maxSteps    = 5000
	treeNodes   = 400
	treeMin     = 0.002
)

// Numbers are the allocator's four quantities at a moment.
type Numbers struct {
	Requested int64 `json:"requested"`
	Allocated int64 `json:"allocated"`
	Active    int64 `json:"active"`
	Reserved  int64 `json:"reserved"`
}

func numbers(n snapshot.Numbers) Numbers {
	return Numbers{n.Requested, n.Allocated, n.Active, n.Reserved}
}

// Peak is one quantity's peak and when it was reached.
type Peak struct {
	Bytes int64 `json:"bytes"`
	Event int   `json:"event"`
	X     int64 `json:"x"` // on the timeline's axis
}

func (v *view) peak(p snapshot.Peak) Peak {
	out := Peak{Bytes: p.Bytes, Event: p.Index, X: -1}
	if p.Index >= 0 && p.Index < len(v.x.events) {
		out.X = v.x.xOf(p.Index)
	}
	return out
}

// Summary is /api/summary: the four numbers, each one's peak, the phases.
type Summary struct {
	Source     string  `json:"source"`
	Device     int     `json:"device"`
	Axis       string  `json:"axis"`
	Span       int64   `json:"span"`
	Events     int     `json:"events"`
	Timed      bool    `json:"timed"`
	DurationUS int64   `json:"duration_us"`
	Start      Numbers `json:"start"`
	AtPeak     Numbers `json:"at_peak"`
	End        Numbers `json:"end"`
	Peaks      struct {
		Requested Peak `json:"requested"`
		Allocated Peak `json:"allocated"`
		Active    Peak `json:"active"`
		Reserved  Peak `json:"reserved"`
	} `json:"peaks"`
	PeakStep   *int      `json:"peak_step"`
	PeakPhase  string    `json:"peak_phase"`
	StepsFrom  string    `json:"steps_from"`
	Steps      int       `json:"steps"`
	Segments   int       `json:"segments"`
	Blocks     int       `json:"blocks"`
	OOMs       int       `json:"ooms"`
	TopSites   []Site    `json:"top_sites"`
	Categories []Bytes   `json:"categories"`
	Findings   []string  `json:"findings"`
	Warnings   []string  `json:"warnings"`
	Phases     []Phase   `json:"phases"`
	Ops        []OpBytes `json:"ops"`
}

// Phase is one phase with its event and axis ranges.
type Phase struct {
	Name   string `json:"name"`
	Step   int    `json:"step"`
	First  int    `json:"first"`
	Last   int    `json:"last"`
	X0     int64  `json:"x0"`
	X1     int64  `json:"x1"`
	Peak   int64  `json:"peak"` // allocated
	PeakAt int    `json:"peak_event"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
}

// OpBytes is one operator's bytes at the peak, with a joined trace.
type OpBytes struct {
	Op    string `json:"op"`
	Bytes int64  `json:"bytes"`
}

// Bytes is a byte and block count under a name.
type Bytes struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
	Count int    `json:"count"`
}

// Site is one site's bytes at a moment.
type Site struct {
	Label     string  `json:"label"`
	Kind      string  `json:"kind"`
	Bytes     int64   `json:"bytes"`
	Requested int64   `json:"requested"`
	Count     int     `json:"count"`
	Share     float64 `json:"share"`
	Stack     []Frame `json:"stack"` // of its largest block
}

// Frame is one stack frame, innermost first; Folded when the site rule
// folds it away (plumbing).
type Frame struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Line   int64  `json:"line"`
	Class  string `json:"class"`
	Folded bool   `json:"folded"`
}

func (v *view) stack(id snapshot.StackID) []Frame {
	st := v.an.Snapshot.Stacks
	tab := v.an.Filter.For(st)
	out := []Frame{}
	for _, f := range st.Stack(id) {
		fr := st.Frame(f)
		out = append(out, Frame{Name: fr.Name, File: fr.Filename, Line: fr.Line, Class: tab.Class(f).String(), Folded: !tab.Counts(f)})
	}
	return out
}

func (v *view) siteRows(sites []attribution.SiteBytes, limit int, q string) []Site {
	out := []Site{}
	q = strings.ToLower(q)
	for _, s := range sites {
		if len(out) == limit {
			break
		}
		if q != "" && !strings.Contains(strings.ToLower(s.Label), q) {
			continue
		}
		out = append(out, Site{Label: s.Label, Kind: s.Site.Kind, Bytes: s.Bytes, Requested: s.Requested, Count: s.Count, Share: finite(s.Share), Stack: v.stack(s.Stack)})
	}
	return out
}

// finite is f, or 0 when it is not a number JSON can hold.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

func categories(c [attribution.NumCategories]attribution.Bytes) []Bytes {
	out := []Bytes{}
	for k, b := range c {
		if b.Count > 0 {
			out = append(out, Bytes{Name: attribution.Category(k).String(), Bytes: b.Bytes, Count: b.Count})
		}
	}
	return out
}

func (s *Server) summary(v *view, r *http.Request) (any, error) {
	ds := v.sum
	out := &Summary{Source: v.source, Device: v.d.Device, Axis: "event", Span: v.x.span(), Events: len(v.x.events),
		Timed: ds.Timed, DurationUS: ds.DurationUS, Start: numbers(ds.Start), AtPeak: numbers(ds.AtPeak), End: numbers(ds.End),
		PeakStep: ds.PeakStep, PeakPhase: ds.PeakPhase, StepsFrom: ds.StepsSource, Steps: ds.Steps,
		Segments: ds.Segments, Blocks: ds.Blocks, OOMs: ds.OOMs, TopSites: v.siteRows(ds.TopSites, 10, ""),
		Categories: categories(ds.Categories), Findings: []string{}, Warnings: []string{}, Phases: []Phase{}, Ops: []OpBytes{}}
	if v.x.timed {
		out.Axis = "time_us"
	}
	out.Peaks.Requested, out.Peaks.Allocated = v.peak(ds.PeakRequested), v.peak(ds.PeakAllocated)
	out.Peaks.Active, out.Peaks.Reserved = v.peak(ds.PeakActive), v.peak(ds.PeakReserved)
	for _, f := range ds.Findings {
		if f.Problem() {
			out.Findings = append(out.Findings, f.Kind.String())
		}
	}
	for _, w := range ds.Warnings {
		out.Warnings = append(out.Warnings, w.Message)
	}
	for _, w := range v.an.Snapshot.Warnings {
		out.Warnings = append(out.Warnings, w.Message)
	}
	for _, o := range ds.Ops {
		out.Ops = append(out.Ops, OpBytes{Op: o.Label, Bytes: o.Bytes.Bytes})
	}
	for i, ph := range v.d.Phases.List {
		if i == maxSteps {
			break
		}
		out.Phases = append(out.Phases, v.phase(&ph))
	}
	return out, nil
}

func (v *view) phase(ph *attribution.Phase) Phase {
	p := Phase{Name: ph.Name, Step: ph.Step, First: ph.First, Last: ph.Last, X0: int64(ph.First), X1: int64(ph.Last),
		Peak: ph.Peak.Allocated, PeakAt: ph.PeakIndex, Start: ph.Start.Allocated, End: ph.End.Allocated}
	if v.x.timed {
		p.X0, p.X1 = ph.StartUS-v.x.t0, ph.EndUS-v.x.t0
	}
	return p
}

// Alloc is /api/alloc: one allocation with its stack and lifetime.
type Alloc struct {
	ID        int64   `json:"id"`
	Addr      string  `json:"addr"`
	Size      int64   `json:"size"`
	Requested int64   `json:"requested"`
	Stream    int64   `json:"stream"`
	Category  string  `json:"category"`
	Phase     string  `json:"phase"`
	Step      int     `json:"step"`
	Site      string  `json:"site"`
	Stack     []Frame `json:"stack"`
	// FreeStack: the stack is where it was freed (it predates the
	// recording and only its free was recorded).
	FreeStack bool `json:"free_stack"`
	// Start is the alloc event (-1: before the first); End the event that
	// ended it, -1 when it lives to the end; X0 and X1 on the axis.
	Start      int    `json:"start"`
	End        int    `json:"end"`
	X0         int64  `json:"x0"`
	X1         int64  `json:"x1"`
	EndPhase   string `json:"end_phase"`
	EndStep    int    `json:"end_step"`
	Events     int    `json:"events"` // events it lived through
	DurationUS *int64 `json:"duration_us"`
}

func (s *Server) alloc(v *view, r *http.Request) (any, error) {
	q := r.URL.Query().Get("id")
	if q == "" {
		return nil, badf("id: missing: give an allocation's id from /api/timeline")
	}
	id, err := intParam(r, "id", 0, -int64(v.x.nInit), int64(len(v.x.events)-1))
	if err != nil {
		return nil, err
	}
	rn := v.x.recOf(id)
	if rn < 0 {
		return nil, badf("id=%d: event %d is not an allocation", id, id)
	}
	rc := &v.x.recs[rn]
	b := v.x.block(rn)
	n := len(v.x.events)
	out := &Alloc{ID: id, Addr: fmt.Sprintf("0x%x", b.Addr), Size: rc.size, Requested: b.Requested, Stream: b.Stream,
		Category: v.d.CategoryOf(&b).String(), Step: -1, Site: v.x.siteLabels[rc.site], Stack: v.stack(b.Stack),
		FreeStack: b.FreeStack, Start: int(rc.start), End: int(rc.end), EndStep: -1, X0: 0, X1: v.x.span()}
	if rc.start >= 0 {
		out.Phase, out.Step = v.d.PhaseOf(int(rc.start))
		out.X0 = v.x.xOf(int(rc.start))
	}
	if int(rc.end) >= n {
		out.End = -1
		out.Events = n - 1 - int(rc.start)
	} else {
		out.EndPhase, out.EndStep = v.d.PhaseOf(int(rc.end))
		out.X1 = v.x.xOf(int(rc.end))
		out.Events = int(rc.end) - int(rc.start)
	}
	if v.x.timed && rc.start >= 0 {
		d := v.x.events[min(int(rc.end), n-1)].TimeUS - v.x.events[rc.start].TimeUS
		out.DurationUS = &d
	}
	return out, nil
}

// Moment is /api/moment: the allocator's state at one moment.
type Moment struct {
	Label    string    `json:"label"`
	Event    int       `json:"event"`
	X        int64     `json:"x"`
	Numbers  Numbers   `json:"numbers"`
	Frag     Frag      `json:"frag"`
	Segments []Segment `json:"segments"`
	// SegmentsTotal counts the reserved segments (adjacent mapped ranges
	// of an expandable segment as one); past maxSegments the smallest are
	// left out. BlocksOmitted counts the blocks of segments drawn as fill
	// only (past maxBlocks).
	SegmentsTotal int      `json:"segments_total"`
	BlocksOmitted int      `json:"blocks_omitted"`
	Categories    []Bytes  `json:"categories"`
	Streams       []Stream `json:"streams"`
	TopSites      []Site   `json:"top_sites"`
}

// Frag is the fragmentation at a moment (attribution.Fragmentation).
type Frag struct {
	Reserved      int64                    `json:"reserved"`
	Allocated     int64                    `json:"allocated"`
	Cached        int64                    `json:"cached"` // reserved − allocated
	Free          int64                    `json:"free"`   // reserved − active
	InactiveSplit int64                    `json:"inactive_split"`
	Holes         int                      `json:"holes"`
	LargestSmall  int64                    `json:"largest_free_small"`
	LargestLarge  int64                    `json:"largest_free_large"`
	FreeShare     float64                  `json:"free_share"`
	Fragmented    bool                     `json:"fragmented"`
	Histogram     []attribution.HoleBucket `json:"histogram"`
}

// Segment is one reserved segment with its blocks and holes.
type Segment struct {
	Addr        string             `json:"addr"`
	Size        int64              `json:"size"`
	Pool        string             `json:"pool"` // small or large
	PoolID      [2]int64           `json:"pool_id"`
	Expandable  bool               `json:"expandable"`
	Stream      int64              `json:"stream"`
	Allocated   int64              `json:"allocated"`
	PendingFree int64              `json:"pending_free"`
	Free        int64              `json:"free"`
	LargestHole int64              `json:"largest_hole"`
	NBlocks     int                `json:"n_blocks"`
	Blocks      []Block            `json:"blocks"`
	Holes       []attribution.Hole `json:"holes"`
}

// Block is one active block of a segment.
type Block struct {
	Offset    int64  `json:"offset"`
	Size      int64  `json:"size"`
	Requested int64  `json:"requested"`
	ID        *int64 `json:"id"` // for /api/alloc; null when the block's allocation is not known
	Pending   bool   `json:"pending_free"`
	Category  string `json:"category"`
	Site      string `json:"site"`
}

// Stream is what one stream and pool hold.
type Stream struct {
	Stream int64    `json:"stream"`
	PoolID [2]int64 `json:"pool_id"`
	Bytes  int64    `json:"bytes"`
	Count  int      `json:"count"`
}

func (s *Server) moment(v *view, r *http.Request) (any, error) {
	m, err := momentOf(v, r)
	if err != nil {
		return nil, err
	}
	d := v.d
	f := d.FragmentationAt(m)
	out := &Moment{Label: m.Label, Event: m.Index, X: -1, Numbers: numbers(m.Numbers), Segments: []Segment{},
		Categories: categories(m.Categories), Streams: []Stream{}, TopSites: v.siteRows(m.Sites, 20, ""),
		Frag: Frag{Reserved: f.Reserved, Allocated: f.Allocated, Cached: f.Cached, Free: f.Free, InactiveSplit: f.InactiveSplit,
			Holes: f.Holes, LargestSmall: f.LargestFree[0], LargestLarge: f.LargestFree[1], FreeShare: finite(f.Verdict.Share),
			Fragmented: f.Verdict.Problem(), Histogram: append([]attribution.HoleBucket{}, f.Histogram...)}}
	if m.Index >= 0 && m.Index < len(v.x.events) {
		out.X = v.x.xOf(m.Index)
	}
	for _, sb := range m.Streams {
		out.Streams = append(out.Streams, Stream{Stream: sb.Stream, PoolID: [2]int64{sb.Pool.A, sb.Pool.B}, Bytes: sb.Bytes.Bytes, Count: sb.Count})
	}
	segs := d.SegmentLayouts(m)
	out.SegmentsTotal = len(segs)
	blocks := 0
	for i := range segs {
		if i == maxSegments {
			break
		}
		l := &segs[i]
		seg := Segment{Addr: fmt.Sprintf("0x%x", l.Addr), Size: l.Size, Pool: "large", PoolID: [2]int64{l.Pool.A, l.Pool.B},
			Expandable: l.Expandable, Stream: l.Stream, Allocated: l.Allocated, PendingFree: l.PendingFree, Free: l.Free,
			LargestHole: l.LargestHole, NBlocks: len(l.Blocks), Blocks: []Block{}, Holes: []attribution.Hole{}}
		if l.Small {
			seg.Pool = "small"
		}
		if blocks+len(l.Blocks) > maxBlocks {
			out.BlocksOmitted += len(l.Blocks)
		} else {
			blocks += len(l.Blocks)
			for _, lb := range l.Blocks {
				b := &m.Live[lb.Live]
				blk := Block{Offset: lb.Offset, Size: b.Size, Requested: b.Requested, Pending: b.PendingFree,
					Category: d.CategoryOf(b).String(), Site: d.SiteOfBlock(b).Label(v.an.Snapshot.Stacks)}
				if id, ok := v.x.idOfLive(b); ok {
					blk.ID = &id
				}
				seg.Blocks = append(seg.Blocks, blk)
			}
			seg.Holes = append(seg.Holes, l.Holes...)
		}
		out.Segments = append(out.Segments, seg)
	}
	return out, nil
}

// SitesAnswer is /api/sites: the sites at a moment, searchable, and the
// call tree of the frames that count.
type SitesAnswer struct {
	Label string    `json:"label"`
	Event int       `json:"event"`
	Total int       `json:"total"` // sites at the moment
	Match int       `json:"match"` // sites matching q
	Sites []Site    `json:"sites"`
	Tree  *TreeNode `json:"tree"`
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

// Steps is /api/steps.
type Steps struct {
	From      string    `json:"from"` // where the boundaries came from
	Total     int       `json:"total"`
	Steps     []StepRow `json:"steps"` // the first maxSteps
	PeakPhase *Phase    `json:"peak_phase"`
}

func (s *Server) steps(v *view, r *http.Request) (any, error) {
	p := v.d.Phases
	out := &Steps{From: p.Source, Total: len(p.Steps), Steps: []StepRow{}}
	for i, st := range p.Steps {
		if i == maxSteps {
			break
		}
		row := StepRow{Step: st.Step, FloorStart: st.FloorStart, FloorEnd: st.FloorEnd, Peak: st.Peak, PeakPhase: st.PeakPhase, Phases: []Phase{}}
		for _, k := range st.Phases {
			row.Phases = append(row.Phases, v.phase(&p.List[k]))
		}
		out.Steps = append(out.Steps, row)
	}
	if p.PeakPhase >= 0 {
		ph := v.phase(&p.List[p.PeakPhase])
		out.PeakPhase = &ph
	}
	return out, nil
}

// Leaks is /api/leaks.
type Leaks struct {
	Found         bool       `json:"found"`
	Reason        string     `json:"reason"`
	GrowthPerStep int64      `json:"growth_per_step"`
	Steps         []int      `json:"steps"`
	Floors        []int64    `json:"floors"`
	Sites         []LeakSite `json:"sites"`
}

// LeakSite is one site of blocks that survive their step.
type LeakSite struct {
	Site
	Steps        int   `json:"steps"`
	BytesPerStep int64 `json:"bytes_per_step"`
}

var leakReasons = map[attribution.LeakReason]string{attribution.LeakDecided: "decided", attribution.LeakNoHistory: "no history recorded",
	attribution.LeakFewSteps: "too few steady steps"}

func (s *Server) leaks(v *view, r *http.Request) (any, error) {
	l := v.d.Leak
	out := &Leaks{Found: l.Found, Reason: leakReasons[l.Reason], GrowthPerStep: l.GrowthPerStep,
		Steps: append([]int{}, l.Steps...), Floors: append([]int64{}, l.Floors...), Sites: []LeakSite{}}
	for i, ls := range l.Sites {
		if i == maxSites {
			break
		}
		row := v.siteRows([]attribution.SiteBytes{ls.SiteBytes}, 1, "")
		out.Sites = append(out.Sites, LeakSite{Site: row[0], Steps: ls.Steps, BytesPerStep: ls.BytesPerStep})
	}
	return out, nil
}

// OOM is one out-of-memory event of /api/oom.
type OOM struct {
	N          int     `json:"n"`
	Event      int     `json:"event"`
	X          int64   `json:"x"`
	Request    int64   `json:"request"`
	AllocSize  int64   `json:"alloc_size"`
	DeviceFree int64   `json:"device_free"`
	Site       string  `json:"site"`
	Stack      []Frame `json:"stack"`
	Step       int     `json:"step"`
	Phase      string  `json:"phase"`
	Numbers    Numbers `json:"numbers"`
	Verdict    string  `json:"verdict"` // capacity or fragmentation
	Pool       string  `json:"pool"`
	Largest    int64   `json:"largest_free"`
	Stranded   int64   `json:"stranded"`
	Headroom   int64   `json:"headroom"`
	TopSites   []Site  `json:"top_sites"`
}

func (s *Server) ooms(v *view, r *http.Request) (any, error) {
	out := []OOM{}
	for _, o := range v.d.OOMs {
		row := OOM{N: o.N, Event: o.Index, X: v.x.xOf(o.Index), Request: o.Request, AllocSize: o.AllocSize, DeviceFree: o.DeviceFree,
			Site: o.SiteLabel, Stack: v.stack(o.Stack), Step: o.Step, Phase: o.Phase, Numbers: numbers(o.Numbers),
			Verdict: "capacity", Pool: o.Verdict.Pool.String(), Largest: o.Verdict.Largest, Stranded: o.Verdict.Stranded,
			Headroom: o.Verdict.Headroom, TopSites: v.siteRows(o.At.Sites, 10, "")}
		if o.Verdict.Kind == attribution.OOMFragmentation {
			row.Verdict = "fragmentation"
		}
		out = append(out, row)
	}
	return out, nil
}
