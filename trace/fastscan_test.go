package trace

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memscope/memscope/internal/testenv"
)

// decodeBoth decodes data with the fast event scanner and with jsontext
// alone (the reference path) and fails unless both give the same Profile
// (reflect.DeepEqual) or the same error message.
func decodeBoth(t testing.TB, data []byte, limit int64) { decodeSome(t, data, limit, -1) }

// decodeSome is decodeBoth comparing the reference with the fast path's
// chunk size pick only (mod their number), or with every one for pick < 0.
func decodeSome(t testing.TB, data []byte, limit int64, pick int) {
	t.Helper()
	slow, serr := decodeProfileMode(bytes.NewReader(data), "f.json", limit, false, -1)
	// 0: the sequential fast scanner; > 0: the parallel one, with chunks
	// small enough that the fixtures are cut into many.
	chunks := []int{0, 7, 300, 4096, fastChunk}
	if pick >= 0 {
		chunks = chunks[pick%len(chunks):][:1]
	}
	for _, chunk := range chunks {
		fast, ferr := decodeProfileMode(bytes.NewReader(data), "f.json", limit, false, chunk)
		if nonFiniteLiteral(data) && !reflect.DeepEqual(fast, slow) {
			// The fast path reads NaN and ±Infinity (Python's json writes
			// them) and skips the event holding one; jsontext, the
			// reference, stops there. The fast answer must be valid.
			if ferr == nil && fast.Trace != nil {
				if err := fast.Trace.CheckValid(); err != nil {
					t.Fatalf("chunk %d: with NaN or Infinity: %v", chunk, err)
				}
			}
			continue
		}
		if (ferr == nil) != (serr == nil) || ferr != nil && ferr.Error() != serr.Error() {
			t.Fatalf("chunk %d: fast error = %v, reference error = %v", chunk, ferr, serr)
		}
		if !reflect.DeepEqual(fast, slow) {
			if fast.Trace != nil && slow.Trace != nil {
				f, s := fast.Trace, slow.Trace
				t.Fatalf("chunk %d: fast and reference traces differ: events %d/%d, ops %d/%d, memory %d/%d, warnings %v / %v", chunk,
					f.Counts.Events, s.Counts.Events, len(f.Ops), len(s.Ops), len(f.Memory), len(s.Memory), f.Warnings, s.Warnings)
			}
			t.Fatalf("chunk %d: fast and reference profiles differ: %+v / %+v", chunk, fast, slow)
		}
	}
}

// nonFiniteLiteral reports whether data holds NaN or Infinity, which the
// fast path reads and jsontext refuses.
func nonFiniteLiteral(data []byte) bool {
	return bytes.Contains(data, []byte("NaN")) || bytes.Contains(data, []byte("Infinity"))
}

// traceInputs returns every trace fixture (fixtures/*/ and below, testdata,
// the fuzz seeds), decompressed, by name.
func traceInputs(t *testing.T) map[string][]byte {
	in := map[string][]byte{}
	var paths []string
	filepath.WalkDir(filepath.Join("..", "fixtures"), func(p string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() && strings.HasPrefix(de.Name(), "trace") && strings.Contains(de.Name(), ".json") {
			paths = append(paths, p)
		}
		return nil
	})
	more, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	paths = append(paths, more...)
	paths = append(paths, filepath.Join(fixtureDir, "memory_timeline.json"))
	if len(paths) < 5 {
		t.Fatalf("found only %v", paths)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		in[p] = b
	}
	seeds, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzDecode", "*"))
	big, _ := filepath.Glob(filepath.Join("testdata", "fuzzbig", "*"))
	for _, p := range append(seeds, big...) {
		if b, ok := readSeed(t, p); ok {
			in[p] = b
		}
	}
	for _, form := range []string{"object", "base-last", "array"} {
		in["synth-"+form] = []byte(synthTrace(form))
	}
	return in
}

// readSeed reads a one-value []byte corpus file of the fuzzer.
func readSeed(t *testing.T, path string) ([]byte, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(b), "\n", 3)
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "[]byte(") {
		return nil, false
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(lines[1]), "[]byte("), ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s), true
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// TestFastMatchesReference checks the fast event scanner against the
// jsontext path on every trace fixture, whole and cut short (10%, 50%,
// 90%), plain and gzipped (the gzip cut too), and with a bounded gzip
// expansion that stops inside the events.
func TestFastMatchesReference(t *testing.T) {
	for name, data := range traceInputs(t) {
		t.Run(filepath.Base(name), func(t *testing.T) {
			decodeBoth(t, data, -1)
			gz := gzipBytes(data)
			decodeBoth(t, gz, -1)
			decodeBoth(t, gz, int64(len(data)/2))
			for _, pct := range []int{10, 50, 90} {
				cut := data[:len(data)*pct/100]
				decodeBoth(t, cut, -1)
				decodeBoth(t, gz[:len(gz)*pct/100], -1)
				// Damage instead of an end: a stray byte at the cut.
				bad := append(append(bytes.Clone(cut), 'x'), data[len(cut):]...)
				decodeBoth(t, bad, -1)
			}
		})
	}
}

