package jsonlimit

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReader(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name, in string
		wantAt   int64 // -1: no error
	}{
		{"short tokens", `{"a": [1, 2.5, true, null, "b\"c"]}`, -1},
		{"long string", `{"a": "` + long + `"}`, 6},
		{"long string with escapes", `["\"` + long + `\\"]`, 1},
		{"escaped quote does not end it", `["` + strings.Repeat(`\"`, 40) + `"]`, 1},
		{"long number", `[1, ` + strings.Repeat("9", 100) + `]`, 4},
		{"long string under the limit", `["` + long[:64] + `", "` + long[:64] + `"]`, -1},
		{"structure inside a string is text", `["` + strings.Repeat("{,:", 30) + `"]`, 1},
	}
	for _, tt := range tests {
		for _, chunked := range []bool{false, true} {
			var src io.Reader = strings.NewReader(tt.in)
			if chunked {
				src = iotest.OneByteReader(src)
			}
			r := &Reader{R: src, Max: 64, What: "the test's limit"}
			_, err := io.ReadAll(r)
			switch {
			case tt.wantAt < 0 && err != nil:
				t.Errorf("%s (one byte at a time: %v): %v; want no error", tt.name, chunked, err)
			case tt.wantAt >= 0 && (err == nil || !strings.Contains(err.Error(), "at byte "+itoa(tt.wantAt)+" is longer than 64 B, the test's limit")):
				t.Errorf("%s (one byte at a time: %v): error %v; want one at byte %d", tt.name, chunked, err, tt.wantAt)
			}
		}
	}
}

func itoa(n int64) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}
