package allocator

import (
	"math"

	"github.com/memscope/memscope/snapshot"
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
	// MemoryLimit is the same cap in bytes (0: none); it wins over
	// MemoryFraction. A what-if uses it where the device's size is not
	// known.
	MemoryLimit int64
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

// allowedMax is allowed_memory_maximum: MemoryLimit, else set only for a fraction below 1 of
// a known device size.
func (s *Settings) allowedMax() (int64, bool) {
	if s.MemoryLimit > 0 {
		return s.MemoryLimit, true
	}
	if s.MemoryFraction <= 0 || s.MemoryFraction >= 1 || s.DeviceTotal <= 0 {
		return 0, false
	}
	return int64(s.MemoryFraction * float64(s.DeviceTotal)), true
}

// DivisionsFor returns roundup_power2_divisions(size) (snapshot.DivisionsFor).
func (s *Settings) DivisionsFor(size int64) int64 { return snapshot.DivisionsFor(size, &s.Divisions) }

// RoundSize is round_size: the block size a request of size bytes takes
// (snapshot.RoundSize, the rule the replay of snapshot sizes blocks by).
func (s *Settings) RoundSize(size int64) int64 { return snapshot.RoundSize(size, &s.Divisions) }

// Unround returns the smallest request the settings round to size: a
// request of size bytes under these settings was one of (lo-1, size]. A
// size round_size does not return (not a multiple of 512 or of its
// division) gives lo = size.
func (s *Settings) Unround(size int64) (lo int64) {
	if size <= 0 || s.RoundSize(size) != size {
		return size
	}
	// round_size is monotone: the least r in [1, size] with
	// round_size(r) == size.
	lo, hi := int64(1), size
	for lo < hi {
		mid := lo + (hi-lo)/2
		if s.RoundSize(mid) >= size {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
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