// TestFastEdgeCases covers what the fast path hands back to jsontext or
// must treat exactly as jsontext does.
func TestFastEdgeCases(t *testing.T) {
	mem := `{"ph":"i","name":"[memory]","pid":1,"tid":2,"ts":5,"args":{"Bytes":512,"Total Allocated":512,"Device Type":1,"Device Id":0,"Addr":16}}`
	op := `{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":2,"ts":1,"dur":10,"args":{"Sequence number":3,"Input Dims":[[1,2],[]]}}`
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	cases := []string{
		`{"traceEvents":[` + op + `,` + mem + `]}`,
		`[` + op + `,` + mem + `]`,
		`[` + op + `,` + mem + `,]`,
		`[` + op + `,` + mem + `5]`,
		`[` + op + `,` + mem + `,5,` + op + `]`,
		`[` + op + `,` + mem + `,{"ph":"X","args":` + deep + `}]`,
		`[` + op + `,` + mem + `,{"ph":"X","name":"a\u00e9\ud800\n\"","cat":"cpu_op","ts":"x","dur":1e3}]`,
		`[` + op + `,` + mem + `,{"ph":"X","name":"a` + "\x01" + `"}]`,
		`[` + op + `,` + mem + `,{"ph":"X","n":01}]`,
		`[` + op + `,` + mem + `,{"ph":"X","n":1.}]`,
		`[` + op + `,` + mem + `,{"ph":"X","n":-}]`,
		`[` + op + `,` + mem + `,{"ph":"X","n":tru}]`,
		`[` + op + `,` + mem + `,{"ph":"X","n":"\x"}]`,
		`[` + op + `,` + mem + `,{"ph":"X","n":"\u12g4"}]`,
		`[` + op + `,` + mem + `,{"ph":"X" "n":1}]`,
		`[` + op + `,` + mem + `,{"ph":"X",}]`,
		`[` + op + `,` + mem + `,{}, {"ph":"X","cat":"kernel","pid":"3","args":{"a":[{"b":null,"c":[true,false]}]}}]`,
		`{"traceEvents":[` + mem + `],"traceEvents":[` + op + `,` + mem + `],"baseTimeNanoseconds":7}`,
		`{"traceEvents":[` + mem + `]} x`,
		`{"traceEvents":[]}`,
		`{"traceEvents":[ ]   }`,
		`{"traceEvents":[` + mem,
		`{"traceEvents":[` + mem + `,`,
		`{"traceEvents":[` + mem + ` `,
	}
	for i, c := range cases {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			decodeBoth(t, []byte(c), -1)
			// Every cut near the end, where the cases differ; every 7th before.
			for n := range len(c) {
				if n%7 == 0 || n > len(c)-60 {
					decodeBoth(t, []byte(c[:n]), -1)
				}
			}
		})
	}
}

// TestFastLargeEvent checks events beyond the read buffer and beyond
// maxFastEvent.
func TestFastLargeEvent(t *testing.T) {
	mem := `{"ph":"i","name":"[memory]","pid":1,"tid":2,"ts":5,"args":{"Bytes":512,"Total Allocated":512,"Device Type":1,"Device Id":0,"Addr":16}}`
	for _, size := range []int{3 * fastBufSize, maxFastEvent + 10} {
		big := `{"ph":"X","cat":"cpu_op","name":"` + strings.Repeat("a", size) + `","ts":1,"dur":2}`
		decodeBoth(t, []byte(`{"traceEvents":[`+mem+`,`+big+`,`+mem+`]}`), -1)
	}
}

// FuzzFastDecode compares the fast event scanner with the jsontext path
// on arbitrary input: the same Profile or the same error.
func FuzzFastDecode(f *testing.F) {
	testenv.FuzzMinimize(f, 2*time.Second)
	for _, form := range []string{"object", "base-last", "array"} {
		f.Add([]byte(synthTrace(form)))
	}
	f.Add([]byte(`[{"ph":"X","cat":"cpu_op","name":"a\u00e9","pid":1,"tid":"2","ts":1,"dur":10,"args":{"Sequence number":3,"Input Dims":[[1,2],[]]}},` +
		`{"ph":"i","name":"[memory]","pid":1,"tid":2,"ts":5,"args":{"Bytes":512.5,"Total Allocated":"512","Device Type":1,"Device Id":0,"Addr":16}}]`))
	seeds, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzDecode", "*"))
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		lines := strings.SplitN(string(b), "\n", 3)
		if len(lines) >= 2 && strings.HasPrefix(lines[1], "[]byte(") {
			if s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(lines[1]), "[]byte("), ")")); err == nil {
				f.Add([]byte(s))
			}
		}
	}
	// One chunk size per input, picked by its length and last byte: the
	// five of decodeBoth made each input six decodes.
	f.Fuzz(func(t *testing.T, data []byte) {
		pick := len(data)
		if len(data) > 0 {
			pick += int(data[len(data)-1])
		}
		decodeSome(t, data, -1, pick)
	})
}
