package serve

import (
	"net/http"
)

// Settings is /api/settings: what the allocator model says other settings
// would have reserved over the same requests (attribution's
// SimulateSettings, as frag --simulate) and, on a device with an OOM,
// whether each would have served the request that failed
// (Device.OOMSettings). The simulation replays the trace once per setting,
// so it runs on demand and is kept.
type Settings struct {
	RecordedPeak int64        `json:"recorded_peak_reserved"`
	Lower        []SettingRow `json:"lower"` // the settings that lower the reserved peak by 1% or more, largest saving first
	AtOOM        []OOMRow     `json:"at_oom"`
}

// SettingRow is one setting's reserved peak.
type SettingRow struct {
	Conf         string `json:"conf"`
	PeakReserved int64  `json:"peak_reserved"`
	OOM          bool   `json:"oom"` // it ran out of memory where the recording did not
}

// OOMRow is one setting at the device's OOM.
type OOMRow struct {
	Conf         string `json:"conf"`
	Served       bool   `json:"served"`
	FailsAt      int    `json:"fails_at"`
	PeakReserved int64  `json:"peak_reserved"`
	Error        string `json:"error,omitempty"`
}

func (s *Server) settings(v *view, r *http.Request) (any, error) {
	if v.settings != nil {
		return v.settings, nil
	}
	out := &Settings{RecordedPeak: v.d.Timeline.PeakReserved.Bytes, Lower: []SettingRow{}, AtOOM: []OOMRow{}}
	for _, a := range v.d.SimulateSettings() {
		out.Lower = append(out.Lower, SettingRow{Conf: a.Conf, PeakReserved: a.PeakReserved, OOM: a.OOM})
	}
	for _, o := range v.d.OOMSettings {
		row := OOMRow{Conf: o.Conf, Served: o.Served, FailsAt: o.FailsAt, PeakReserved: o.PeakReserved}
		if o.Err != nil {
			row.Error = o.Err.Error()
		}
		out.AtOOM = append(out.AtOOM, row)
	}
	v.settings = out
	return out, nil
}
