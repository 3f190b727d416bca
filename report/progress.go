package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/internal/units"
)

// Progress words what a capture or sweep reports as it runs, one line each,
// to w (stderr): it is the capture.Progress of the capture and sweep
// commands.
type Progress struct{ W io.Writer }

var _ capture.Progress = Progress{}

// CaptureStarted says the capture begins: torch, the devices, the run
// directory.
func (p Progress) CaptureStarted(check *capture.Check, out string) {
	fmt.Fprintf(p.W, "memscope: capture: torch %s, %s; writing %s\n", check.Torch, devicesLine(check.Devices), out)
}

// SweepStarted says the sweep begins: the workload and precisions, torch,
// the devices, the memory limit, the run directory.
func (p Progress) SweepStarted(cfg capture.SweepConfig, check *capture.Check, limit int64) {
	fmt.Fprintf(p.W, "memscope: sweep: %s, %s; torch %s, %s; limit %s; writing %s\n",
		cfg.Workload, strings.Join(cfg.Precisions, ","), check.Torch, devicesLine(check.Devices),
		units.Bytes(limit), cfg.Out)
}

// PointDone says one point was measured and how it ended.
func (p Progress) PointDone(done, total int, elapsed time.Duration, workload string, pt *capture.Point) {
	fmt.Fprintf(p.W, "memscope: [%d/%d %s] %s %s batch %d (%s): %s\n", done, total,
		elapsedClock(elapsed), workload, pt.Precision, pt.Batch, cmpStr(pt.Role, pt.Stage), pointOutcome(pt))
}

// devicesLine names the devices a preflight check found.
func devicesLine(ds []capture.DeviceInfo) string {
	if len(ds) == 0 {
		return "no CUDA device"
	}
	same := true
	for _, d := range ds {
		same = same && d.Name == ds[0].Name
	}
	if same {
		return fmt.Sprintf("%d × %s", len(ds), ds[0].Name)
	}
	return fmt.Sprintf("%d CUDA devices", len(ds))
}

// pointOutcome says how a measured point ended.
func pointOutcome(p *capture.Point) string {
	switch {
	case p.Fits:
		s := "fits, peak " + units.Bytes(p.Peak.Allocated) + " allocated, " + units.Bytes(p.Peak.Reserved) + " reserved"
		if p.StepTimeMS != nil {
			s += fmt.Sprintf(", %.0f ms/step", *p.StepTimeMS)
		}
		return s
	case p.OOM:
		s := "out of memory"
		if p.OOMInfo != nil && p.OOMInfo.Phase != "" {
			s += " in " + p.OOMInfo.Phase
		}
		return s
	}
	return "error: " + p.Error
}

// elapsedClock writes an elapsed time as minutes:seconds.
func elapsedClock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}
