package trace

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileRefusesPickle: an allocator snapshot (a pickle, plain or
// gzipped) given as a trace is named as one at byte 0, not "not JSON".
func TestProfileRefusesPickle(t *testing.T) {
	for _, p := range []string{filepath.Join(fixtureDir, "snapshot.pickle"), filepath.Join("..", "fixtures", "whatif-varlen", "default", "snapshot.pickle")} {
		_, err := OpenProfileWith(p, 0)
		if !errors.Is(err, ErrPickle) || !strings.Contains(err.Error(), "decoding snapshot.pickle at byte 0: a pickle") {
			t.Errorf("OpenProfileWith(%s) = %v, want ErrPickle at byte 0", p, err)
		}
	}
	if _, err := decodeProfile(strings.NewReader("\x80"), "one.json", -1, false); errors.Is(err, ErrPickle) {
		t.Errorf("one byte 0x80 is ErrPickle: want PROTO and a version")
	}
}
