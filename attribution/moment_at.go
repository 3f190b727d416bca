package attribution

import "github.com/memscope/memscope/trace"

// DeviceAt is one device's live memory at a moment, with what the
// profiler's output of the same run says of it: the join with a trace
// (Join), the live bytes by operator (Ops) and the share of the window's
// bytes that found their op (OpsCovered); or an export_memory_timeline
// file read at the moment (Sample).
type DeviceAt struct {
	Device     *Device
	Moment     *Moment
	Join       *Join
	Ops        []OpBytes
	OpsCovered float64
	Sample     trace.Sample
}

// At finds the moment spec (Device.Moment's syntax) on every device of an,
// joined with tr and read from tl where either is given (each may be nil).
// The error is the first device's that spec does not name a moment of.
func (an *Analysis) At(spec string, tr *trace.Trace, tl *trace.CategoryTimeline) ([]DeviceAt, error) {
	var out []DeviceAt
	for _, d := range an.Devices {
		m, err := d.Moment(spec)
		if err != nil {
			return nil, err
		}
		da := DeviceAt{Device: d, Moment: m}
		if tr != nil {
			da.Join = d.JoinTrace(tr)
			da.Ops, da.OpsCovered = da.Join.ByOp(m)
		}
		if tl != nil {
			da.Sample = tl.Sample(m.TimeUS)
		}
		out = append(out, da)
	}
	return out, nil
}
