package allocator

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
)

// Constants of c10/core/AllocatorConfig.h and CUDACachingAllocator.cpp.
const (
	MinBlockSize  = 512      // kMinBlockSize: every block is a multiple of this
	SmallSize     = 1 << 20  // kSmallSize: the largest request of the small pool
	SmallBuffer   = 2 << 20  // kSmallBuffer: a small-pool segment; an expandable small-pool page
	MinLargeAlloc = 10 << 20 // kMinLargeAlloc: requests below this share a large segment
	RoundLarge    = 2 << 20  // kRoundLarge: large segments are multiples of this
	LargeBuffer   = 20 << 20 // kLargeBuffer: the default large segment and oversize rounding

	// NoLimit is MaxSplitSize when no max_split_size_mb is set (SIZE_MAX).
	NoLimit = math.MaxInt64

	mib = 1 << 20
)

// TieBreak says how the free-block set orders blocks of one stream and one
// size: which of two equal-size free blocks best fit takes (ALLOCATOR.md §3.5).
type TieBreak uint8

const (
	// TieAddress is (stream, size, address): torch up to March 2026,
	// torch 2.11 included (the fixtures show it).
	TieAddress TieBreak = iota
	// TieSegmentCounter is (stream, size, segment creation counter,
	// address): torch main since PR #183591.
	TieSegmentCounter
	// TieBlockCounter is (stream, size, per-Block registration counter):
	// PR #178362 to PR #182929.
	TieBlockCounter
)

func (t TieBreak) String() string {
	switch t {
	case TieAddress:
		return "address"
	case TieSegmentCounter:
		return "segment-counter"
	case TieBlockCounter:
		return "block-counter"
	}
	return "unknown"
}

// Settings are the allocator options that change its decisions. The zero
// value is not valid; start from DefaultSettings.
type Settings struct {
	MaxSplitSize        int64     // bytes; NoLimit when unset
	MaxNonSplitRounding int64     // bytes an oversize request may round up by (default 20 MiB)
	Divisions           [16]int64 // roundup_power2_divisions per interval: [1,2) MiB (and below), [2,4) MiB, … [32,64) GiB and above
	GCThreshold         float64   // garbage_collection_threshold; 0 is off
	Expandable          bool      // expandable_segments
	LargeSegmentSize    int64     // large_segment_size_mb in bytes (default 20 MiB)
	// MemoryFraction is torch.cuda.set_per_process_memory_fraction (0: not
	// set, no limit). With DeviceTotal it gives allowed_memory_maximum.
	MemoryFraction float64
	// DeviceTotal is the device's total memory in bytes (0: unknown). It
	// sizes an expandable segment's address space (1.125 × total) and the
	// memory fraction.
	DeviceTotal int64
	// Async is backend:cudaMallocAsync: no caching allocator to model.
	Async    bool
	TieBreak TieBreak
}

// DefaultSettings returns torch 2.11's defaults (AllocatorConfig.cpp).
func DefaultSettings() Settings {
	return Settings{
		MaxSplitSize:        NoLimit,
		MaxNonSplitRounding: LargeBuffer,
		LargeSegmentSize:    LargeBuffer,
	}
}

// allowedMax is allowed_memory_maximum: set only for a fraction below 1 of
// a known device size.
func (s *Settings) allowedMax() (int64, bool) {
	if s.MemoryFraction <= 0 || s.MemoryFraction >= 1 || s.DeviceTotal <= 0 {
		return 0, false
	}
	return int64(s.MemoryFraction * float64(s.DeviceTotal)), true
}

// DivisionsFor returns roundup_power2_divisions(size).
func (s *Settings) DivisionsFor(size int64) int64 {
	if size <= 0 {
		return s.Divisions[0]
	}
	logSize := 63 - bits.LeadingZeros64(uint64(size))
	i := max(logSize-20, 0)
	return s.Divisions[min(i, len(s.Divisions)-1)]
}

// RoundSize is round_size: the block size a request of size bytes takes.
func (s *Settings) RoundSize(size int64) int64 {
	if size < MinBlockSize {
		return MinBlockSize
	}
	if d := s.DivisionsFor(size); d > 1 && size > MinBlockSize*d {
		return RoundupPower2NextDivision(size, d)
	}
	if size > math.MaxInt64-MinBlockSize {
		return size // beyond any device; callers refuse it
	}
	return (size + MinBlockSize - 1) / MinBlockSize * MinBlockSize
}

// RoundupPower2NextDivision is roundup_power2_next_division: size rounded
// up to the next of divisions equal steps between the powers of two around
// it (1200 with 4 divisions: 1280).
func RoundupPower2NextDivision(size, divisions int64) int64 {
	u := uint64(size)
	if size <= 0 || u&(u-1) == 0 {
		return size
	}
	floor := uint64(1) << (63 - bits.LeadingZeros64(u))
	step := floor >> (63 - bits.LeadingZeros64(uint64(max(divisions, 1))))
	if step == 0 {
		return int64(floor << 1)
	}
	low := u &^ (step - 1)
	if low == u {
		return size
	}
	return int64(low + step)
}

// AllocationSize is get_allocation_size: the segment a cudaMalloc for a
// rounded request of size bytes asks for.
func (s *Settings) AllocationSize(size int64) int64 {
	switch {
	case size <= SmallSize:
		return SmallBuffer
	case size < MinLargeAlloc:
		return s.LargeSegmentSize
	case size > math.MaxInt64-RoundLarge:
		return size
	}
	return (size + RoundLarge - 1) / RoundLarge * RoundLarge
}

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
func (s *Settings) ApplyConf(conf string) error {
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
			return fmt.Errorf("allocator option %s: %w", key, err)
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
		return fmt.Errorf("unknown option")
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
// options torch does not list separately; the listed values win.
func SettingsFromSnapshot(m map[string]any) (Settings, error) {
	s := DefaultSettings()
	if m == nil {
		return s, nil
	}
	if conf, ok := m["PYTORCH_CUDA_ALLOC_CONF"].(string); ok {
		if err := s.ApplyConf(conf); err != nil {
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
		bad := func() error { return fmt.Errorf("allocator_settings %s: unexpected value %v", k, v) }
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
				return fmt.Errorf("entry %q: %v", k, x)
			}
			s.Divisions[min(63-bits.LeadingZeros64(mb), len(s.Divisions)-1)] = n
		}
	case []any:
		for i, x := range v {
			n, ok := asInt(x)
			if !ok || n < 0 || i >= len(s.Divisions) {
				return fmt.Errorf("entry %d: %v", i, x)
			}
			s.Divisions[i] = n
		}
	default:
		n, ok := asInt(v)
		if !ok || n < 0 {
			return fmt.Errorf("unexpected value %v", v)
		}
		for i := range s.Divisions {
			s.Divisions[i] = n
		}
	}
	return nil
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
