package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/allocator"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/snapshot"
)

// whatifOptions are the flags of 'memscope whatif'.
type whatifOptions struct {
	json        bool
	device      int
	confs       []string
	memoryLimit int64
}

func whatifFlags(fs *pflag.FlagSet) runFunc {
	var o whatifOptions
	fs.BoolVar(&o.json, "json", false, "write JSON instead of text; sizes are raw bytes")
	deviceFlag(fs, &o.device, "model only CUDA device `N`; -1 for every device with recorded events")
	fs.StringArrayVar(&o.confs, "conf", nil, "drive the recorded requests under the PYTORCH_CUDA_ALLOC_CONF `STRING` (e.g. expandable_segments:True); repeat for several, side by side")
	sizeFlag(fs, &o.memoryLimit, "memory-limit", true, "24GiB", "cap the process at `SIZE` (e.g. 24GiB), as set_per_process_memory_fraction would, instead of the limit the recorded OOM shows")
	memoryFlag(fs)
	return func(cc *cmdContext, paths []string) error {
		sets := make([]allocator.Settings, len(o.confs))
		for i, c := range o.confs {
			s, err := allocator.ParseConf(c)
			if err != nil {
				return usageErrorf("--conf %q: %v", c, err)
			}
			sets[i] = s
		}
		limit := o.memoryLimit
		snaps, err := snapshotPaths(paths)
		if err != nil {
			return err
		}
		if len(snaps) > 1 {
			return usageErrorf("%s holds %d snapshots (one per rank); give one: %s", paths[0], len(snaps), strings.Join(snaps, ", "))
		}
		s, err := openSnapshot(cc, snaps[0])
		if err != nil {
			return err
		}
		res, err := whatifOf(s, snaps[0], o, sets, limit)
		if err != nil {
			return err
		}
		f := report.Text
		if o.json {
			f = report.JSON
		}
		return report.Write(cc.stdout, f, res)
	}
}

// whatifOf runs the what-ifs of every device asked for.
func whatifOf(s *snapshot.Snapshot, path string, o whatifOptions, sets []allocator.Settings, limit int64) (*report.WhatIf, error) {
	res := &report.WhatIf{Source: path}
	var devs []int
	for _, d := range s.Devices() {
		if (o.device < 0 && d < len(s.Traces) && len(s.Traces[d]) > 0) || d == o.device {
			devs = append(devs, d)
		}
	}
	if o.device >= 0 && len(devs) == 0 {
		return nil, badInput(fmt.Errorf("--device %d: %s has no such device; it has %s", o.device, path, deviceList(s.Devices())))
	}
	if len(devs) == 0 {
		return nil, badInput(fmt.Errorf("%s: no device has recorded events: a what-if needs the trace (record with torch.cuda.memory._record_memory_history)", path))
	}
	recorded, err := allocator.SettingsFromSnapshot(s.Settings)
	if err != nil {
		return nil, badInput(fmt.Errorf("%s: %w", path, err))
	}
	for _, d := range devs {
		wd := report.WhatIfDevice{Device: d, Confs: o.confs, RecordedOOM: -1}
		if d >= len(s.Traces) || len(s.Traces[d]) == 0 {
			wd.Refused = "no recorded trace"
			res.Devices = append(res.Devices, wd)
			continue
		}
		all := append([]allocator.Settings{recorded}, sets...)
		outs, errs := make([]*allocator.Outcome, len(all)), make([]error, len(all))
		var err error
		done := make(chan struct{})
		run := func(tl *snapshot.Timeline) {
			defer close(done)
			var rc *allocator.Recording
			if rc, err = allocator.NewRecording(s, d, allocator.WhatIfOptions{MemoryLimit: limit, Timeline: tl}); err == nil {
				outs, errs = rc.WhatIfs(all) // the recording replayed once, for every setting
				// The recorded settings' column is the recorded run where the
				// model matched it (the replay's own numbers), unless a
				// --memory-limit asks what it would do under another cap.
				if limit == 0 && errs[0] == nil {
					if rec := rc.Recorded(outs[0]); rec != nil {
						wd.Model, outs[0] = outs[0], rec
					}
				}
			}
		}
		// The recording is checked and driven under every setting from the
		// moment the start state is known, beside the replay of the
		// recorded numbers.
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
			out := outs[i]
			if err == nil {
				err = errs[i]
			}
			if err != nil && i == 0 {
				if !errors.Is(err, allocator.ErrNotReplayable) {
					return nil, badInput(fmt.Errorf("%s: %w", path, err))
				}
				wd.Refused = strings.TrimPrefix(err.Error(), fmt.Sprintf("device %d: %s: ", d, allocator.ErrNotReplayable))
				break
			}
			if err != nil {
				return nil, usageErrorf("--conf %q: %v", o.confs[i-1], err)
			}
			wd.Runs = append(wd.Runs, out)
		}
		res.Devices = append(res.Devices, wd)
	}
	return res, nil
}
