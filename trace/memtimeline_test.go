package trace

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMemoryTimelineFilesAgree: torch wrote both files from one memory
// profile, so accumulating the raw events must give the coalesced series
// point for point.
func TestMemoryTimelineFilesAgree(t *testing.T) {
	js, err := OpenMemoryTimeline(filepath.Join(fixtureDir, "memory_timeline.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := OpenMemoryTimeline(filepath.Join(fixtureDir, "memory_timeline.raw.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if js.Raw || !raw.Raw {
		t.Errorf("Raw = %v, %v, want false for .json, true for .raw.json.gz", js.Raw, raw.Raw)
	}
	if len(js.TimesUS) < 100 || len(raw.TimesUS) != len(js.TimesUS) {
		t.Fatalf("len(TimesUS) = %d (raw), %d (json), want equal and > 100", len(raw.TimesUS), len(js.TimesUS))
	}
	for i := range js.TimesUS {
		if raw.TimesUS[i] != js.TimesUS[i] || raw.Bytes[i] != js.Bytes[i] {
			t.Fatalf("point %d: raw %d %v, json %d %v", i, raw.TimesUS[i], raw.Bytes[i], js.TimesUS[i], js.Bytes[i])
		}
		if got := raw.At(js.TimesUS[i]); i+1 < len(js.TimesUS) && js.TimesUS[i+1] != js.TimesUS[i] && got != js.Bytes[i] {
			t.Fatalf("raw.At(%d) = %v, want %v", js.TimesUS[i], got, js.Bytes[i])
		}
	}
	if got := js.At(js.TimesUS[0] - 1); got != (Sizes{}) {
		t.Errorf("At(before first) = %v, want zeros", got)
	}
	last := len(js.TimesUS) - 1
	if got := js.At(js.TimesUS[last] + 1e6); got != js.Bytes[last] {
		t.Errorf("At(after last) = %v, want %v", got, js.Bytes[last])
	}
}

// TestMemoryTimelineAgainstTrace: the profiler's category series counts
// tensor storage on cuda:0, a part of what the allocator had allocated, so
// its peak cannot exceed max_memory_allocated; its parameters and optimizer
// state, allocated before the window, are what the trace's first Total
// Allocated holds beyond the window's own allocations.
func TestMemoryTimelineAgainstTrace(t *testing.T) {
	_, want := loadFixture(t)
	js, err := OpenMemoryTimeline(filepath.Join(fixtureDir, "memory_timeline.json"))
	if err != nil {
		t.Fatal(err)
	}
	i, peak := js.Peak()
	if i < 0 || peak <= 0 || peak > want.Window.MaxAllocated {
		t.Errorf("Peak() = %d bytes at %d, want in (0, %d]", peak, i, want.Window.MaxAllocated)
	}
	if p := js.Bytes[i][Parameter]; p <= 0 {
		t.Errorf("PARAMETER bytes at peak = %d, want > 0", p)
	}
}

// TestMemoryTimelineGzip: a .json.gz holds the .json bytes compressed.
func TestMemoryTimelineGzip(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(fixtureDir, "memory_timeline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(b)
	w.Close()
	plain, err := DecodeMemoryTimeline(bytes.NewReader(b), "mt.json")
	if err != nil {
		t.Fatal(err)
	}
	zipped, err := DecodeMemoryTimeline(&z, "mt.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Bytes) != len(zipped.Bytes) || plain.Bytes[len(plain.Bytes)-1] != zipped.Bytes[len(zipped.Bytes)-1] {
		t.Errorf("DecodeMemoryTimeline(gzip) differs from the plain file")
	}
}

// TestMemoryTimelineSmall covers the shapes and the accumulation rules on
// hand-made inputs.
func TestMemoryTimelineSmall(t *testing.T) {
	tests := []struct {
		name, in string
		times    []int64
		total    []int64
		err      string
	}{
		{name: "coalesced", in: `[[5, 7], [[0, 1, 0, 0, 0, 0, 0, 0, 2], [0, 1, 0, 0, 4, 0, 0, 0, 2]]]`,
			times: []int64{5, 7}, total: []int64{3, 7}},
		{name: "raw-preexisting-at-min", in: `[[-1, 1, 100, 0], [2000999, 2, 8, 3], [2000001, 2, 1, 4], [3000000, 4, -8, 3]]`,
			times: []int64{2000, 2000, 3000}, total: []int64{100, 109, 101}},
		{name: "raw-one-row", in: `[[1000, 2, 5, 7]]`, times: []int64{1}, total: []int64{5}},
		{name: "empty", in: `[]`},
		{name: "empty-file", in: ``, err: "empty file"},
		{name: "object", in: `{"times": []}`, err: "not a memory timeline"},
		{name: "bad-columns", in: `[[1], [[1, 2, 3]]]`, err: "3 columns, want 9"},
		{name: "bad-category", in: `[[1, 2, 3, 9]]`, err: "category 9"},
		{name: "not-numbers", in: `[["a", 1]]`, err: "not a number"},
		{name: "truncated", in: `[[1, 2, 3, 4], [5, 6`, err: "at byte"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ct, err := DecodeMemoryTimeline(strings.NewReader(tc.in), tc.name)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.name) {
					t.Fatalf("DecodeMemoryTimeline(%s) error = %v, want one naming the file and saying %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeMemoryTimeline(%s) error: %v", tc.in, err)
			}
			var total []int64
			for _, s := range ct.Bytes {
				total = append(total, s.Total())
			}
			if len(ct.TimesUS) != len(tc.times) || len(total) != len(tc.total) {
				t.Fatalf("DecodeMemoryTimeline(%s) = %v %v, want %v %v", tc.in, ct.TimesUS, total, tc.times, tc.total)
			}
			for i := range tc.times {
				if ct.TimesUS[i] != tc.times[i] || total[i] != tc.total[i] {
					t.Fatalf("DecodeMemoryTimeline(%s) = %v %v, want %v %v", tc.in, ct.TimesUS, total, tc.times, tc.total)
				}
			}
		})
	}
}

// TestDecodeProfile: a file given as a trace is told apart by its first
// bytes: an array whose first element is an array is a memory timeline,
// anything else a Chrome trace.
func TestDecodeProfile(t *testing.T) {
	gz := func(s string) string {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write([]byte(s))
		w.Close()
		return z.String()
	}
	for _, tc := range []struct {
		name, in string
		timeline bool
		err      string
	}{
		{"coalesced", " \n[ [5, 7], [[0, 1, 0, 0, 0, 0, 0, 0, 2], [0, 1, 0, 0, 4, 0, 0, 0, 2]]]", true, ""},
		{"raw-gzip", gz(`[[-1, 1, 100, 0], [2000999, 2, 8, 3]]`), true, ""},
		{"trace-object", synthTrace("object"), false, ""},
		{"trace-array", synthTrace("array"), false, ""},
		{"trace-gzip", gz(synthTrace("object")), false, ""},
		{"empty-array", `[]`, false, "not a Chrome trace"},
		{"bad-timeline", `[[1, 2, 3, 9]]`, true, "category 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := DecodeProfile(strings.NewReader(tc.in), tc.name)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.name) {
					t.Fatalf("DecodeProfile(%s) error = %v, want one naming the file and saying %q", tc.name, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeProfile(%s) error: %v", tc.name, err)
			}
			if (p.Timeline != nil) != tc.timeline || (p.Trace != nil) == tc.timeline {
				t.Errorf("DecodeProfile(%s) = timeline %v, trace %v; want timeline %v", tc.name, p.Timeline != nil, p.Trace != nil, tc.timeline)
			}
		})
	}
}

