package allocator

import (
	"errors"
	"fmt"

	"github.com/memscope/memscope/snapshot"
)

// This file drives the what-ifs of a whole snapshot, as 'memscope whatif'
// shows them: for each device asked for, the recording replayed once and
// driven under the recorded settings and every other one, beside the
// replay of the recorded numbers.

// RefusedError is a device whose requests the model cannot drive (no
// trace, a torch ≤ 2.0 snapshot, a backend or state the model does not
// cover), with the reason. It is ErrNotReplayable (errors.Is).
type RefusedError struct {
	Device int
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("device %d: %v: %s", e.Device, ErrNotReplayable, e.Reason)
}

// Is makes a refusal ErrNotReplayable.
func (e *RefusedError) Is(target error) bool { return target == ErrNotReplayable }

// refusef returns device's RefusedError.
func refusef(device int, format string, args ...any) error {
	return &RefusedError{Device: device, Reason: fmt.Sprintf(format, args...)}
}

// SettingError is a setting the what-ifs could not run under: Index is
// its place in SnapshotWhatIfOptions.Settings.
type SettingError struct {
	Index int
	Err   error
}

func (e *SettingError) Error() string { return e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// SnapshotWhatIfOptions choose the devices and settings of WhatIfSnapshot.
type SnapshotWhatIfOptions struct {
	// Device is the device to model; -1 for every device with recorded
	// events.
	Device int
	// Settings are the settings to drive the requests under besides the
	// recorded ones; Confs their PYTORCH_CUDA_ALLOC_CONF strings, carried
	// to the result for its columns.
	Settings []Settings
	Confs    []string
	// MemoryLimit caps the process (set_per_process_memory_fraction's
	// bytes) instead of the limit the recorded OOM shows; 0 for none.
	MemoryLimit int64
}

// DeviceWhatIfs are one device's what-ifs.
type DeviceWhatIfs struct {
	Device int
	// Refused says why the device's requests cannot be modelled ("" when
	// they can; RefusedError's reason); nothing but the recorded numbers
	// is set then.
	Refused string
	// Recorded is what the recording itself shows: its peak and end of
	// reserved, and its first oom (event index, -1 for none).
	RecordedPeak, RecordedEnd int64
	RecordedOOM               int
	// Runs are the what-ifs: the first under the recorded settings, then
	// one per Confs entry, in order. Where the model matched every
	// recorded decision the first is the recorded run as the replay
	// checked it (Recording.Recorded), and Model the what-if under the
	// recorded settings, run as the other settings' are.
	Runs  []*Outcome
	Model *Outcome
	Confs []string // PYTORCH_CUDA_ALLOC_CONF of Runs[1:]
}

// ErrNoTrace is WhatIfSnapshot's error for a snapshot whose devices (or
// the one asked for) recorded no events.
var ErrNoTrace = errors.New("no device has recorded events: a what-if needs the trace (record with torch.cuda.memory._record_memory_history)")

// WhatIfSnapshot runs the what-ifs of every device opt asks for: a device
// the model refuses is a DeviceWhatIfs with its reason; a setting it
// cannot run under is a *SettingError; a device asked for that s does not
// have is the caller's to check.
func WhatIfSnapshot(s *snapshot.Snapshot, opt SnapshotWhatIfOptions) ([]DeviceWhatIfs, error) {
	var devs []int
	for _, d := range s.Devices() {
		if (opt.Device < 0 && d < len(s.Traces) && len(s.Traces[d]) > 0) || d == opt.Device {
			devs = append(devs, d)
		}
	}
	if len(devs) == 0 {
		return nil, ErrNoTrace
	}
	recorded, err := SettingsFromSnapshot(s.Settings)
	if err != nil {
		return nil, err
	}
	var out []DeviceWhatIfs
	for _, d := range devs {
		wd, err := whatIfDevice(s, d, recorded, opt)
		if err != nil {
			return nil, err
		}
		out = append(out, wd)
	}
	return out, nil
}

// whatIfDevice is WhatIfSnapshot for device d.
func whatIfDevice(s *snapshot.Snapshot, d int, recorded Settings, opt SnapshotWhatIfOptions) (DeviceWhatIfs, error) {
	wd := DeviceWhatIfs{Device: d, Confs: opt.Confs, RecordedOOM: -1}
	if d >= len(s.Traces) || len(s.Traces[d]) == 0 {
		wd.Refused = "no recorded trace"
		return wd, nil
	}
	all := append([]Settings{recorded}, opt.Settings...)
	outs, errs := make([]*Outcome, len(all)), make([]error, len(all))
	var err error
	done := make(chan struct{})
	run := func(tl *snapshot.Timeline) {
		defer close(done)
		var rc *Recording
		if rc, err = NewRecording(s, d, WhatIfOptions{MemoryLimit: opt.MemoryLimit, Timeline: tl}); err == nil {
			outs, errs = rc.WhatIfs(all) // the recording replayed once, for every setting
			// The recorded settings' column is the recorded run where the
			// model matched it (the replay's own numbers), unless a memory
			// limit asks what it would do under another cap.
			if opt.MemoryLimit == 0 && errs[0] == nil {
				if rec := rc.Recorded(outs[0]); rec != nil {
					wd.Model, outs[0] = outs[0], rec
				}
			}
		}
	}
	// The recording is checked and driven under every setting from the
	// moment the start state is known, beside the replay of the recorded
	// numbers.
	started := false
	tl := snapshot.Replay(s, d, snapshot.ReplayOptions{Started: func(tl *snapshot.Timeline) {
		started = true
		go run(tl)
	}})
	if !started {
		run(tl)
	}
	<-done
	wd.RecordedPeak, wd.RecordedEnd = tl.PeakReserved.Bytes, tl.End.Reserved
	if len(tl.OOMs) > 0 {
		wd.RecordedOOM = tl.OOMs[0]
	}
	for i := range all {
		if err == nil {
			err = errs[i]
		}
		if err != nil && i == 0 {
			re, ok := errors.AsType[*RefusedError](err)
			if !ok {
				return wd, err
			}
			wd.Refused = re.Reason
			return wd, nil
		}
		if err != nil {
			return wd, &SettingError{Index: i - 1, Err: err}
		}
		wd.Runs = append(wd.Runs, outs[i])
	}
	return wd, nil
}
