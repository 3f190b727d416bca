package snapshot

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/pickle"
)

// errLine is the shape of every decoding error: one line naming the input
// and a byte offset.
var errLine = regexp.MustCompile(`^decoding (\S+) at byte (\d+): [^\n]+$`)

// pickleOf writes a protocol-4 pickle with build and returns its bytes.
func pickleOf(t *testing.T, build func(w *pickle.Writer)) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := pickle.NewWriter(&buf, 4)
	build(w)
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestBadInput(t *testing.T) {
	fixture, err := os.ReadFile("testdata/snap_p4.pickle")
	if err != nil {
		t.Fatal(err)
	}
	ordered, err := os.ReadFile("testdata/ordered_dict_p2.pickle")
	if err != nil {
		t.Fatal(err)
	}
	random := make([]byte, 4096)
	rand.New(rand.NewSource(1)).Read(random)
	random[0] = 0x80 // past the sniffing, into the unpickler
	random[1] = 4

	deepMarks := pickleOf(t, func(w *pickle.Writer) {
		for range 100000 {
			w.Raw(pickle.Mark, pickle.EmptyList)
		}
	})
	deepLists := pickleOf(t, func(w *pickle.Writer) {
		for range 100000 {
			w.Raw(pickle.EmptyList)
		}
		for range 99999 {
			w.Raw(pickle.Append)
		}
	})
	deepSettings := pickleOf(t, func(w *pickle.Writer) {
		w.Raw(pickle.EmptyDict)
		w.String("segments")
		w.Raw(pickle.EmptyList, pickle.SetItem)
		w.String("allocator_settings")
		for range 10000 {
			w.Raw(pickle.EmptyDict)
			w.String("x")
		}
		w.Raw(pickle.EmptyDict)
		for range 10000 {
			w.Raw(pickle.SetItem)
		}
		w.Raw(pickle.SetItem)
	})
	laughs := pickleOf(t, func(w *pickle.Writer) { // ten lists of ten refs: 10^10 leaves
		w.Raw(pickle.EmptyList, pickle.Mark)
		var prev uint32
		for level := range 10 {
			w.Raw(pickle.EmptyList)
			id := w.Memoize()
			w.Raw(pickle.Mark)
			for range 10 {
				if level == 0 {
					w.Int(1)
				} else {
					w.Get(prev)
				}
			}
			w.Raw(pickle.Appends)
			prev = id
		}
		w.Raw(pickle.Appends, pickle.EmptyDict)
		w.String("segments")
		w.Raw(pickle.EmptyList, pickle.SetItem)
		w.String("allocator_settings")
		w.Raw(pickle.EmptyDict)
		w.String("x")
		w.Get(prev)
		w.Raw(pickle.SetItem, pickle.SetItem)
	})
	uintAddr := pickleOf(t, func(w *pickle.Writer) { // {"segments": [], "device_traces": [[{"action": "alloc", "addr": 2^64−1}]]}
		w.Raw(pickle.EmptyDict, pickle.Mark)
		w.String("segments")
		w.Raw(pickle.EmptyList)
		w.String("device_traces")
		w.Raw(pickle.EmptyList, pickle.EmptyList, pickle.EmptyDict, pickle.Mark)
		w.String("action")
		w.String("alloc")
		w.String("addr")
		w.Uint(math.MaxUint64)
		w.Raw(pickle.SetItems, pickle.Append, pickle.Append, pickle.SetItems)
	})
	uintSetting := pickleOf(t, func(w *pickle.Writer) { // {"segments": [], "allocator_settings": {"x": 2^63}}
		w.Raw(pickle.EmptyDict, pickle.Mark)
		w.String("segments")
		w.Raw(pickle.EmptyList)
		w.String("allocator_settings")
		w.Raw(pickle.EmptyDict)
		w.String("x")
		w.Uint(1 << 63)
		w.Raw(pickle.SetItem, pickle.SetItems)
	})
	huge := func(op byte, n uint64, width int) []byte {
		b := []byte{pickle.Proto, 4, op}
		b = binary.LittleEndian.AppendUint64(b, n)[:3+width]
		return append(b, "abc"...)
	}

	tests := []struct {
		name    string
		data    []byte
		want    string // a substring of the message
		partial bool   // a partial snapshot comes with the error
	}{
		{"empty", nil, "empty input", false},
		{"truncated half", fixture[:len(fixture)/2], "truncated", true}, // salvaged, whatever the cut
		{"truncated after segments", truncateInTraces(t), "truncated", true},
		{"random bytes", random, "", false},
		{"not a pickle", []byte("PK\x03\x04zipfile"), "unrecognised format", false},
		{"GLOBAL", ordered, "opcode 0x63 (GLOBAL) refers to a Python class: not a memory snapshot", false},
		{"STACK_GLOBAL", mustRead(t, "testdata/ordered_dict_p4.pickle"), "(STACK_GLOBAL) refers to a Python class", false},
		{"REDUCE", []byte{0x80, 2, 'N', ')', 'R', '.'}, "(REDUCE) calls a Python object", false},
		{"100000 nested MARKs", deepMarks, "nested MARKs", false},
		{"100000 nested lists", deepLists, "want a list of segments", false},
		{"10000 nested settings dicts", deepSettings, "nests deeper than", false},
		{"settings of 10^10 shared values", laughs, "holds more than", false},
		{"BINUNICODE8 of 2^40 bytes", huge(pickle.BinUnicode8, 1<<40, 8), "longer than the", false},
		{"BINUNICODE of 2^31 bytes", huge(pickle.BinUnicode, 1<<31, 4), "longer than the", false},
		{"BINUNICODE past the end", huge(pickle.BinUnicode, 1<<20, 4), "only 3 bytes remain", false},
		{"FRAME past the end", huge(pickle.Frame, 1<<40, 8), "only 3 bytes remain", false},
		{"LONG1 of 9 bytes", []byte{0x80, 2, 0x8a, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, '.'}, "does not fit in 64 bits", false},
		{"LONG1 of 10 bytes", []byte{0x80, 2, 0x8a, 10, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, '.'}, "does not fit in 64 bits", false},
		{"LONG1 below -2^63", []byte{0x80, 2, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, '.'}, "does not fit in 64 bits", false},
		{"addr of 2^64-1", uintAddr, `trace entry: "addr" is 18446744073709551615, which does not fit in a signed 64-bit int`, false},
		{"setting of 2^63", uintSetting, "allocator_settings holds the int 9223372036854775808, which does not fit", false},
		{"undefined memo", []byte{0x80, 4, 'h', 7, '.'}, "memo index 7 is not defined", false},
		{"LONG_BINPUT far away", []byte{0x80, 2, 'N', 'r', 0xff, 0xff, 0xff, 0xff, '.'}, "not a memory snapshot", false},
		{"unknown opcode", []byte{0x80, 4, 0xf0}, "unknown opcode 0xf0", false},
		{"protocol 1", []byte{0x80, 1, '.'}, "protocol 1 is not supported", false},
		{"STOP on empty stack", []byte{0x80, 4, '.'}, "STOP needs more values", false},
		{"APPEND to an int", []byte{0x80, 4, 'K', 1, 'K', 2, 'a', '.'}, "APPEND into an int", false},
		{"odd SETITEMS", []byte{0x80, 4, '}', '(', 'K', 1, 'u', '.'}, "SETITEMS with a key but no value", false},
		{"a list of ints", []byte{0x80, 4, ']', '(', 'K', 1, 'K', 2, 'e', '.'}, "want a list of segments", false},
		{"a dict without segments", []byte{0x80, 4, '}', '.'}, "no \"segments\"", false},
		{"html without payload", []byte("<html>const local_files = []</html>"), "without an embedded snapshot", false},
		{"bad gzip", []byte{0x1f, 0x8b, 0, 0}, "gzip", false},
		{"damaged gzip", damagedGzip(t), "reading", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Decode(bytes.NewReader(tt.data), "bad.pickle")
			if err == nil {
				t.Fatalf("Decode(%s) = nil error, want one", tt.name)
			}
			msg := err.Error()
			if !errLine.MatchString(msg) || !strings.HasPrefix(msg, "decoding bad.pickle at byte ") {
				t.Errorf("Decode(%s) error = %q, want one line \"decoding bad.pickle at byte N: …\"", tt.name, msg)
			}
			if errKindOf(err) == kindInternal {
				t.Errorf("Decode(%s) hit an internal error: %v", tt.name, err)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("Decode(%s) error = %q, want it to contain %q", tt.name, msg, tt.want)
			}
			if (s != nil) != tt.partial {
				t.Errorf("Decode(%s) partial snapshot = %v, want %v", tt.name, s != nil, tt.partial)
			}
		})
	}
}

