package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/allocator"
	"github.com/memscope/memscope/internal/flagvalue"
	"github.com/memscope/memscope/report"
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
	flagvalue.Device(fs, &o.device, "model only CUDA device `N`; -1 for every device with recorded events")
	fs.StringArrayVar(&o.confs, "conf", nil, "drive the recorded requests under the PYTORCH_CUDA_ALLOC_CONF `STRING` (e.g. expandable_segments:True); repeat for several, side by side")
	flagvalue.Size(fs, &o.memoryLimit, "memory-limit", true, "24GiB", "cap the process at `SIZE` (e.g. 24GiB), as set_per_process_memory_fraction would, instead of the limit the recorded OOM shows")
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
		if err := checkDevice(s, o.device); err != nil {
			return err
		}
		devs, err := allocator.WhatIfSnapshot(s, allocator.SnapshotWhatIfOptions{Device: o.device, Settings: sets, Confs: o.confs, MemoryLimit: o.memoryLimit})
		if se, ok := errors.AsType[*allocator.SettingError](err); ok {
			return usageErrorf("--conf %q: %v", o.confs[se.Index], se.Err)
		}
		if err != nil {
			return badInput(fmt.Errorf("%s: %w", snaps[0], err))
		}
		return report.Write(cc.stdout, formatOf(o.json), &report.WhatIf{Source: cc.shown(snaps[0]), Devices: devs})
	}
}
