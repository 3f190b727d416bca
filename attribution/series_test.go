package attribution

import (
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// TestSeriesExact: every kept point is the replay's exact state after its
// event, its categories and sites add up to allocated, and the series'
// highest allocated is torch's max_memory_allocated over the window.
func TestSeriesExact(t *testing.T) {
	for _, f := range loadFixtures(t) {
		for _, maxPoints := range []int{64, 4000} {
			d := f.an.Devices[0]
			s := d.Series(SeriesOptions{MaxPoints: maxPoints, TopSites: 5})
			name := f.name
			if maxPoints < 100 {
				name += "/64-points"
			}
			t.Run(name, func(t *testing.T) {
				if len(s.Points) > maxPoints {
					t.Errorf("len(Points) = %d, want ≤ %d", len(s.Points), maxPoints)
				}
				full := snapshot.Replay(f.an.Snapshot, d.Device, snapshot.ReplayOptions{Series: true})
				state := func(i int) Numbers {
					if i < 0 {
						return full.Start
					}
					return full.Points[i].Numbers
				}
				var hi int64
				prev := -2
				for _, p := range s.Points {
					if p.Index <= prev {
						t.Fatalf("point at event %d after event %d: not in order", p.Index, prev)
					}
					prev = p.Index
					if want := state(p.Index); p.Numbers != want {
						t.Errorf("Series point at event %d = %+v, want %+v (replay)", p.Index, p.Numbers, want)
					}
					checkSplit(t, &p)
					hi = max(hi, p.Allocated)
				}
				if want := f.truth.Window.MaxAllocated; want > 0 && hi != want {
					t.Errorf("highest allocated in Series = %d, want %d (torch's max_memory_allocated)", hi, want)
				}
				if hi != full.PeakAllocated.Bytes {
					t.Errorf("highest allocated in Series = %d, want the replay's peak %d", hi, full.PeakAllocated.Bytes)
				}
				checkBuckets(t, s, full)
			})
		}
	}
}

// checkSplit: a point's categories and its sites each add up to its
// allocated bytes.
func checkSplit(t *testing.T, p *SeriesPoint) {
	t.Helper()
	var cats, sites int64
	for _, c := range p.Categories {
		cats += c
	}
	for _, b := range p.Sites {
		sites += b
	}
	if cats != p.Allocated || sites != p.Allocated {
		t.Errorf("event %d: categories sum to %d, sites to %d; want allocated %d", p.Index, cats, sites, p.Allocated)
	}
}

// checkBuckets: each bucket of EventsPerBucket states keeps its lowest and
// highest value of every quantity, so no peak or valley is lost.
func checkBuckets(t *testing.T, s *Series, full *snapshot.Timeline) {
	t.Helper()
	per := s.EventsPerBucket
	n := len(full.Points) + 1 // states: before the first event, then after each
	kept := map[int]bool{}
	for _, p := range s.Points {
		kept[p.Index] = true
	}
	get := func(st int) Numbers {
		if st == 0 {
			return full.Start
		}
		return full.Points[st-1].Numbers
	}
	quantities := []func(Numbers) int64{
		func(n Numbers) int64 { return n.Requested }, func(n Numbers) int64 { return n.Allocated },
		func(n Numbers) int64 { return n.Active }, func(n Numbers) int64 { return n.Reserved },
	}
	for b := 0; b*per < n; b++ {
		for k, q := range quantities {
			lo, hi := b*per, b*per
			for st := b * per; st < min((b+1)*per, n); st++ {
				if q(get(st)) < q(get(lo)) {
					lo = st
				}
				if q(get(st)) > q(get(hi)) {
					hi = st
				}
			}
			if !kept[lo-1] || !kept[hi-1] {
				t.Errorf("bucket %d, quantity %d: lowest at event %d kept %v, highest at event %d kept %v; want both kept",
					b, k, lo-1, kept[lo-1], hi-1, kept[hi-1])
			}
		}
	}
}

// TestSeriesAtPeak: the point at the peak splits allocated exactly as the
// peak's attribution does, by category and by site.
func TestSeriesAtPeak(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			d := f.an.Devices[0]
			s := d.Series(SeriesOptions{MaxPoints: 200, TopSites: 4})
			var at *SeriesPoint
			for i := range s.Points {
				if s.Points[i].Index == d.Peak.Index {
					at = &s.Points[i]
				}
			}
			if at == nil {
				t.Fatalf("no point at the peak (event %d)", d.Peak.Index)
			}
			for c := range NumCategories {
				if got, want := at.Categories[c], d.Peak.Categories[c].Bytes; got != want {
					t.Errorf("%s at the peak = %d, want %d (Moment.Categories)", c, got, want)
				}
			}
			var other int64
			for i, site := range d.Peak.Sites {
				if i < len(s.Sites) {
					if got := at.Sites[i]; got != site.Bytes {
						t.Errorf("site %s at the peak = %d, want %d (Moment.Sites)", site.Label, got, site.Bytes)
					}
				} else {
					other += site.Bytes
				}
			}
			if got := at.Sites[len(s.Sites)]; got != other {
				t.Errorf("other sites at the peak = %d, want %d", got, other)
			}
		})
	}
}

// A trace that lacks a free (an alloc at an address already in use, which
// the replay engine takes as the old block's end) still splits every point
// into categories and sites that add up to allocated.
func TestSeriesAllocatedOver(t *testing.T) {
	const seg, mib = int64(0x7f0000000000), int64(1) << 20
	fr := snapgen.Frame("forward", "train.py", 10)
	syn := &snapgen.Synth{
		Segments: []map[string]any{snapgen.Seg(seg, snapgen.Blk(mib, mib, "active_allocated"), snapgen.Blk(mib, 0, "inactive"))},
		Traces: [][]map[string]any{{
			snapgen.Ev("alloc", seg, mib, 1, fr),
			snapgen.Ev("alloc", seg+mib, mib, 2, fr),
			snapgen.Ev("alloc", seg, mib, 3, fr), // over the first
			snapgen.Ev("free_requested", seg+mib, mib, 4, fr),
			snapgen.Ev("free_completed", seg+mib, mib, 5, fr),
		}},
	}
	s, err := syn.Decode("allocated-over")
	if err != nil {
		t.Fatal(err)
	}
	d := Analyze(s, Options{Device: 0}).Devices[0]
	if err := d.Timeline.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if got := d.Timeline.Death[0]; got != 2 {
		t.Errorf("Death[0] = %d, want 2 (the alloc over it)", got)
	}
	ser := d.Series(SeriesOptions{MaxPoints: 64, TopSites: 2})
	for _, p := range ser.Points {
		checkSplit(t, &p)
	}
	if n := len(ser.Points); n != 6 {
		t.Errorf("%d points, want 6 (before the first event, then after each)", n)
	}
}
