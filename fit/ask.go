package fit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/memscope/memscope/allocator"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// This file turns what 'memscope fit' is asked (its flags) into New's and
// Run's arguments; its errors are the command line's, worded for the flags.

// ParseBatches reads --batches, the batch of each of n files in their
// order: sizes of 1 or more, comma-separated.
func ParseBatches(s string, n int) ([]int, error) {
	var batches []int
	for _, f := range strings.Split(s, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b < 1 {
			return nil, fmt.Errorf("--batches %q: want batch sizes of 1 or more, comma-separated", s)
		}
		batches = append(batches, b)
	}
	if len(batches) != n {
		return nil, fmt.Errorf("--batches names %d batches for %d files", len(batches), n)
	}
	return batches, nil
}

// Cap is the cap a batch must fit under, in bytes, from --memory-limit
// (limit) or from --device-memory (gpu, Memory 0 when not given) less
// --overhead, and from says which in the answer's words.
func Cap(limit int64, gpu budget.GPU, overhead int64) (capacity int64, from string, err error) {
	switch {
	case limit > 0 && gpu.Memory > 0:
		return 0, "", errors.New("give --memory-limit or --device-memory, not both")
	case gpu.Memory > 0:
		name := gpu.Name
		if name == "" {
			name = units.Bytes(gpu.Memory)
		}
		if gpu.Memory-overhead <= 0 {
			return 0, "", fmt.Errorf("--device-memory %s less --overhead %s leaves nothing", units.Bytes(gpu.Memory), units.Bytes(overhead))
		}
		return gpu.Memory - overhead, fmt.Sprintf("%s less %s outside the allocator (--overhead)", name, units.Bytes(overhead)), nil
	case limit == 0:
		return 0, "", errors.New("fit needs the cap the batch must fit under: --memory-limit SIZE or --device-memory GPU")
	}
	return limit, "--memory-limit", nil
}

// Settings are the settings to search under: the recorded ones first
// (their Settings for Model.RecordedSettings to fill in), then each
// PYTORCH_CUDA_ALLOC_CONF of confs (--conf).
func Settings(confs []string) ([]Setting, error) {
	sets := []Setting{{}}
	for _, c := range confs {
		s, err := allocator.ParseConf(c)
		if err != nil {
			return nil, fmt.Errorf("--conf %q: %v", c, err)
		}
		sets = append(sets, Setting{Conf: c, Settings: s})
	}
	return sets, nil
}

// FirstDevice is device, or (device -1) the first device of s with
// recorded events, else 0.
func FirstDevice(s *snapshot.Snapshot, device int) int {
	if device >= 0 {
		return device
	}
	for d, evs := range s.Traces {
		if len(evs) > 0 {
			return d
		}
	}
	return 0
}