// damagedGzip returns the gzipped snapshot with a byte of its compressed
// data flipped.
func damagedGzip(t *testing.T) []byte {
	b := bytes.Clone(mustRead(t, "testdata/snap_p4.pickle.gz"))
	b[len(b)/2] ^= 0xff
	return b
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// truncateInTraces returns the synthetic snapshot cut in the middle of its
// device trace, after the segments.
func truncateInTraces(t *testing.T) []byte {
	b := mustRead(t, "testdata/synthetic.pickle")
	return b[:len(b)/2]
}

// TestTruncatedKeepsSegments checks the partial result of a file cut in
// its device trace: every segment, a prefix of the trace, and a warning.
func TestTruncatedKeepsSegments(t *testing.T) {
	full, err := Open("testdata/synthetic.pickle")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode(bytes.NewReader(truncateInTraces(t)), "cut.pickle")
	if err == nil || s == nil {
		t.Fatalf("Decode(cut) = %v, %v; want a partial snapshot and an error", s, err)
	}
	if len(s.Segments) != len(full.Segments) {
		t.Errorf("partial Segments = %d, want %d", len(s.Segments), len(full.Segments))
	}
	if len(s.Traces) != 1 || len(s.Traces[0]) == 0 || len(s.Traces[0]) >= len(full.Traces[0]) {
		t.Fatalf("partial Traces = %d lists, want 1 list shorter than %d", len(s.Traces), len(full.Traces[0]))
	}
	for i, e := range s.Traces[0] {
		if e != full.Traces[0][i] {
			t.Fatalf("partial Traces[0][%d] = %+v, want %+v", i, e, full.Traces[0][i])
		}
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0].Message, "ends early") {
		t.Errorf("partial Warnings = %v, want one saying the file ends early", s.Warnings)
	}
}

