package report

import (
	"fmt"
	"io"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
)

// Check is 'memscope check': the limits each snapshot breaks.
type Check struct {
	Files []CheckFile
}

// CheckFile is one snapshot's part of a check.
type CheckFile struct {
	Source   string
	Breaches []attribution.Breach
	// Truncated: the file was cut short and only its valid part was checked.
	Truncated bool
}

func (*Check) Kind() string { return "check" }

// OK reports whether every file was read whole and broke no limit.
func (r *Check) OK() bool {
	for _, f := range r.Files {
		if f.Truncated || len(f.Breaches) > 0 {
			return false
		}
	}
	return true
}

// Broken words every breach, "FILE: device N: …", in file order.
func (r *Check) Broken() []string {
	var out []string
	for _, f := range r.Files {
		for _, b := range f.Breaches {
			out = append(out, f.Source+": "+breachText(b))
		}
	}
	return out
}

// Truncated lists the files cut short, whose lost part went unchecked.
func (r *Check) Truncated() []string {
	var out []string
	for _, f := range r.Files {
		if f.Truncated {
			out = append(out, f.Source)
		}
	}
	return out
}

// breachText words one breach with its numbers and the flag it breaks.
func breachText(b attribution.Breach) string {
	head := fmt.Sprintf("device %d: ", b.Device)
	switch b.Kind {
	case attribution.BreachOOM:
		o := b.OOM
		kind := oomKindText(o.Verdict.Kind)
		events := "an out-of-memory event"
		if b.OOMs > 1 {
			events = nouns(b.OOMs, "out-of-memory event")
		}
		return head + fmt.Sprintf("%s recorded (the first at event %d: a %s request from %s failed, %s); --allow-oom accepts it",
			events, o.Index, units.Bytes(o.Request), o.SiteLabel, kind)
	case attribution.BreachPeak:
		return head + fmt.Sprintf("peak allocated %s exceeds --max-peak %s", units.Bytes(b.Value), units.Bytes(b.Limit))
	case attribution.BreachReserved:
		return head + fmt.Sprintf("peak reserved %s exceeds --max-reserved %s", units.Bytes(b.Value), units.Bytes(b.Limit))
	case attribution.BreachLeak:
		return head + fmt.Sprintf("leak of %s per step exceeds --max-leak %s (%s)", units.Bytes(b.Value), units.Bytes(b.Limit), b.Site)
	case attribution.BreachFrag:
		return head + fmt.Sprintf("%.1f%% of reserved is free at the peak, over --max-frag %.1f%%", 100*b.Share, 100*b.MaxShare)
	case attribution.BreachUnjudged:
		why := "nothing was reserved at the peak"
		if b.Leak != nil {
			why = leakReasonText(b.Leak)
		}
		return head + fmt.Sprintf("%s cannot be judged on this recording: %s; --allow-unjudged passes it", b.Flag, why)
	}
	return head + fmt.Sprintf("breach of kind %d", int(b.Kind))
}

// writeText says "ok" when the gate passed; a failed gate is the command's
// error, worded by Broken.
func (r *Check) writeText(w io.Writer) error {
	if !r.OK() {
		return nil
	}
	_, err := fmt.Fprintf(w, "ok: %d snapshot(s) within every limit\n", len(r.Files))
	return err
}

// CheckResultJSON is the result of the check document.
type CheckResultJSON struct {
	Files []CheckFileJSON `json:"files"`
	OK    bool            `json:"ok"`
}

// CheckFileJSON is one snapshot's verdict.
type CheckFileJSON struct {
	Source    string   `json:"source"`
	Broken    []string `json:"broken"`
	Truncated bool     `json:"truncated,omitempty"`
}

func (r *Check) document() any {
	res := CheckResultJSON{Files: []CheckFileJSON{}, OK: r.OK()}
	for _, f := range r.Files {
		v := CheckFileJSON{Source: f.Source, Broken: []string{}, Truncated: f.Truncated}
		for _, b := range f.Breaches {
			v.Broken = append(v.Broken, breachText(b))
		}
		res.Files = append(res.Files, v)
	}
	return ResultDoc[CheckResultJSON]{Schema: Schema, Kind: "check", Result: res}
}
