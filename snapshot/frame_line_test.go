package snapshot

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/memscope/memscope/internal/pickle"
)

// Frames reached through C++ (THPVariable_subclass_dealloc when a tensor's
// last reference drops) carry line −1 written as unsigned: 2^64−1, which
// Python pickles as a 9-byte LONG1. pickle.load reads it; so must we. The
// model stores 0 ("no line"), the line C++ frames have everywhere else.

const (
	lineSegAddr = 0x7f3a00000000
	lineT0      = 1795969944824791
)

// cppLinePickle writes a protocol-4 snapshot shaped like torch 2.11's with
// stacks="all": one 2 MiB small segment holding a live 512-byte block, and
// a trace in which a second block is allocated from model.py:42 and freed
// through THPVariable_subclass_dealloc, whose line is 2^64−1. A third frame
// (a C++ allocator frame) has line −1 written signed. The C++ frame is one
// memoized dict shared by the two free entries, as torch shares them.
func cppLinePickle(t testing.TB) []byte {
	var buf bytes.Buffer
	w := pickle.NewWriter(&buf, 4)
	frame := func(name, file string, line func()) {
		w.Raw(pickle.EmptyDict)
		w.Dict(3, func(i int) {
			switch i {
			case 0:
				w.String("name")
				w.String(name)
			case 1:
				w.String("filename")
				w.String(file)
			case 2:
				w.String("line")
				line()
			}
		})
	}
	var dealloc uint32
	deallocFrames := func(first bool) { // [dealloc, forward]
		w.Raw(pickle.EmptyList)
		w.List(2, func(i int) {
			if i == 1 {
				frame("forward", "<repo>/model.py", func() { w.Int(42) })
				return
			}
			if first {
				frame("THPVariable_subclass_dealloc", "python_variable.cpp", func() { w.Uint(math.MaxUint64) })
				dealloc = w.Memoize()
			} else {
				w.Get(dealloc)
			}
		})
	}
	allocFrames := func() { // [malloc (line −1), forward]
		w.Raw(pickle.EmptyList)
		w.List(2, func(i int) {
			if i == 0 {
				frame("c10::cuda::CUDACachingAllocator::malloc", "CUDACachingAllocator.cpp", func() { w.Int(-1) })
			} else {
				frame("forward", "<repo>/model.py", func() { w.Int(42) })
			}
		})
	}
	item := func(k string, v func()) { w.String(k); v() }
	event := func(action string, addr, size, dt int64, frames func()) {
		w.Raw(pickle.EmptyDict)
		w.Dict(6, func(i int) {
			switch i {
			case 0:
				item("action", func() { w.String(action) })
			case 1:
				item("addr", func() { w.Int(addr) })
			case 2:
				item("size", func() { w.Int(size) })
			case 3:
				item("stream", func() { w.Int(0) })
			case 4:
				item("time_us", func() { w.Int(lineT0 + dt) })
			case 5:
				item("frames", frames)
			}
		})
	}
	block := func(addr, size, req int64, state string, frames func()) {
		w.Raw(pickle.EmptyDict)
		w.Dict(5, func(i int) {
			switch i {
			case 0:
				item("address", func() { w.Int(addr) })
			case 1:
				item("size", func() { w.Int(size) })
			case 2:
				item("requested_size", func() { w.Int(req) })
			case 3:
				item("state", func() { w.String(state) })
			case 4:
				item("frames", frames)
			}
		})
	}
	empty := func() { w.Raw(pickle.EmptyList) }
	w.Raw(pickle.EmptyDict)
	w.Dict(2, func(i int) {
		if i == 0 {
			w.String("segments")
			w.Raw(pickle.EmptyList)
			w.List(1, func(int) {
				w.Raw(pickle.EmptyDict)
				w.Dict(8, func(i int) {
					switch i {
					case 0:
						item("device", func() { w.Int(0) })
					case 1:
						item("address", func() { w.Int(lineSegAddr) })
					case 2:
						item("total_size", func() { w.Int(2 << 20) })
					case 3:
						item("allocated_size", func() { w.Int(512) })
					case 4:
						item("requested_size", func() { w.Int(400) })
					case 5:
						item("stream", func() { w.Int(0) })
					case 6:
						item("segment_type", func() { w.String("small") })
					case 7:
						item("blocks", func() {
							w.Raw(pickle.EmptyList)
							w.List(2, func(i int) {
								if i == 0 {
									block(lineSegAddr, 512, 400, "active_allocated", allocFrames)
								} else {
									block(lineSegAddr+512, 2<<20-512, 0, "inactive", empty)
								}
							})
						})
					}
				})
			})
			return
		}
		w.String("device_traces")
		w.Raw(pickle.EmptyList)
		w.List(1, func(int) {
			w.Raw(pickle.EmptyList)
			w.List(5, func(i int) {
				switch i {
				case 0:
					event("segment_alloc", lineSegAddr, 2<<20, 0, allocFrames)
				case 1:
					event("alloc", lineSegAddr, 400, 1, allocFrames)
				case 2:
					event("alloc", lineSegAddr+512, 1000, 2, allocFrames)
				case 3:
					event("free_requested", lineSegAddr+512, 1000, 3, func() { deallocFrames(true) })
				case 4:
					event("free_completed", lineSegAddr+512, 1000, 3, func() { deallocFrames(false) })
				}
			})
		})
	})
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFrameLineUnsigned decodes the snapshot with a 2^64−1 line: the frame
// keeps its name and file with line 0, the Python frame keeps its line, and
// gopickle's reading agrees.
func TestFrameLineUnsigned(t *testing.T) {
	data := cppLinePickle(t)
	if !bytes.Contains(data, []byte{pickle.Long1, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0}) {
		t.Fatal("the test pickle holds no 9-byte LONG1 of 2^64−1")
	}
	s, err := Decode(bytes.NewReader(data), "cpp_line.pickle")
	if err != nil {
		t.Fatalf("Decode error: %v", err)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("Warnings = %v, want none", s.Warnings)
	}
	ev := s.Traces[0]
	if len(ev) != 5 {
		t.Fatalf("len(Traces[0]) = %d, want 5", len(ev))
	}
	type fr struct {
		name, file string
		line       int64
	}
	frames := func(id StackID) []fr {
		var out []fr
		for _, f := range s.Stacks.Stack(id) {
			f := s.Stacks.Frame(f)
			out = append(out, fr{f.Name, f.Filename, f.Line})
		}
		return out
	}
	wantFree := []fr{{"THPVariable_subclass_dealloc", "python_variable.cpp", 0}, {"forward", "<repo>/model.py", 42}}
	wantAlloc := []fr{{"c10::cuda::CUDACachingAllocator::malloc", "CUDACachingAllocator.cpp", 0}, {"forward", "<repo>/model.py", 42}}
	for i, want := range [][]fr{wantAlloc, wantAlloc, wantAlloc, wantFree, wantFree} {
		if got := frames(ev[i].Stack); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Traces[0][%d] (%v) frames = %v, want %v", i, ev[i].Action, got, want)
		}
	}
	if ev[3].Stack != ev[4].Stack {
		t.Errorf("the two free entries' stacks = %d and %d, want one interned stack", ev[3].Stack, ev[4].Stack)
	}
	if got := frames(s.Segments[0].Blocks[0].Stack); fmt.Sprint(got) != fmt.Sprint(wantAlloc) {
		t.Errorf("block 0 frames = %v, want %v", got, wantAlloc)
	}
	if ev[2].Size != 1000 || ev[3].Addr != lineSegAddr+512 || ev[4].TimeUS != lineT0+3 {
		t.Errorf("free entry = %+v, want size 1000 at %#x, time %d", ev[3], lineSegAddr+512, lineT0+3)
	}

	tree, err := gopickleLoad(data)
	if err != nil {
		t.Fatalf("gopickle Load error: %v", err)
	}
	want, err := refView(tree, s.Format.String(), s.Protocol)
	if err != nil {
		t.Fatalf("reference conversion: %v", err)
	}
	var diffs []string
	compareTrees("cpp_line.pickle", view(s), want, &diffs)
	reportDiffs(t, diffs)
}

