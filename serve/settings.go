package serve

import (
	"net/http"

	"github.com/memscope/memscope/report"
)

// Settings is /api/settings: what the allocator model says other settings
// would have reserved over the same requests (attribution's
// SimulateSettings), as `memscope frag --simulate --json` writes it
// (report.AdviceSettingJSON: a late start's peaks with their bound), or
// why the model could not be asked; and, on a device with an OOM,
// whether each would have served the request that failed, as `memscope
// oom --json`'s simulated (report.OOMSettingJSON). The simulation replays
// the trace once per setting, so it runs on demand and is kept.
type Settings struct {
	RecordedPeak int64                      `json:"recorded_peak_reserved"`
	Lower        []report.AdviceSettingJSON `json:"lower"` // the settings that lower the reserved peak by 1% or more, largest saving first
	Why          string                     `json:"why,omitempty"`
	AtOOM        []report.OOMSettingJSON    `json:"at_oom"`
}

func (s *Server) settings(v *view, r *http.Request) (any, error) {
	if v.settings != nil {
		return v.settings, nil
	}
	out := &Settings{RecordedPeak: v.d.Timeline.PeakReserved.Bytes, Lower: report.SettingsJSONOf(v.d.SimulateSettings()),
		Why: v.d.SimulateSettingsWhy(), AtOOM: report.OOMSettingsJSONOf(v.d)}
	v.settings = out
	return out, nil
}
