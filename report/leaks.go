package report

import (
	"io"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
)

// LeakJSON is the leak verdict of one device.
type LeakJSON struct {
	Device        int            `json:"device"`
	Found         bool           `json:"found"`
	Reason        string         `json:"reason,omitempty"`
	Steps         []int          `json:"steps"`
	Floors        []int64        `json:"floors"`
	GrowthPerStep int64          `json:"growth_per_step"`
	Sites         []LeakSiteJSON `json:"sites"`
}

type LeakSiteJSON struct {
	SiteJSON
	Steps        int   `json:"steps"`
	BytesPerStep int64 `json:"bytes_per_step"`
}

// LeakJSONOf is a device's leak verdict as the leaks document writes it.
func LeakJSONOf(tab *attribution.SiteTable, d *attribution.Device) LeakJSON {
	l := d.Leak
	j := LeakJSON{Device: d.Device, Found: l.Found, Reason: leakReasonText(l), Steps: append([]int{}, l.Steps...),
		Floors: append([]int64{}, l.Floors...), GrowthPerStep: l.GrowthPerStep, Sites: []LeakSiteJSON{}}
	for _, s := range l.Sites {
		j.Sites = append(j.Sites, LeakSiteJSON{SiteJSONOf(tab, s.SiteBytes), s.Steps, s.BytesPerStep})
	}
	return j
}

// leakText writes the leak verdict: floors per steady step and the sites
// whose blocks survive.
func leakText(w io.Writer, an *attribution.Analysis, d *attribution.Device) error {
	ew := &errWriter{w: w}
	l := d.Leak
	ew.printf("device %d: ", d.Device)
	switch {
	case l.Reason != attribution.LeakDecided:
		ew.printf("no verdict: %s\n", leakReasonText(l))
		return ew.err
	case l.Found:
		ew.printf("LEAK: the floor grows by %s per step over %s\n", units.Bytes(l.GrowthPerStep), nouns(len(l.Steps), "steady step"))
	default:
		ew.printf("no leak: the floor does not grow step over step (%s)\n", nouns(len(l.Steps), "steady step"))
	}
	ew.printf("\nfloor after each steady step (allocated):\n")
	for i, s := range l.Steps {
		delta := ""
		if i > 0 {
			delta = "  " + signed(l.Floors[i]-l.Floors[i-1])
		}
		ew.printf("  step %-4d %12s%s\n", s, units.Bytes(l.Floors[i]), delta)
	}
	if len(l.Sites) > 0 {
		ew.printf("\nsites of blocks born in steady steps and live at the end:\n")
		tw := newTable(ew, 0)
		fprintf(tw, "  %10s\t%10s\t%5s\t%s\n", "live", "per step", "steps", "site")
		for _, s := range l.Sites {
			lines := siteLines(an.Snapshot.Stacks, s.SiteBytes, 66)
			fprintf(tw, "  %10s\t%10s\t%5d\t%s\n", units.Bytes(s.Bytes), units.Bytes(s.BytesPerStep), s.Steps, lines[0])
			for _, l := range lines[1:] {
				fprintf(tw, "\t\t\t%s\n", l)
			}
		}
		tw.Flush()
	}
	return ew.err
}

// Leaks is 'memscope leaks' of one file: every device's verdict.
type Leaks struct {
	Source   string
	Analysis *attribution.Analysis
}

func (*Leaks) Kind() string { return "leaks" }

func (r *Leaks) writeText(w io.Writer) error {
	if err := sourceLine(w, r.Source); err != nil {
		return err
	}
	for _, d := range r.Analysis.Devices {
		if err := leakText(w, r.Analysis, d); err != nil {
			return err
		}
	}
	return nil
}

// LeaksFileJSON is the entry of one file in the leaks document.
type LeaksFileJSON struct {
	Source  string     `json:"source"`
	Devices []LeakJSON `json:"devices"`
}

func (r *Leaks) fileEntry() any {
	f := LeaksFileJSON{Source: r.Source, Devices: []LeakJSON{}}
	for _, d := range r.Analysis.Devices {
		f.Devices = append(f.Devices, LeakJSONOf(r.Analysis.Sites(), d))
	}
	return f
}