// TestTimelineSummaryAndKeep: the summary's peak, maxima and end, a sample
// inside and outside, and Keep's bound that keeps the peak.
func TestTimelineSummaryAndKeep(t *testing.T) {
	ct := &CategoryTimeline{}
	for i := range 10000 {
		var s Sizes
		s[Parameter] = 100
		s[Activation] = int64(i % 97)
		if i == 5001 {
			s[Gradient] = 1000
		}
		ct.TimesUS = append(ct.TimesUS, int64(1000+i))
		ct.Bytes = append(ct.Bytes, s)
	}
	sum := ct.Summary()
	if sum.Points != 10000 || sum.PeakIndex != 5001 || sum.PeakUS != 6001 || sum.AtPeak.Total() != 1100+5001%97 ||
		sum.Max[Activation] != 96 || sum.Max[Gradient] != 1000 || sum.End.Total() != 100+9999%97 || sum.StartUS != 1000 || sum.EndUS != 10999 {
		t.Errorf("Summary() = %+v", sum)
	}
	if s := ct.Sample(6001); !s.Covered || s.Bytes != ct.Bytes[5001] || s.FirstUS != 1000 || s.LastUS != 10999 {
		t.Errorf("Sample(6001) = %+v, want point 5001, covered", s)
	}
	if s := ct.Sample(20000); s.Covered || s.Bytes != ct.Bytes[9999] {
		t.Errorf("Sample(after) = %+v, want the last point, not covered", s)
	}
	keep := ct.Keep(400)
	if len(keep) > 400 || len(keep) < 100 || keep[0] != 0 || keep[len(keep)-1] != 9999 || !slices.Contains(keep, 5001) || !slices.IsSorted(keep) {
		t.Errorf("Keep(400) = %d indexes (first %d, last %d, peak kept %v), want ≤ 400, increasing, with the ends and the peak",
			len(keep), keep[0], keep[len(keep)-1], slices.Contains(keep, 5001))
	}
	if got := (&CategoryTimeline{}).Summary(); got.PeakIndex != -1 || got.Points != 0 {
		t.Errorf("empty Summary() = %+v, want PeakIndex -1", got)
	}
}
