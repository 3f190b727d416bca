package attribution

// Limits are the thresholds of a memory gate ('memscope check'). A limit
// of -1 is not set.
type Limits struct {
	MaxPeak     int64 // peak allocated bytes (max_memory_allocated)
	MaxReserved int64 // peak reserved bytes (max_memory_reserved)
	// MaxLeak is the most a leak may grow per step; 0 fails any leak.
	MaxLeak int64
	// MaxFrag is the largest share (0–1) of reserved memory that may be
	// free at the peak of allocated bytes.
	MaxFrag float64
	// AllowOOM accepts recorded out-of-memory events.
	AllowOOM bool
	// AllowUnjudged passes a limit the recording cannot judge (a leak
	// limit with too few steps or no history; a fragmentation limit with
	// nothing reserved at the peak); without it such a limit is a breach
	// (BreachUnjudged).
	AllowUnjudged bool
}

// NoLimits are Limits with nothing set: a gate that only fails on a
// recorded out-of-memory event.
var NoLimits = Limits{MaxPeak: -1, MaxReserved: -1, MaxLeak: -1, MaxFrag: -1}

// Any reports whether the gate checks anything at all.
func (l Limits) Any() bool {
	return l.MaxPeak >= 0 || l.MaxReserved >= 0 || l.MaxLeak >= 0 || l.MaxFrag >= 0 || !l.AllowOOM
}

// BreachKind is which limit a breach breaks.
type BreachKind int

const (
	BreachOOM      BreachKind = iota // an out-of-memory event was recorded
	BreachPeak                       // peak allocated over MaxPeak
	BreachReserved                   // peak reserved over MaxReserved
	BreachLeak                       // a leak growing faster than MaxLeak
	BreachFrag                       // more than MaxFrag of reserved free at the peak
	BreachUnjudged                   // a limit given that the recording cannot judge (Flag, Leak)
)

// Breach is one broken limit of one device, with its numbers.
type Breach struct {
	Kind   BreachKind
	Device int
	// Value and Limit are bytes for peak, reserved and leak (bytes per
	// step); for fragmentation, Share and MaxShare are fractions.
	Value, Limit    int64
	Share, MaxShare float64
	// For BreachOOM: the first event and how many were recorded.
	OOM  *OOM
	OOMs int
	// For BreachLeak: the label of the leak's largest site.
	Site string
	// For BreachUnjudged: the limit's flag ("--max-leak", "--max-frag"),
	// and, for a leak limit, the analysis whose Reason says why.
	Flag string
	Leak *Leak
}

// Check returns the limits an's devices break, each device's in the order
// of BreachKind (Device.Check).
func (an *Analysis) Check(l Limits) []Breach {
	var out []Breach
	for _, d := range an.Devices {
		out = append(out, d.Check(l)...)
	}
	return out
}

// Check returns the limits the device breaks, in the order of BreachKind.
func (d *Device) Check(l Limits) []Breach {
	var out []Breach
	t := d.Timeline
	if len(d.OOMs) > 0 && !l.AllowOOM {
		out = append(out, Breach{Kind: BreachOOM, Device: d.Device, OOM: d.OOMs[0], OOMs: len(d.OOMs)})
	}
	if l.MaxPeak >= 0 && t.PeakAllocated.Bytes > l.MaxPeak {
		out = append(out, Breach{Kind: BreachPeak, Device: d.Device, Value: t.PeakAllocated.Bytes, Limit: l.MaxPeak})
	}
	if l.MaxReserved >= 0 && t.PeakReserved.Bytes > l.MaxReserved {
		out = append(out, Breach{Kind: BreachReserved, Device: d.Device, Value: t.PeakReserved.Bytes, Limit: l.MaxReserved})
	}
	if l.MaxLeak >= 0 && d.Leak.Reason != LeakDecided && !l.AllowUnjudged {
		out = append(out, Breach{Kind: BreachUnjudged, Device: d.Device, Flag: "--max-leak", Limit: l.MaxLeak, Leak: d.Leak})
	}
	if l.MaxLeak >= 0 && d.Leak.Found && d.Leak.GrowthPerStep > l.MaxLeak {
		b := Breach{Kind: BreachLeak, Device: d.Device, Value: d.Leak.GrowthPerStep, Limit: l.MaxLeak}
		if len(d.Leak.Sites) > 0 {
			b.Site = d.Leak.Sites[0].Label
		}
		out = append(out, b)
	}
	if l.MaxFrag >= 0 && (len(d.Frag) == 0 || d.Frag[0].Reserved <= 0) && !l.AllowUnjudged {
		out = append(out, Breach{Kind: BreachUnjudged, Device: d.Device, Flag: "--max-frag", MaxShare: l.MaxFrag})
	}
	if l.MaxFrag >= 0 && len(d.Frag) > 0 && d.Frag[0].Reserved > 0 {
		f := d.Frag[0]
		if share := float64(f.Free) / float64(f.Reserved); share > l.MaxFrag {
			out = append(out, Breach{Kind: BreachFrag, Device: d.Device, Share: share, MaxShare: l.MaxFrag})
		}
	}
	return out
}

// Primary is the device a command about one device reads when none was
// chosen: the first with recorded events, else the first device; nil when
// the analysis has no device.
func (a *Analysis) Primary() *Device {
	for _, d := range a.Devices {
		if len(d.Timeline.Events) > 0 {
			return d
		}
	}
	if len(a.Devices) > 0 {
		return a.Devices[0]
	}
	return nil
}
