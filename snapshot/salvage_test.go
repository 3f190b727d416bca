package snapshot

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSalvageNote: a snapshot cut in half, as a plain file and inside a
// gzip file, opens as its valid part; the note names the file's size (of
// the stream inside the gzip) and what was lost.
func TestSalvageNote(t *testing.T) {
	whole, err := os.ReadFile(filepath.Join("..", "fixtures", "llama-bf16", "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	cut := whole[:len(whole)/2]
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(cut)
	zw.Close()
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		data []byte
		gzip bool
		size string
	}{
		{"cut.pickle", cut, false, fmt.Sprintf("(the file has %d bytes)", len(cut))},
		{"cut.pickle.gz", gz.Bytes(), true, fmt.Sprintf("(of the stream inside a gzip file of %d bytes)", gz.Len())},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			if err := os.WriteFile(path, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			if IsGzip(path) != c.gzip {
				t.Errorf("IsGzip(%s) = %v, want %v", c.name, !c.gzip, c.gzip)
			}
			s, err := Open(path)
			if err == nil || s == nil || !s.Salvaged() {
				t.Fatalf("Open(%s) = %v, %v; want the valid part and an error", c.name, s != nil, err)
			}
			note := SalvageNote(path, s, err)
			if !strings.HasPrefix(note, err.Error()+" "+c.size+"; analysing the valid part: ") || strings.HasSuffix(note, ": ") {
				t.Errorf("SalvageNote() = %q, want the error, %s and what was lost", note, c.size)
			}
		})
	}
	if s, err := Open(filepath.Join("..", "fixtures", "llama-bf16", "snapshot.pickle")); err != nil || s.Salvaged() {
		t.Errorf("Open(whole) = %v, salvaged; want a whole snapshot", err)
	}
}

func TestCheckDevice(t *testing.T) {
	s, err := Open(filepath.Join("..", "fixtures", "llama-bf16", "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		device int
		want   string
	}{
		{-1, ""}, {0, ""}, {3, "--device 3: " + s.Source + " has no such device; it has device 0"},
	} {
		err := s.CheckDevice(c.device)
		if got := fmt.Sprint(err); c.want == "" && err != nil || c.want != "" && got != c.want {
			t.Errorf("CheckDevice(%d) = %v, want %q", c.device, err, c.want)
		}
	}
	for _, c := range []struct {
		devs []int
		want string
	}{{nil, "no device"}, {[]int{2}, "device 2"}, {[]int{0, 1, 3}, "devices 0, 1, 3"}} {
		if got := DeviceList(c.devs); got != c.want {
			t.Errorf("DeviceList(%v) = %q, want %q", c.devs, got, c.want)
		}
	}
}
