package allocator

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/memscope/memscope/internal/textsafe"
)

// This file reads settings: PYTORCH_CUDA_ALLOC_CONF strings and a
// snapshot's allocator_settings.

// ParseConf returns the settings a PYTORCH_CUDA_ALLOC_CONF string gives,
// over the defaults.
func ParseConf(conf string) (Settings, error) {
	s := DefaultSettings()
	err := s.ApplyConf(conf)
	return s, err
}

// ApplyConf applies a PYTORCH_CUDA_ALLOC_CONF string ("key:value,…") to s.
// Options that do not change the allocator's decisions (pinned_*,
// release_lock_on_cudamalloc, …) are accepted and ignored; an unknown key
// or a bad value is an error naming the key.
func (s *Settings) ApplyConf(conf string) error { return s.applyConf(conf, false) }

// errUnknownOption is an option this model does not know.
var errUnknownOption = errors.New("unknown option")

// applyConf is ApplyConf; lenient skips unknown options, as torch does
// with the string it ran under.
func (s *Settings) applyConf(conf string, lenient bool) error {
	for _, item := range splitConf(conf) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, ok := strings.Cut(item, ":")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok {
			return fmt.Errorf("allocator option %q: no value (want key:value)", key)
		}
		if err := s.applyOption(key, val); err != nil {
			if lenient && errors.Is(err, errUnknownOption) {
				continue
			}
			return fmt.Errorf("allocator option %s: %w", textsafe.Escape(key), err)
		}
	}
	return nil
}

// splitConf splits at commas outside brackets.
func splitConf(conf string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range conf {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth <= 0 {
				out = append(out, conf[start:i])
				start = i + 1
			}
		}
	}
	return append(out, conf[start:])
}

func (s *Settings) applyOption(key, val string) error {
	switch key {
	case "max_split_size_mb":
		n, err := parseMB(val)
		if err != nil {
			return err
		}
		if n < LargeBuffer/mib {
			return fmt.Errorf("%d is below the minimum of %d", n, LargeBuffer/mib)
		}
		s.MaxSplitSize = n * mib
	case "max_non_split_rounding_mb":
		n, err := parseMB(val)
		if err != nil {
			return err
		}
		if n < LargeBuffer/mib {
			return fmt.Errorf("%d is below the minimum of %d", n, LargeBuffer/mib)
		}
		s.MaxNonSplitRounding = n * mib
	case "large_segment_size_mb":
		n, err := parseMB(val)
		if err != nil {
			return err
		}
		if n < LargeBuffer/mib {
			return fmt.Errorf("%d is below the minimum of %d", n, LargeBuffer/mib)
		}
		s.LargeSegmentSize = n * mib
	case "garbage_collection_threshold":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || !(f > 0 && f < 1) {
			return fmt.Errorf("%q is not a number in (0, 1)", val)
		}
		s.GCThreshold = f
	case "expandable_segments":
		b, err := parseBool(val)
		if err != nil {
			return err
		}
		s.Expandable = b
	case "roundup_power2_divisions":
		return s.parseDivisions(val)
	case "per_process_memory_fraction":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || !(f >= 0 && f <= 1) {
			return fmt.Errorf("%q is not a number in [0, 1]", val)
		}
		s.MemoryFraction = f
	case "backend":
		switch val {
		case "native":
			s.Async = false
		case "cudaMallocAsync":
			s.Async = true
		default:
			return fmt.Errorf("%q is neither native nor cudaMallocAsync", val)
		}
	case "release_lock_on_cudamalloc", "pinned_use_cuda_host_register", "pinned_use_background_threads",
		"graph_capture_record_stream_reuse", "throw_on_cudamalloc_oom", "pinned_use_hip_host_register":
		if _, err := parseBool(val); err != nil {
			return err
		}
	case "pinned_num_register_threads", "pinned_reserve_segment_size_mb", "pinned_max_register_threads":
		if _, err := strconv.ParseUint(val, 10, 32); err != nil {
			return fmt.Errorf("%q is not a count", val)
		}
	case "expandable_segments_handle_type":
	default:
		return errUnknownOption
	}
	return nil
}

