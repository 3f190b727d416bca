package allocator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

func TestRoundSize(t *testing.T) {
	def := DefaultSettings()
	d4 := DefaultSettings()
	for i := range d4.Divisions {
		d4.Divisions[i] = 4
	}
	for _, c := range []struct {
		s    *Settings
		in   int64
		want int64
	}{
		{&def, 0, 512}, {&def, 1, 512}, {&def, 512, 512}, {&def, 513, 1024},
		{&def, 1200, 1536}, {&def, 3<<20 + 1, 3<<20 + 512},
		{&d4, 1200, 1536},                 // not above 512 × 4: plain 512 rounding
		{&d4, 3<<20 + 1, 3<<20 + 512<<10}, // steps of 512 KiB between 2 and 4 MiB
		{&d4, 4 << 20, 4 << 20},           // a power of two stays
		{&d4, 5000, 5120},                 // 4096..8192 in steps of 1024
	} {
		if got := c.s.RoundSize(c.in); got != c.want {
			t.Errorf("RoundSize(%d) with divisions %d = %d, want %d", c.in, c.s.Divisions[0], got, c.want)
		}
	}
	// The source's own example.
	if got := snapshot.RoundupPower2NextDivision(1200, 4); got != 1280 {
		t.Errorf("RoundupPower2NextDivision(1200, 4) = %d, want 1280", got)
	}
	if got := snapshot.RoundupPower2NextDivision(1024, 4); got != 1024 {
		t.Errorf("RoundupPower2NextDivision(1024, 4) = %d, want 1024", got)
	}
	// One division finer than the interval: step 0, the next power of two.
	if got := snapshot.RoundupPower2NextDivision(3, 4); got != 4 {
		t.Errorf("RoundupPower2NextDivision(3, 4) = %d, want 4", got)
	}
	// Per-interval divisions: [256:1,512:2,1024:4,>:8]; the '>' fill
	// starts at the last interval named, overwriting it as torch does.
	s, err := ParseConf("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.DivisionsFor(600 << 20); got != 2 {
		t.Errorf("DivisionsFor(600 MiB) = %d, want 2", got)
	}
	if got := s.DivisionsFor(1100 << 20); got != 8 {
		t.Errorf("DivisionsFor(1100 MiB) = %d, want 8 ('>' overwrites 1024)", got)
	}
	if got := s.RoundSize(600<<20 + 1); got != 768<<20 {
		t.Errorf("RoundSize(600 MiB + 1) = %d, want 768 MiB", got)
	}
}