// TestFrameLineSeed checks that the fuzz seed is the test pickle above, so
// the corpus follows the writer.
func TestFrameLineSeed(t *testing.T) {
	const path = "testdata/fuzz/FuzzDecode/cpp_line_unsigned"
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", cppLinePickle(t))
	if string(got) != want {
		if os.Getenv("MEMSCOPE_WRITE_SEEDS") != "" {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s is not the pickle cppLinePickle writes; rerun with MEMSCOPE_WRITE_SEEDS=1 to rewrite it", path)
	}
}

// TestFrameLineJSON: the same line in a JSON snapshot (Mosaic's export
// writes Python's ints as they are) is read the same way.
func TestFrameLineJSON(t *testing.T) {
	const doc = `{"segments": [], "device_traces": [[{"action": "alloc", "addr": 4096, "size": 512,
		"frames": [{"name": "THPVariable_subclass_dealloc", "filename": "python_variable.cpp", "line": 18446744073709551615},
		           {"name": "forward", "filename": "<repo>/model.py", "line": 7}]}]]}`
	s, err := Decode(bytes.NewReader([]byte(doc)), "cpp_line.json")
	if err != nil {
		t.Fatalf("Decode error: %v", err)
	}
	var got []int64
	for _, f := range s.Stacks.Stack(s.Traces[0][0].Stack) {
		got = append(got, s.Stacks.Frame(f).Line)
	}
	if fmt.Sprint(got) != "[0 7]" {
		t.Errorf("frame lines = %v, want [0 7]", got)
	}
}

func TestLongValue(t *testing.T) {
	tests := []struct {
		b    []byte
		want value
		ok   bool
	}{
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0}, value{tag: tUint64, n: -1}, true},
		{[]byte{0, 0, 0, 0, 0, 0, 0, 0x80, 0}, value{tag: tUint64, n: math.MinInt64}, true},
		{[]byte{5, 0, 0, 0, 0, 0, 0, 0, 0}, intValue(5), true}, // not minimal
		{[]byte{0, 0, 0, 0, 0, 0, 0, 0x80, 0xff}, intValue(math.MinInt64), true},
		{[]byte{0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff}, value{}, false}, // −2^63 − 2^56
		{[]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, value{}, false},
		{[]byte{0xfe}, intValue(-2), true},
	}
	for _, tt := range tests {
		got, ok := longValue(tt.b)
		if got != tt.want || ok != tt.ok {
			t.Errorf("longValue(% x) = %+v, %v, want %+v, %v", tt.b, got, ok, tt.want, tt.ok)
		}
	}
}