func parseMB(val string) (int64, error) {
	n, err := strconv.ParseInt(val, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mib {
		return 0, fmt.Errorf("%q is not a size in MiB", val)
	}
	return n, nil
}

func parseBool(val string) (bool, error) {
	switch val {
	case "True", "true", "1":
		return true, nil
	case "False", "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not True or False", val)
}

// parseDivisions reads "4" (every interval) or "[64:8,256:4,>:1]" (per
// power-of-two MiB boundary, as parseRoundUpPower2Divisions does).
func (s *Settings) parseDivisions(val string) error {
	if !strings.HasPrefix(val, "[") {
		n, err := parseDivision(val)
		if err != nil {
			return err
		}
		for i := range s.Divisions {
			s.Divisions[i] = n
		}
		return nil
	}
	if !strings.HasSuffix(val, "]") {
		return fmt.Errorf("%q: no closing bracket", val)
	}
	last := 0
	for _, pair := range strings.Split(val[1:len(val)-1], ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if !ok {
			return fmt.Errorf("%q is not interval:divisions", pair)
		}
		n, err := parseDivision(v)
		if err != nil {
			return err
		}
		if k == ">" {
			for i := last; i < len(s.Divisions); i++ {
				s.Divisions[i] = n
			}
			continue
		}
		mb, err := strconv.ParseUint(k, 10, 64)
		if err != nil || mb == 0 || mb&(mb-1) != 0 {
			return fmt.Errorf("interval %q is not a power of two", k)
		}
		i := min(63-bits.LeadingZeros64(mb), len(s.Divisions)-1)
		if last == 0 {
			for j := 0; j < i; j++ {
				s.Divisions[j] = n
			}
		}
		s.Divisions[i] = n
		last = i
	}
	return nil
}

func parseDivision(v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 || n&(n-1) != 0 || n > 1<<20 {
		return 0, fmt.Errorf("divisions %q is not a power of two", v)
	}
	return n, nil
}

// SettingsFromSnapshot reads a snapshot's allocator_settings (nil: the
// defaults). Its PYTORCH_CUDA_ALLOC_CONF string is applied first, for the
// options torch does not list separately (options this model does not
// know are skipped: torch ran with them); the listed values win.
func SettingsFromSnapshot(m map[string]any) (Settings, error) {
	s := DefaultSettings()
	if m == nil {
		return s, nil
	}
	if conf, ok := m["PYTORCH_CUDA_ALLOC_CONF"].(string); ok {
		if err := s.applyConf(conf, true); err != nil {
			return s, fmt.Errorf("allocator_settings PYTORCH_CUDA_ALLOC_CONF: %w", err)
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		bad := func() error { return fmt.Errorf("allocator_settings %s: unexpected value %s", k, showValue(v)) }
		switch k {
		case "max_split_size":
			n, ok := asInt(v)
			switch {
			case !ok:
				return s, bad()
			case n < 0:
				s.MaxSplitSize = NoLimit
			case n < LargeBuffer:
				return s, bad() // torch refuses below 20 MiB
			default:
				s.MaxSplitSize = n
			}
		case "max_non_split_rounding_size":
			n, ok := asInt(v)
			if !ok || n < 0 {
				return s, bad()
			}
			s.MaxNonSplitRounding = n
		case "garbage_collection_threshold":
			f, ok := asFloat(v)
			if !ok || f < 0 || f >= 1 {
				return s, bad()
			}
			s.GCThreshold = f
		case "expandable_segments":
			b, ok := v.(bool)
			if !ok {
				return s, bad()
			}
			s.Expandable = b
		case "roundup_power2_divisions":
			if err := s.divisionsFromValue(v); err != nil {
				return s, fmt.Errorf("allocator_settings %s: %w", k, err)
			}
		}
	}
	return s, nil
}

func (s *Settings) divisionsFromValue(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			mb, err := strconv.ParseUint(k, 10, 64)
			n, ok := asInt(x)
			if err != nil || mb == 0 || mb&(mb-1) != 0 || !ok || n < 0 {
				return fmt.Errorf("entry %q: %s", k, showValue(x))
			}
			s.Divisions[min(63-bits.LeadingZeros64(mb), len(s.Divisions)-1)] = n
		}
	case []any:
		for i, x := range v {
			n, ok := asInt(x)
			if !ok || n < 0 || i >= len(s.Divisions) {
				return fmt.Errorf("entry %d: %s", i, showValue(x))
			}
			s.Divisions[i] = n
		}
	default:
		n, ok := asInt(v)
		if !ok || n < 0 {
			return fmt.Errorf("unexpected value %s", showValue(v))
		}
		for i := range s.Divisions {
			s.Divisions[i] = n
		}
	}
	return nil
}

// showValue writes a settings value from the snapshot for a message: a
// string quoted, anything else as Go prints it, control characters
// escaped either way (the file may be anyone's).
func showValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return textsafe.Escape(fmt.Sprint(v))
}

func asInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<62 {
			return int64(v), true
		}
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func asFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}
