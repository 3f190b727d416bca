package snapshot

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBudget: small gzip files that expand to far more than a real
// snapshot of their size holds are refused with a limit error that says
// how to raise it, before the memory is spent. The files are made here,
// streaming, not committed.
func TestBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads gigabytes of decompressed stream")
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		make func(t *testing.T, path string)
	}{
		{"1e8 memo references", memoFanOut},
		{"20 strings of 200 MiB", hugeStrings},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".pickle.gz")
			tt.make(t, path)
			st, _ := os.Stat(path)
			if st.Size() > 8<<20 {
				t.Fatalf("%s is %d bytes, want a few MB", path, st.Size())
			}
			s, err := Open(path)
			if err == nil || s != nil {
				t.Fatalf("Open(%s) = %v, %v; want a limit error", tt.name, s != nil, err)
			}
			if errKindOf(err) != kindLimit || !strings.Contains(err.Error(), "--max-memory") || strings.Contains(err.Error(), "\n") {
				t.Errorf("Open(%s) error %q (%v); want one line, a limit naming --max-memory", tt.name, err, errKindOf(err))
			}
			t.Logf("%s (%d bytes): %v", tt.name, st.Size(), err)
			// A budget given explicitly is the one applied.
			_, err = OpenWith(path, Options{MaxMemory: 1 << 20})
			if errKindOf(err) != kindLimit || !strings.Contains(err.Error(), "1.00 MiB of memory, the --max-memory limit") {
				t.Errorf("OpenWith(1 MiB) error %v; want the 1 MiB limit", err)
			}
		})
	}
}

// gzPart is plain data written times times into a gzip stream.
type gzPart struct {
	data  []byte
	times int
}

// writeGzip writes the parts as one gzip file, deflating each part once:
// raw deflate segments, each from a fresh compressor and sync-flushed,
// concatenate into one valid stream, so gigabytes of repeated data cost
// the time of compressing one copy.
func writeGzip(t *testing.T, path string, parts []gzPart) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	bw.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	crc, total := uint32(0), uint32(0) // ISIZE is the length mod 2^32
	for _, p := range parts {
		var b bytes.Buffer
		fw, _ := flate.NewWriter(&b, flate.BestCompression)
		fw.Write(p.data)
		fw.Flush()
		for range p.times {
			bw.Write(b.Bytes())
			crc = crc32.Update(crc, crc32.IEEETable, p.data)
			total += uint32(len(p.data))
		}
	}
	var last bytes.Buffer
	fw, _ := flate.NewWriter(&last, flate.BestCompression)
	fw.Close() // the final, empty block
	bw.Write(last.Bytes())
	binary.Write(bw, binary.LittleEndian, crc)
	binary.Write(bw, binary.LittleEndian, total)
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
}

// memoFanOut writes a snapshot whose one device trace is 10^8 references
// to one event dict: {"segments": [], "device_traces": [[ev, ev, …]]}.
func memoFanOut(t *testing.T, path string) {
	head := []byte{0x80, 4, '}', 0x94, '(', 0x8c, 8}
	head = append(head, "segments]\x94\x8c\x0ddevice_traces]\x94(]\x94("...)
	// the event: {"action": "alloc", "addr": 2^30, "size": 512}, memo 4
	head = append(head, "}\x94(\x8c\x06action\x8c\x05alloc\x8c\x04addrJ\x00\x00\x00\x40\x8c\x04sizeM\x00\x02u"...)
	batch := []byte{'('}
	for range 1000 {
		batch = append(batch, 'h', 4)
	}
	batch = append(batch, 'e')
	writeGzip(t, path, []gzPart{{head, 1}, {[]byte{'e'}, 1}, {batch, 1e5}, {[]byte("eu."), 1}})
}

// hugeStrings writes a snapshot holding a list of 20 distinct strings of
// 200 MiB and one byte, 4 GiB in all.
func hugeStrings(t *testing.T, path string) {
	const n, size = 20, 200 << 20
	run := bytes.Repeat([]byte{'a'}, 1<<20)
	parts := []gzPart{{append([]byte{0x80, 4, '}', '(', 0x8c, 8}, "segments]\x8c\x01x]("...), 1}}
	for i := range n {
		var h [10]byte
		h[0] = 0x8d
		binary.LittleEndian.PutUint64(h[1:], size+1)
		h[9] = byte('A' + i) // each string differs in its first byte
		parts = append(parts, gzPart{h[:], 1}, gzPart{run, size / len(run)})
	}
	parts = append(parts, gzPart{[]byte("eu."), 1})
	writeGzip(t, path, parts)
}
