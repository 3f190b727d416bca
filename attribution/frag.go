package attribution

import (
	"math/bits"
	"sort"

	"github.com/memscope/memscope/snapshot"
)

const (
	smallSegment = 2 << 20 // the small pool's segments are 2 MiB
	smallRequest = 1 << 20 // requests up to 1 MiB go to the small pool
)

// Fragmentation describes the free memory inside reserved segments at one
// moment: how much there is and in what pieces.
type Fragmentation struct {
	Label string // the moment: peak, end, oom 1
	Index int

	Reserved, Allocated, Active int64
	// Cached is reserved − allocated: memory the allocator holds that no
	// tensor uses (pending frees included).
	Cached int64
	// Free is reserved − active, in Holes pieces; InactiveSplit is the part
	// of it in segments that also hold active blocks, expandable segments
	// excepted (torch's inactive_split_bytes).
	Free, InactiveSplit int64
	Holes               int
	LargestFree         [2]int64 // per pool: 0 small, 1 large
	// Histogram counts holes by size: bucket k holds sizes in
	// [2^(k+9), 2^(k+10)) bytes, from 512 B up.
	Histogram []HoleBucket
	// Request is the failed request at an OOM (0 otherwise) and Unusable the
	// free bytes in holes of its pool too small to serve it. Stranded is
	// the free bytes of its pool in segments that also hold active blocks
	// (release cannot return them), Headroom what the allocator could still
	// reserve (under a per-process cap, else from the device).
	Request, Unusable, Stranded, Headroom int64

	// Private lists the private pools (CUDA graphs' and MemPools')
	// reserved at this moment; their free memory serves only their own
	// graph's replays or allocations, so it is left out of Free, Holes,
	// the histogram and the verdict.
	Private []PrivatePool

	// Churn over the whole trace.
	churn

	Verdict FragVerdict
}

// churn counts the segment events of a whole trace (the replay counts
// them: snapshot.Timeline.Churn).
type churn snapshot.Churn

// HoleBucket is one histogram bucket of free holes.
type HoleBucket struct {
	Min   int64 `json:"min"` // [Min, Max)
	Max   int64 `json:"max"`
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
}

// PrivatePool is one private pool's memory at a moment.
type PrivatePool struct {
	Pool                      snapshot.PoolID
	Reserved, Allocated, Free int64
	Segments                  int
}

// hole is one free block.
type hole struct {
	size    int64
	large   bool
	split   bool
	private bool // in a private pool's segment
}

// segmentView is one reserved segment at a moment: a cudaMalloc'd range, or
// the adjacent mapped ranges of an expandable segment taken as one (free
// blocks span them). Live holds its active blocks by address, Holes the
// gaps between them: free space is one free block per maximal gap.
type segmentView struct {
	Addr, End  uint64
	Expandable bool
	Live       []snapshot.LiveBlock // aliases the moment's
	Holes      []int64
}

// segments walks the reserved segments of moment m in address order.
func (m *Moment) segments(fn func(s *segmentView)) {
	li := 0
	for ri := 0; ri < len(m.Ranges); ri++ {
		r := m.Ranges[ri]
		s := segmentView{Addr: r.Addr, End: r.End, Expandable: r.Expandable}
		for r.Expandable && ri+1 < len(m.Ranges) && m.Ranges[ri+1].Expandable && m.Ranges[ri+1].Addr == s.End {
			ri++
			s.End = m.Ranges[ri].End
		}
		for li < len(m.Live) && m.Live[li].Addr < s.Addr {
			li++
		}
		first := li
		at := s.Addr
		for ; li < len(m.Live) && m.Live[li].Addr < s.End; li++ {
			b := &m.Live[li]
			if b.Addr > at {
				s.Holes = append(s.Holes, int64(b.Addr-at))
			}
			at = max(at, b.Addr+uint64(b.Size))
		}
		if at < s.End {
			s.Holes = append(s.Holes, int64(s.End-at))
		}
		s.Live = m.Live[first:li]
		fn(&s)
	}
}

// holes lists the free blocks of a moment with their pool and whether they
// count as split (torch's inactive_split).
func (d *Device) holes(m *Moment) []hole {
	if d.small == nil {
		d.small = map[uint64]bool{}
		s := d.an.Snapshot
		for _, i := range s.SegmentsOf(d.Device) {
			d.small[s.Segments[i].Address] = s.Segments[i].Small
		}
	}
	small := d.small
	var out []hole
	m.segments(func(s *segmentView) {
		isSmall, known := small[s.Addr]
		if !known {
			isSmall = !s.Expandable && s.End-s.Addr == smallSegment
		}
		private := !d.poolOf(s.Addr).IsDefault()
		for _, g := range s.Holes {
			// torch leaves expandable segments out of inactive_split: their
			// fully free pages can always be unmapped.
			out = append(out, hole{size: g, large: !isSmall, split: len(s.Live) > 0 && !s.Expandable, private: private})
		}
	})
	return out
}

