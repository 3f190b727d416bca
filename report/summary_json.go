package report

import (
	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/report/jsondoc"
)

// SummaryDoc is jsondoc.SummaryDoc.
type SummaryDoc = jsondoc.SummaryDoc

// SummaryFile is jsondoc.SummaryFile.
type SummaryFile = jsondoc.SummaryFile

// Numbers is jsondoc.Numbers.
type Numbers = jsondoc.Numbers

// PeakJSON is jsondoc.PeakJSON.
type PeakJSON = jsondoc.PeakJSON

// RangeJSON is jsondoc.RangeJSON.
type RangeJSON = jsondoc.RangeJSON

// FrameJSON is jsondoc.FrameJSON.
type FrameJSON = jsondoc.FrameJSON

// SiteJSON is jsondoc.SiteJSON.
type SiteJSON = jsondoc.SiteJSON

// FindingJSON is jsondoc.FindingJSON.
type FindingJSON = jsondoc.FindingJSON

// InferenceJSON is jsondoc.InferenceJSON.
type InferenceJSON = jsondoc.InferenceJSON

// SummaryDevice is jsondoc.SummaryDevice.
type SummaryDevice = jsondoc.SummaryDevice

// EndStatsJSON is jsondoc.EndStatsJSON.
type EndStatsJSON = jsondoc.EndStatsJSON

func summaryFile(s *attribution.Summary) SummaryFile {
	f := SummaryFile{Source: s.Source, Format: s.Format, Protocol: s.Protocol,
		Devices: []SummaryDevice{}, Warnings: warningStrings(s.Warnings)}
	for i := range s.Devices {
		f.Devices = append(f.Devices, SummaryDeviceJSON(s, &s.Devices[i]))
	}
	return f
}

// SummaryDeviceJSON is one device's summary document, as `summary --json`
// writes it (docs/json.md); serve's /api/summary answers it too.
func SummaryDeviceJSON(s *attribution.Summary, d *attribution.DeviceSummary) SummaryDevice {
	sd := SummaryDevice{
		Device: d.Device, Start: numbers(d.Start), AtPeak: numbers(d.AtPeak), End: numbers(d.End),
		DeviceUsed: d.DeviceUsed, DeviceUsedPeak: d.DeviceUsedPeak,
		Peaks: map[string]PeakJSON{
			"requested": peak(d.PeakRequested), "allocated": peak(d.PeakAllocated),
			"active": peak(d.PeakActive), "reserved": peak(d.PeakReserved),
		},
		PeakOffsetUS: d.PeakOffsetUS, DurationUS: d.DurationUS, TimesRecorded: d.Timed,
		PeakRanges: []RangeJSON{}, PeakStep: d.PeakStep, PeakPhase: d.PeakPhase,
		Steps: d.Steps, StepsSource: d.StepsSource, StepsFrom: stepsFromText(d.StepsSource, d.StepsRange, d.Events) + cutByText(d.StepsCutBy),
		TopSites: []SiteJSON{}, LiveBlocksAtPeak: d.LiveAtPeak,
		Events: d.Events, Segments: d.Segments, Blocks: d.Blocks, ActiveBlocks: d.ActiveBlocks,
		OOMs: d.OOMs, AllocRetries: d.AllocRetries, Warnings: deviceWarnings(d),
		EndStats:           EndStatsJSON{Segment: d.TorchSegments, InactiveSplit: d.InactiveSplit, InactiveSplitBytes: d.InactiveSplitBytes},
		PrivatePoolsAtPeak: privatePoolsJSON(d.PrivatePools), PrivatePoolsAtEnd: privatePoolsJSON(d.PrivatePoolsEnd),
		StepTable: stepTableJSON(d.StepTable),
	}
	sd.Categories = map[string]int64{}
	for c := attribution.Category(0); c < attribution.NumCategories; c++ {
		sd.Categories[c.String()] = d.Categories[c].Bytes
	}
	if inf := d.Inference; inf != nil {
		sd.Inference = inferenceJSON(inf)
	}
	if d.Joined {
		sd.Ops, sd.OpsCovered = opRowsJSON(d.Ops, -1), &d.OpsCovered
	}
	if d.Timeline != nil {
		sd.TimelineAtPeak = timelineSampleJSON(s.TimelineSource, *d.Timeline)
	}
	sd.Fixes = adviceFixesJSON(d.Fixes)
	sd.Findings = []FindingJSON{}
	for _, f := range d.Findings {
		sd.Findings = append(sd.Findings, FindingJSON{Kind: f.Kind.String(), Problem: f.Problem(), Text: findingText(f)})
	}
	for _, r := range d.PeakRanges {
		sd.PeakRanges = append(sd.PeakRanges, RangeJSON{Name: r.Name, StartEpochUS: r.StartUS, EndEpochUS: r.EndUS})
	}
	for _, site := range d.TopSites {
		sd.TopSites = append(sd.TopSites, SiteJSONOf(s.Sites, site))
	}
	return sd
}
