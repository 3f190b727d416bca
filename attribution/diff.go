package attribution

import (
	"sort"

	"github.com/memscope/memscope/snapshot"
)

// Diff compares two analyses device by device (device d of A with device d
// of B, or the sole device of each when each has one): what grew at the
// peak and at the end, by site, category and phase.
type Diff struct {
	Devices []DeviceDiff
}

// DeviceDiff is the comparison of one device.
type DeviceDiff struct {
	// Device is the device of A (of B when only B has it); DeviceB the
	// device of B, another index when the sole devices were paired.
	Device, DeviceB int
	// PeakA and PeakB are the numbers at each allocated peak (its reserved
	// is reserved at that moment); ReservedPeakA and ReservedPeakB each
	// one's own peak of reserved bytes (max_memory_reserved).
	PeakA, PeakB                 Numbers
	ReservedPeakA, ReservedPeakB int64
	EndA, EndB                   Numbers
	// Sites are the bytes at the peak by the frame that allocated them
	// (a library site's frame, not the user's line that called it: a fix
	// edits the calling script, and its sites must still pair), largest
	// change first; each row names its callers on either side.
	Sites        []Delta
	Categories   []Delta // at the peak
	Phases       []Delta // each phase name's highest peak over the steps
	OnlyA, OnlyB bool    // the device is in one snapshot only
}

// Delta is one row of a diff.
type Delta struct {
	Name   string `json:"name"`
	A      int64  `json:"a"`
	B      int64  `json:"b"`
	Change int64  `json:"change"` // B − A
	// CallerA and CallerB are, for a row of sites, the user's line that
	// called the allocating library frame in A and in B (the one holding
	// the most bytes where there are several: CallersA and CallersB count
	// them); empty where the side has no caller.
	CallerA  string `json:"caller_a,omitempty"`
	CallerB  string `json:"caller_b,omitempty"`
	CallersA int    `json:"callers_a,omitempty"`
	CallersB int    `json:"callers_b,omitempty"`
}

// Compare diffs a against b.
func Compare(a, b *Analysis) *Diff {
	out := &Diff{}
	if len(a.Devices) == 1 && len(b.Devices) == 1 && a.Devices[0].Device != b.Devices[0].Device {
		// One device each (a job run on GPU 0, then on GPU 3): the same job.
		out.Devices = append(out.Devices, compareDevices(a.Devices[0], b.Devices[0]))
		return out
	}
	byDev := map[int][2]*Device{}
	var devs []int
	for _, d := range a.Devices {
		byDev[d.Device] = [2]*Device{d, nil}
		devs = append(devs, d.Device)
	}
	for _, d := range b.Devices {
		p, ok := byDev[d.Device]
		if !ok {
			devs = append(devs, d.Device)
		}
		p[1] = d
		byDev[d.Device] = p
	}
	sort.Ints(devs)
	for _, n := range devs {
		p := byDev[n]
		dd := compareDevices(p[0], p[1])
		dd.Device, dd.DeviceB = n, n
		out.Devices = append(out.Devices, dd)
	}
	return out
}

// compareDevices diffs device a against device b; either may be nil.
func compareDevices(a, b *Device) DeviceDiff {
	dd := DeviceDiff{OnlyA: b == nil, OnlyB: a == nil}
	var sa, sb, ca, cb, pa, pb map[string]int64
	var fa, fb map[string]map[string]int64
	if a != nil {
		dd.Device, dd.DeviceB = a.Device, a.Device
		dd.PeakA, dd.EndA, dd.ReservedPeakA = a.Peak.Numbers, a.End.Numbers, a.Timeline.PeakReserved.Bytes
		sa, fa, ca, pa = a.groups()
	}
	if b != nil {
		dd.DeviceB = b.Device
		if a == nil {
			dd.Device = b.Device
		}
		dd.PeakB, dd.EndB, dd.ReservedPeakB = b.Peak.Numbers, b.End.Numbers, b.Timeline.PeakReserved.Bytes
		sb, fb, cb, pb = b.groups()
	}
	dd.Sites, dd.Categories, dd.Phases = Deltas(sa, sb), Deltas(ca, cb), Deltas(pa, pb)
	for i := range dd.Sites {
		r := &dd.Sites[i]
		r.CallerA, r.CallersA = topCaller(fa[r.Name])
		r.CallerB, r.CallersB = topCaller(fb[r.Name])
	}
	return dd
}

// groups returns the peak's bytes by allocating frame (SiteKey) with each
// frame's bytes by caller, by category, and each phase name's highest
// peak.
func (d *Device) groups() (sites map[string]int64, callers map[string]map[string]int64, cats, phases map[string]int64) {
	sites, callers, cats, phases = map[string]int64{}, map[string]map[string]int64{}, map[string]int64{}, map[string]int64{}
	st := d.an.Snapshot.Stacks
	for _, s := range d.Peak.Sites {
		k := SiteKey(st, s.Site)
		sites[k] += s.Bytes
		if s.Site.HasCaller {
			c := callers[k]
			if c == nil {
				c = map[string]int64{}
				callers[k] = c
			}
			c[FrameLabel(st.Frame(s.Site.Caller))] += s.Bytes
		}
	}
	for c := Category(0); c < NumCategories; c++ {
		if d.Peak.Categories[c].Count > 0 {
			cats[c.String()] = d.Peak.Categories[c].Bytes
		}
	}
	for _, ph := range d.Phases.List {
		phases[ph.Name] = max(phases[ph.Name], ph.Peak.Allocated)
	}
	return sites, callers, cats, phases
}

// Deltas pairs the values of a and b by name, largest |change| first.
func Deltas(a, b map[string]int64) []Delta {
	names := map[string]bool{}
	for k := range a {
		names[k] = true
	}
	for k := range b {
		names[k] = true
	}
	out := make([]Delta, 0, len(names))
	for k := range names {
		out = append(out, Delta{Name: k, A: a[k], B: b[k], Change: b[k] - a[k]})
	}
	sort.Slice(out, func(i, j int) bool {
		ci, cj := abs(out[i].Change), abs(out[j].Change)
		if ci != cj {
			return ci > cj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// SiteKey names the frame that allocated for a site: its Label without the
// caller, so a library frame reached from two scripts (or two lines of
// one) is one site. Diffs key sites by it.
func SiteKey(st *snapshot.Stacks, s Site) string {
	s.Caller, s.HasCaller = 0, false
	return s.Label(st)
}

// topCaller returns the caller holding the most bytes (the first by name
// of equals) and how many callers there are.
func topCaller(by map[string]int64) (string, int) {
	top, most := "", int64(-1)
	for c, n := range by {
		if n > most || n == most && c < top {
			top, most = c, n
		}
	}
	return top, len(by)
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// CompareDevices diffs device a of one analysis against device b of
// another, whatever their indexes: one row of Compare.
func CompareDevices(a, b *Device) DeviceDiff { return compareDevices(a, b) }
