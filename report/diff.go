package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
)

type DeviceDiffJSON struct {
	Device  int     `json:"device"`
	DeviceB int     `json:"device_b"` // B's device: another one when the sole devices were paired
	PeakA   Numbers `json:"peak_a"`
	PeakB   Numbers `json:"peak_b"`
	// ReservedPeakA and ReservedPeakB: each one's own peak of reserved
	// bytes (max_memory_reserved); peak_a.reserved is reserved at A's
	// allocated peak.
	ReservedPeakA int64               `json:"reserved_peak_a"`
	ReservedPeakB int64               `json:"reserved_peak_b"`
	EndA          Numbers             `json:"end_a"`
	EndB          Numbers             `json:"end_b"`
	Sites         []attribution.Delta `json:"sites"`
	Categories    []attribution.Delta `json:"categories"`
	Phases        []attribution.Delta `json:"phases"`
}

// diffDevicesJSON converts a comparison.
func diffDevicesJSON(d *attribution.Diff) []DeviceDiffJSON {
	out := []DeviceDiffJSON{}
	for i := range d.Devices {
		out = append(out, DeviceDiffJSONOf(&d.Devices[i]))
	}
	return out
}

// DeviceDiffJSONOf is one device pair's comparison, as `diff --json`
// writes it (docs/json.md); serve's /api/compare answers it too.
func DeviceDiffJSONOf(dd *attribution.DeviceDiff) DeviceDiffJSON {
	return DeviceDiffJSON{Device: dd.Device, DeviceB: dd.DeviceB, PeakA: numbers(dd.PeakA), PeakB: numbers(dd.PeakB),
		ReservedPeakA: dd.ReservedPeakA, ReservedPeakB: dd.ReservedPeakB,
		EndA: numbers(dd.EndA), EndB: numbers(dd.EndB), Sites: nonNil(dd.Sites),
		Categories: nonNil(dd.Categories), Phases: nonNil(dd.Phases)}
}

func nonNil(d []attribution.Delta) []attribution.Delta {
	if d == nil {
		return []attribution.Delta{}
	}
	return d
}

// diffText writes a comparison: peak and end, then the largest changes by
// site, category and phase.
func diffText(w io.Writer, nameA, nameB string, d *attribution.Diff, top int) error {
	ew := &errWriter{w: w}
	ew.printf("A: %s\nB: %s\n", nameA, nameB)
	for _, dd := range d.Devices {
		ew.printf("\ndevice %d", dd.Device)
		if dd.DeviceB != dd.Device {
			ew.printf(" of A against device %d of B (the sole device of each)", dd.DeviceB)
		}
		switch {
		case dd.OnlyA:
			ew.printf(" (only in A)")
		case dd.OnlyB:
			ew.printf(" (only in B)")
		}
		ew.printf("\n")
		tw := newTable(ew, tabwriter.AlignRight)
		fprintf(tw, "\tA\tB\tB − A\t\n")
		row := func(name string, a, b int64) {
			fprintf(tw, "%s\t%s\t%s\t%s\t\n", name, units.Bytes(a), units.Bytes(b), signed(b-a))
		}
		row("peak allocated", dd.PeakA.Allocated, dd.PeakB.Allocated)
		row("reserved at that peak", dd.PeakA.Reserved, dd.PeakB.Reserved)
		row("peak reserved", dd.ReservedPeakA, dd.ReservedPeakB)
		row("end allocated", dd.EndA.Allocated, dd.EndB.Allocated)
		row("end reserved", dd.EndA.Reserved, dd.EndB.Reserved)
		tw.Flush()
		deltaText(ew, "phases (highest peak of each)", dd.Phases, top)
		deltaText(ew, "categories at the peak", dd.Categories, top)
		deltaText(ew, "sites at the peak (by the frame that allocated)", dd.Sites, top)
	}
	return ew.err
}

func deltaText(ew *errWriter, title string, rows []attribution.Delta, top int) {
	if len(rows) == 0 {
		return
	}
	ew.printf("\n%s, largest change first:\n", title)
	tw := newTable(ew, 0)
	fprintf(tw, "  %10s\t%10s\t%11s\t%s\n", "A", "B", "B − A", "")
	for i, r := range rows {
		if i == top {
			break
		}
		fprintf(tw, "  %10s\t%10s\t%11s\t%s\n", units.Bytes(r.A), units.Bytes(r.B), signed(r.Change), clip(r.Name, 72))
		if c := callersText(r); c != "" {
			fprintf(tw, "  \t\t\t  %s\n", c)
		}
	}
	tw.Flush()
}

// callersText names a site row's callers: "called from train.py:202 fwd"
// when both sides called from the same line, else each side's, marked A
// and B; "" when neither has one.
func callersText(r attribution.Delta) string {
	side := func(c string, n int) string {
		s := clip(c, 60)
		if n > 1 {
			s += fmt.Sprintf(" and %d more", n-1)
		}
		return s
	}
	switch {
	case r.CallerA == "" && r.CallerB == "":
		return ""
	case r.CallerA == r.CallerB && r.CallersA == r.CallersB:
		return "called from " + side(r.CallerA, r.CallersA)
	case r.CallerA == "":
		return "called from " + side(r.CallerB, r.CallersB) + " (B)"
	case r.CallerB == "":
		return "called from " + side(r.CallerA, r.CallersA) + " (A)"
	}
	return "called from " + side(r.CallerA, r.CallersA) + " (A), " + side(r.CallerB, r.CallersB) + " (B)"
}

// Diff is 'memscope diff' of two snapshots.
type Diff struct {
	A, B string // the two inputs as given
	Diff *attribution.Diff
	Top  int
}

func (*Diff) Kind() string { return "diff" }

func (r *Diff) writeText(w io.Writer) error { return diffText(w, r.A, r.B, r.Diff, r.Top) }

// DiffResultJSON is the result of the diff document.
type DiffResultJSON struct {
	A       string           `json:"a"`
	B       string           `json:"b"`
	Devices []DeviceDiffJSON `json:"devices"`
}

func (r *Diff) document() any {
	return ResultDoc[DiffResultJSON]{Schema: Schema, Kind: "diff",
		Result: DiffResultJSON{A: r.A, B: r.B, Devices: diffDevicesJSON(r.Diff)}}
}
