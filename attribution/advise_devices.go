package attribution

import "github.com/memscope/memscope/snapshot"

// DeviceAdvice is one device's advice, with its replay (for where the
// peak lies in its history).
type DeviceAdvice struct {
	Device   int
	Advice   *Advice
	Timeline *snapshot.Timeline
}

// Advise advises on every device of an (Device.Advise); where an has
// several devices, those with no recorded events are left out: they have
// no peak to attribute.
func (an *Analysis) Advise(opt AdviseOptions) []DeviceAdvice {
	var out []DeviceAdvice
	for _, d := range an.Devices {
		if len(d.Timeline.Events) == 0 && len(an.Devices) > 1 {
			continue
		}
		out = append(out, DeviceAdvice{Device: d.Device, Advice: d.Advise(opt), Timeline: d.Timeline})
	}
	return out
}
