package serve

import (
	"fmt"
	"net/http"

	"github.com/memscope/memscope/report"
)

// Moment is /api/moment: the allocator's state at one moment. Moment is
// the moment as `memscope peak --json --at` writes it (report.MomentJSON,
// docs/json.md: numbers, categories, streams, the top 20 sites) and Frag
// its fragmentation as `memscope frag --json` does (report.FragJSON); the
// segments with their blocks and holes, and X on the page's axis, are
// the page's.
type Moment struct {
	Moment   report.MomentJSON `json:"moment"`
	Frag     report.FragJSON   `json:"frag"`
	X        int64             `json:"x"`
	Segments []Segment         `json:"segments"`
	// SegmentsTotal counts the reserved segments (adjacent mapped ranges
	// of an expandable segment as one); past maxSegments the smallest are
	// left out. BlocksOmitted counts the blocks of segments drawn as fill
	// only (past maxBlocks).
	SegmentsTotal int `json:"segments_total"`
	BlocksOmitted int `json:"blocks_omitted"`
	// Sites are the blocks' site labels, each once: a Block's Site is an
	// index into it (a moment of 20,000 blocks names a few dozen sites).
	Sites []string `json:"sites"`
}

// Segment is one reserved segment with its blocks and holes.
type Segment struct {
	Addr        string   `json:"addr"`
	Size        int64    `json:"size"`
	Pool        string   `json:"pool"` // small or large
	PoolID      [2]int64 `json:"pool_id"`
	Expandable  bool     `json:"expandable"`
	Stream      int64    `json:"stream"`
	Allocated   int64    `json:"allocated"`
	PendingFree int64    `json:"pending_free"`
	Free        int64    `json:"free"`
	LargestHole int64    `json:"largest_hole"`
	NBlocks     int      `json:"n_blocks"`
	Blocks      []Block  `json:"blocks"`
	Holes       []Hole   `json:"holes"`
}

// Hole is one free block of a segment, at its offset.
type Hole struct {
	Offset int64 `json:"offset"`
	Size   int64 `json:"size"`
}

// Block is one active block of a segment.
type Block struct {
	Offset    int64  `json:"offset"`
	Size      int64  `json:"size"`
	Requested int64  `json:"requested"`
	ID        *int64 `json:"id"` // for /api/alloc; null when the block's allocation is not known
	Pending   bool   `json:"pending_free"`
	Category  string `json:"category"`
	Site      int    `json:"site"` // an index into Moment.Sites
}

func (s *Server) moment(v *view, r *http.Request) (any, error) {
	m, err := momentOf(v, r)
	if err != nil {
		return nil, err
	}
	d := v.d
	out := &Moment{Moment: report.MomentJSONOf(v.an.Sites(), d.Device, m, 20), Frag: report.FragJSONOf(d.FragmentationAt(m)), X: -1, Segments: []Segment{}}
	if m.Index >= 0 && m.Index < len(v.ax.events) {
		out.X = v.ax.xOf(m.Index)
	}
	x := v.idx()
	siteAt := map[string]int{}
	site := func(label string) int {
		i, ok := siteAt[label]
		if !ok {
			i = len(out.Sites)
			siteAt[label] = i
			out.Sites = append(out.Sites, label)
		}
		return i
	}
	out.Sites = []string{}
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
			LargestHole: l.LargestHole, NBlocks: len(l.Blocks), Blocks: []Block{}, Holes: []Hole{}}
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
					Category: d.CategoryOf(b).String()}
				if id, ok := x.idOfLive(b); ok {
					blk.ID = &id
					blk.Site = site(x.siteLabels[x.recs[x.recOf(id)].site]) // the index's label of its site, made once
				} else {
					blk.Site = site(d.SiteOfBlock(b).Label(v.an.Snapshot.Stacks))
				}
				seg.Blocks = append(seg.Blocks, blk)
			}
			for _, h := range l.Holes {
				seg.Holes = append(seg.Holes, Hole{Offset: h.Offset, Size: h.Size})
			}
		}
		out.Segments = append(out.Segments, seg)
	}
	return out, nil
}