func TestAllocationSize(t *testing.T) {
	def := DefaultSettings()
	big := DefaultSettings()
	big.LargeSegmentSize = 64 << 20
	for _, c := range []struct {
		s        *Settings
		in, want int64
	}{
		{&def, 512, SmallBuffer}, {&def, 1 << 20, SmallBuffer}, {&def, 1<<20 + 512, 20 << 20},
		{&def, 10<<20 - 512, 20 << 20}, {&def, 10 << 20, 10 << 20}, {&def, 10<<20 + 512, 12 << 20},
		{&big, 3 << 20, 64 << 20}, {&big, 100 << 20, 100 << 20},
	} {
		if got := c.s.AllocationSize(c.in); got != c.want {
			t.Errorf("AllocationSize(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestShouldSplit(t *testing.T) {
	s := DefaultSettings()
	s.MaxSplitSize = 40 << 20
	a := New(s, newBump())
	small, large := a.pool(snapshot.PoolID{}, true), a.pool(snapshot.PoolID{}, false)
	for _, c := range []struct {
		p          *pool
		block      int64
		size       int64
		expandable bool
		want       bool
	}{
		{small, 2 << 20, 2<<20 - 512, false, true},   // 512 left: a block
		{small, 2 << 20, 2<<20 - 511, false, false},  // (not a real size) under 512 left
		{large, 20 << 20, 19 << 20, false, false},    // 1 MiB left stays inside
		{large, 20 << 20, 19<<20 - 512, false, true}, // more than 1 MiB left
		{large, 60 << 20, 40 << 20, false, false},    // an oversize request is never split
		{large, 20 << 20, 20<<20 - 512, true, true},  // expandable: 512 is enough
	} {
		b := &block{size: c.block, pool: c.p}
		if got := a.shouldSplit(b, c.size, c.expandable); got != c.want {
			t.Errorf("shouldSplit(%d-byte %s block, %d, expandable %v) = %v, want %v",
				c.block, map[bool]string{true: "small", false: "large"}[c.p.small], c.size, c.expandable, got, c.want)
		}
	}
}

func TestParseConf(t *testing.T) {
	s, err := ParseConf("max_split_size_mb:128, garbage_collection_threshold:0.6,expandable_segments:True," +
		"max_non_split_rounding_mb:256,roundup_power2_divisions:4,large_segment_size_mb:64,pinned_num_register_threads:8,backend:native")
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxSplitSize != 128<<20 || s.GCThreshold != 0.6 || !s.Expandable || s.MaxNonSplitRounding != 256<<20 ||
		s.Divisions[15] != 4 || s.LargeSegmentSize != 64<<20 || s.Async {
		t.Errorf("ParseConf = %+v", s)
	}
	if s, err := ParseConf(""); err != nil || s != DefaultSettings() {
		t.Errorf("ParseConf(\"\") = %+v, %v; want the defaults", s, err)
	}
	for conf, key := range map[string]string{
		"max_split_size_mb:10":                  "max_split_size_mb",
		"max_split_size_mb:lots":                "max_split_size_mb",
		"expandable_segments:maybe":             "expandable_segments",
		"garbage_collection_threshold:1.5":      "garbage_collection_threshold",
		"roundup_power2_divisions:3":            "roundup_power2_divisions",
		"roundup_power2_divisions:[100:2]":      "roundup_power2_divisions",
		"roundup_power2_divisions:[64:2":        "roundup_power2_divisions",
		"expandable_segments:True,max_splt:128": "max_splt",
		"backend:cuda":                          "backend",
		"max_non_split_rounding_mb":             "max_non_split_rounding_mb",
	} {
		_, err := ParseConf(conf)
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("ParseConf(%q) error = %v, want one naming %s", conf, err, key)
		}
	}
}

func TestSettingsFromSnapshot(t *testing.T) {
	div := map[string]any{}
	for mb := 1; mb <= 32768; mb *= 2 {
		div[fmt.Sprint(mb)] = int64(0)
	}
	div["256"] = int64(4)
	s, err := SettingsFromSnapshot(map[string]any{
		"PYTORCH_CUDA_ALLOC_CONF": "max_non_split_rounding_mb:64", "expandable_segments": true,
		"garbage_collection_threshold": int64(0), "max_split_size": int64(-1),
		"release_lock_on_cudamalloc": false, "roundup_power2_divisions": div,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Expandable || s.MaxSplitSize != NoLimit || s.MaxNonSplitRounding != 64<<20 || s.Divisions[8] != 4 || s.Divisions[7] != 0 {
		t.Errorf("SettingsFromSnapshot = %+v", s)
	}
	if s, err := SettingsFromSnapshot(map[string]any{"PYTORCH_CUDA_ALLOC_CONF": "some_future_option:1,expandable_segments:True"}); err != nil || !s.Expandable {
		t.Errorf("SettingsFromSnapshot(an option torch knows and this model does not) = %+v, %v; want it skipped", s, err)
	}
	if _, err := SettingsFromSnapshot(map[string]any{"max_split_size": "big"}); err == nil || !strings.Contains(err.Error(), "max_split_size") {
		t.Errorf("SettingsFromSnapshot(bad max_split_size) error = %v, want one naming it", err)
	}
}
