package attribution

import "sort"

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
	Sites                        []Delta // at the peak, by site label, largest change first
	Categories                   []Delta // at the peak
	Phases                       []Delta // each phase name's highest peak over the steps
	OnlyA, OnlyB                 bool    // the device is in one snapshot only
}

// Delta is one row of a diff.
type Delta struct {
	Name   string `json:"name"`
	A      int64  `json:"a"`
	B      int64  `json:"b"`
	Change int64  `json:"change"` // B − A
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
	if a != nil {
		dd.Device, dd.DeviceB = a.Device, a.Device
		dd.PeakA, dd.EndA, dd.ReservedPeakA = a.Peak.Numbers, a.End.Numbers, a.Timeline.PeakReserved.Bytes
		sa, ca, pa = a.groups()
	}
	if b != nil {
		dd.DeviceB = b.Device
		if a == nil {
			dd.Device = b.Device
		}
		dd.PeakB, dd.EndB, dd.ReservedPeakB = b.Peak.Numbers, b.End.Numbers, b.Timeline.PeakReserved.Bytes
		sb, cb, pb = b.groups()
	}
	dd.Sites, dd.Categories, dd.Phases = Deltas(sa, sb), Deltas(ca, cb), Deltas(pa, pb)
	return dd
}

// groups returns the peak's bytes by site label and by category, and each
// phase name's highest peak.
func (d *Device) groups() (sites, cats, phases map[string]int64) {
	sites, cats, phases = map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, s := range d.Peak.Sites {
		sites[s.Label] += s.Bytes
	}
	for c := Category(0); c < NumCategories; c++ {
		if d.Peak.Categories[c].Count > 0 {
			cats[c.String()] = d.Peak.Categories[c].Bytes
		}
	}
	for _, ph := range d.Phases.List {
		phases[ph.Name] = max(phases[ph.Name], ph.Peak.Allocated)
	}
	return sites, cats, phases
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

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// CompareDevices diffs device a of one analysis against device b of
// another, whatever their indexes: one row of Compare.
func CompareDevices(a, b *Device) DeviceDiff { return compareDevices(a, b) }