func (d *Device) fragmentation(m *Moment) *Fragmentation {
	f := &Fragmentation{Label: m.Label, Index: m.Index, Reserved: m.Reserved,
		Allocated: m.Allocated, Active: m.Active, Cached: m.Reserved - m.Allocated}
	f.Private = d.privatePools(m)
	for _, h := range d.holes(m) {
		if h.private {
			continue
		}
		f.Free += h.size
		f.Holes++
		if h.split {
			f.InactiveSplit += h.size
		}
		p := 0
		if h.large {
			p = 1
		}
		f.LargestFree[p] = max(f.LargestFree[p], h.size)
		k := max(bits.Len64(uint64(h.size))-10, 0)
		for len(f.Histogram) <= k {
			n := len(f.Histogram)
			f.Histogram = append(f.Histogram, HoleBucket{Min: 512 << n, Max: 1024 << n})
		}
		f.Histogram[k].Count++
		f.Histogram[k].Bytes += h.size
	}
	if f.Histogram != nil {
		f.Histogram[0].Min = 0
	}
	f.churn = d.churn
	f.Verdict = f.verdict()
	return f
}

// unusableFor sets Request, the free bytes that could not serve it, and
// what the verdict weighs: the bytes stranded in split segments of its pool
// and the headroom left to reserve.
func (f *Fragmentation) unusableFor(d *Device, m *Moment, request, headroom int64) {
	f.Request, f.Headroom = request, max(headroom, 0)
	large := request > smallRequest
	for _, h := range d.holes(m) {
		if h.large != large || h.private {
			continue
		}
		if h.size < request {
			f.Unusable += h.size
		}
		if h.split {
			f.Stranded += h.size
		}
	}
	f.Verdict = f.verdict()
}

// privatePools returns the private pools reserved at moment m, by pool
// id.
func (d *Device) privatePools(m *Moment) []PrivatePool {
	var out []PrivatePool
	at := map[snapshot.PoolID]int{}
	get := func(p snapshot.PoolID) *PrivatePool {
		i, ok := at[p]
		if !ok {
			i = len(out)
			at[p] = i
			out = append(out, PrivatePool{Pool: p})
		}
		return &out[i]
	}
	for _, r := range m.Ranges {
		if p := d.poolOf(r.Addr); !p.IsDefault() {
			pp := get(p)
			pp.Reserved += int64(r.End - r.Addr)
			pp.Segments++
		}
	}
	if len(out) == 0 {
		return nil
	}
	for i := range m.Live {
		b := &m.Live[i]
		if p := d.poolOf(b.Addr); !p.IsDefault() {
			get(p).Allocated += b.Size
		}
	}
	for i := range out {
		out[i].Free = out[i].Reserved - out[i].Allocated
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Pool.A < out[j].Pool.A || out[i].Pool.A == out[j].Pool.A && out[i].Pool.B < out[j].Pool.B
	})
	return out
}

// pool gives the request's pool and its largest free block.
func (f *Fragmentation) pool() (Pool, int64) {
	if f.Request > smallRequest {
		return LargePool, f.LargestFree[1]
	}
	return SmallPool, f.LargestFree[0]
}

// fragmented decides a failed request: fragmentation when no single free
// block of its pool could take it, yet it would have fit in the free bytes
// stranded in split segments plus the headroom; capacity otherwise.
func (f *Fragmentation) fragmented() bool {
	_, largest := f.pool()
	return f.Request > 0 && largest < f.Request && f.Request <= f.Headroom+f.Stranded
}

// verdict decides whether the free memory is a problem and what to try.
func (f *Fragmentation) verdict() FragVerdict {
	reserved := f.Reserved // the default pool's: private pools' free memory serves only them
	for _, p := range f.Private {
		reserved -= p.Reserved
	}
	if reserved <= 0 {
		return FragVerdict{Kind: FragNothingReserved}
	}
	v := FragVerdict{Free: f.Free, Share: float64(f.Free) / float64(reserved), Holes: f.Holes,
		Largest: max(f.LargestFree[0], f.LargestFree[1])}
	switch {
	case f.fragmented():
		_, v.Largest = f.pool()
		v.Kind, v.Severity = FragRequestFragmented, SeverityProblem
		v.Request, v.Stranded, v.Headroom = f.Request, f.Stranded, f.Headroom
		v.Try = []Suggestion{{ExpandableSegments, "True"}}
	case f.Request > 0:
		v.Kind = FragRequestTooLarge
		v.Request, v.Stranded, v.Headroom = f.Request, f.Stranded, f.Headroom
	case v.Share < healthyShare:
		v.Kind = FragHealthy
	case f.Holes > 0 && float64(f.InactiveSplit) > 0.5*float64(f.Free) && v.Largest < f.Free/2:
		v.Kind, v.Severity = FragFragmented, SeverityProblem
		v.Try = []Suggestion{{ExpandableSegments, "True"}, {Setting: MaxSplitSize}}
	default:
		v.Kind = FragCached
		v.Try = []Suggestion{{Setting: GarbageCollectionThreshold}}
	}
	return v
}
