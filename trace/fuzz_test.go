package trace

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memscope/memscope/internal/testenv"
)

// FuzzDecode feeds arbitrary bytes to Decode: it must return an error or a
// trace that passes CheckValid, and the analyses must run on it, never
// panicking. Seeds: testdata/fuzz/FuzzDecode (cut from the fixture with
// testdata/cut_fixture.py) and the synthetic trace in its three shapes;
// they are kept small so that minimizing new inputs stays quick.
func FuzzDecode(f *testing.F) {
	testenv.FuzzMinimize(f, 2*time.Second)
	for _, form := range []string{"object", "base-last", "array"} {
		f.Add([]byte(synthTrace(form)))
	}
	for _, s := range hostileTraces() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Decode(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "decoding fuzz.json") || strings.Contains(msg, "\n") {
				t.Fatalf("Decode() error = %q, want one line starting with the file name", msg)
			}
			return
		}
		if err := tr.CheckValid(); err != nil {
			t.Fatalf("Decode() gave an invalid trace: %v", err)
		}
		dev := tr.PeakDevice()
		tr.OpTable(dev, true)
		tr.ModuleTable(dev)
		tr.KeyAverages()
		tr.Series(dev)
		for i := range tr.Memory {
			tr.Label(tr.Memory[i].Op)
		}
	})
}

// FuzzMemoryTimeline does the same for DecodeMemoryTimeline and for
// DecodeProfile, which tells a timeline from a trace.
func FuzzMemoryTimeline(f *testing.F) {
	f.Add([]byte(`[[5, 7], [[0, 1, 0, 0, 0, 0, 0, 0, 2], [0, 1, 0, 0, 4, 0, 0, 0, 2]]]`))
	f.Add([]byte(`[[-1, 1, 100, 0], [2000999, 2, 8, 3], [3000000, 4, -8, 3]]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if p, err := DecodeProfile(bytes.NewReader(data), "fuzz.json"); err == nil && (p.Trace == nil) == (p.Timeline == nil) {
			t.Fatalf("DecodeProfile = %+v, want exactly one of Trace and Timeline", p)
		}
		ct, err := DecodeMemoryTimeline(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			return
		}
		ct.Summary()
		ct.Keep(8)
		if len(ct.TimesUS) != len(ct.Bytes) {
			t.Fatalf("len(TimesUS) = %d, len(Bytes) = %d, want equal", len(ct.TimesUS), len(ct.Bytes))
		}
		ct.Peak()
		if len(ct.TimesUS) > 0 {
			ct.At(ct.TimesUS[0])
		}
	})
}

// TestWindowFixture decodes the cut-down fixture the fuzz seeds come from.
func TestWindowFixture(t *testing.T) {
	tr, err := Open(filepath.Join("testdata", "llama-window.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.CheckValid(); err != nil {
		t.Fatalf("CheckValid() = %v", err)
	}
	if len(tr.Memory) < 20 || len(tr.Flows) == 0 {
		t.Errorf("window has %d memory events and %d flows, want ≥ 20 and > 0", len(tr.Memory), len(tr.Flows))
	}
}

// hostileTraces are small traces of the hostile shapes: NaN and Infinity
// where numbers are needed, sizes that would wrap a total, times running
// backwards, deep nesting in args, a long name, one event cut short.
func hostileTraces() []string {
	nan := memTrace(3, map[int][2]string{0: {"Bytes", "NaN"}, 2: {"ts", "-Infinity"}})
	huge := memTrace(3, map[int][2]string{0: {"Bytes", "4611686018427387904"}, 1: {"Bytes", "-9223372036854775808"}})
	back := memTrace(3, map[int][2]string{1: {"ts", "1"}, 2: {"ts", "-5"}})
	deep := `{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","ts":1,"dur":2,"args":{"Input Dims":` +
		strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}}]}`
	long := `{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"` + strings.Repeat("x", 600) + `","ts":1,"dur":2}]}`
	return []string{nan, huge, back, deep, long, back[:len(back)/2]}
}