func TestDecodeLong(t *testing.T) {
	tests := []struct {
		b    []byte
		want int64
	}{
		{nil, 0}, {[]byte{0x7f}, 127}, {[]byte{0x80}, -128}, {[]byte{0xff}, -1},
		{[]byte{0x00, 0x80, 0x00}, 32768}, {[]byte{0x00, 0x00, 0x00, 0x80, 0x00}, 1 << 31},
		{[]byte{0xff, 0xff, 0xff, 0x7f, 0xff}, -(1 << 31) - 1},
		{[]byte{0, 0, 0, 0, 0, 0, 0, 0x80}, math.MinInt64},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := decodeLong(tt.b); got != tt.want {
			t.Errorf("decodeLong(% x) = %d, want %d", tt.b, got, tt.want)
		}
	}
}

// TestOpenNames checks that Open reports the path it was given.
func TestOpenNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cut.pickle")
	if err := os.WriteFile(path, []byte{0x80, 4, '}'}, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path)
	if err == nil || !strings.HasPrefix(err.Error(), "decoding "+path+" at byte 3: ") {
		t.Errorf("Open(%s) error = %v, want it to start \"decoding %s at byte 3: \"", path, err, path)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.pickle")); err == nil {
		t.Errorf("Open(missing) = nil error, want one")
	}
}
