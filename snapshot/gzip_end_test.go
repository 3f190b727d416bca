package snapshot

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

// TestDamagedEnd: a gzip file with a wrong checksum or length, and bytes
// after the snapshot's end (raw or inside or after the gzip stream), decode
// with a warning saying so.
func TestDamagedEnd(t *testing.T) {
	gz := mustRead(t, "testdata/snap_p4.pickle.gz")
	raw := mustRead(t, "testdata/snap_p4.pickle")
	flip := func(b []byte, i int) []byte { b = bytes.Clone(b); b[i] ^= 0x55; return b }
	tests := []struct {
		name string
		data []byte
		kind string
		want string
	}{
		{"gzip checksum", flip(gz, len(gz)-8), WarnLost, "gzip stream is damaged"},
		{"gzip length", flip(gz, len(gz)-2), WarnLost, "gzip stream is damaged"},
		{"garbage after gzip", append(bytes.Clone(gz), "garbage"...), WarnTrailing, "after the end of the gzip stream"},
		{"garbage after STOP", append(bytes.Clone(raw), "garbage"...), WarnTrailing, "7 bytes after the pickle's end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Decode(bytes.NewReader(tt.data), "d.pickle")
			if err != nil {
				t.Fatalf("Decode(%s) error %v, want a snapshot with a warning", tt.name, err)
			}
			for _, w := range s.Warnings {
				if w.Kind == tt.kind && strings.Contains(w.Message, tt.want) {
					return
				}
			}
			t.Errorf("Decode(%s) warnings %+v; want a %s one saying %q", tt.name, s.Warnings, tt.kind, tt.want)
		})
	}
}

// TestCleanEnd: whole files, gzipped or not, in every encoding, get no
// warning about their end.
func TestCleanEnd(t *testing.T) {
	for _, path := range []string{"testdata/snap_p4.pickle", "testdata/snap_p4.pickle.gz", "testdata/snap.json", "testdata/snap_trace_plot.html"} {
		for _, gz := range []bool{false, true} {
			data := mustRead(t, path)
			if gz {
				if data[0] == 0x1f {
					continue
				}
				var b bytes.Buffer
				zw := gzip.NewWriter(&b)
				zw.Write(data)
				zw.Close()
				data = b.Bytes()
			}
			s, err := Decode(bytes.NewReader(data), path)
			if err != nil {
				t.Fatalf("Decode(%s, gzip %v): %v", path, gz, err)
			}
			for _, w := range s.Warnings {
				if w.Kind == WarnTrailing || w.Kind == WarnLost {
					t.Errorf("Decode(%s, gzip %v): warning %q", path, gz, w.Message)
				}
			}
		}
	}
}
