package pickle

import (
	"bytes"
	"encoding/hex"
	"math"
	"strings"
	"testing"
)

// The expected bytes below were printed by CPython 3.11's pickle.dumps.

func TestInt(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "4b00"}, {255, "4bff"}, {256, "4d0001"}, {65535, "4dffff"},
		{65536, "4a00000100"}, {-1, "4affffffff"}, {2147483647, "4affffff7f"},
		{2147483648, "8a050000008000"}, {-2147483648, "4a00000080"},
		{-2147483649, "8a05ffffff7fff"}, {9223372036854775807, "8a08ffffffffffffff7f"},
		{math.MinInt64, "8a080000000000000080"}, {139887084830720, "8a06000000003a7f"},
		{1795969944824791, "8a07d7ab96d66c6106"}, {-129, "4a7fffffff"}, {-128, "4a80ffffff"},
		{128, "4b80"}, {140737488355328, "8a0700000000008000"}, {-140737488355328, "8a06000000000080"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		w := NewWriter(&buf, 2)
		w.Int(tt.n)
		if err := w.Stop(); err != nil {
			t.Fatal(err)
		}
		got := hex.EncodeToString(buf.Bytes()[2 : buf.Len()-1])
		if got != tt.want {
			t.Errorf("Int(%d) = %s, want %s", tt.n, got, tt.want)
		}
	}
}

func TestUint(t *testing.T) {
	tests := []struct {
		u    uint64
		want string
	}{
		{math.MaxUint64, "8a09ffffffffffffffff00"}, {1 << 63, "8a09000000000000008000"},
		{1<<63 + 5, "8a09050000000000008000"}, {12345, "4d3930"},
		{math.MaxInt64, "8a08ffffffffffffff7f"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		w := NewWriter(&buf, 2)
		w.Uint(tt.u)
		if err := w.Stop(); err != nil {
			t.Fatal(err)
		}
		got := hex.EncodeToString(buf.Bytes()[2 : buf.Len()-1])
		if got != tt.want {
			t.Errorf("Uint(%d) = %s, want %s", tt.u, got, tt.want)
		}
	}
}

func TestContainers(t *testing.T) {
	tests := []struct {
		proto int
		want  string
	}{
		{4, "80049510000000000000005d94284b018c026162945d947d94652e"},
		{2, "80025d7100284b015802000000616271015d71027d7103652e"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		w := NewWriter(&buf, tt.proto) // [1, "ab", [], {}]
		w.Raw(EmptyList)
		w.Memoize()
		w.List(4, func(i int) {
			switch i {
			case 0:
				w.Int(1)
			case 1:
				w.String("ab")
				w.Memoize()
			case 2:
				w.Raw(EmptyList)
				w.Memoize()
			case 3:
				w.Raw(EmptyDict)
				w.Memoize()
			}
		})
		if err := w.Stop(); err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(buf.Bytes()); got != tt.want {
			t.Errorf("protocol %d: [1, \"ab\", [], {}] = %s, want %s", tt.proto, got, tt.want)
		}
	}
}

func TestFloat(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 4)
	w.Float(1.5)
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	if got, want := hex.EncodeToString(buf.Bytes()), "8004950a00000000000000473ff80000000000002e"; got != want {
		t.Errorf("Float(1.5) = %s, want %s", got, want)
	}
}

// TestFrames checks that a long list is cut into frames of about
// FrameTarget bytes and that a long string goes out unframed.
func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 4)
	w.Raw(EmptyList)
	w.Memoize()
	w.List(3000, func(i int) { w.String(strings.Repeat("x", 100)) })
	w.String(strings.Repeat("y", FrameTarget+1))
	w.Raw(Append)
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if int64(len(b)) != w.Len() {
		t.Errorf("Len() = %d, want %d", w.Len(), len(b))
	}
	frames := 0
	for pos := 2; pos < len(b); {
		if b[pos] != Frame {
			break // the unframed long string
		}
		n := int(b[pos+1]) | int(b[pos+2])<<8 | int(b[pos+3])<<16
		if n > FrameTarget+200 {
			t.Errorf("frame at %d holds %d bytes, want about %d", pos, n, FrameTarget)
		}
		frames++
		pos += 9 + n
	}
	if frames < 4 {
		t.Errorf("found %d frames before the long string, want at least 4", frames)
	}
}
