package trace

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// memTrace is a trace of two ops and n memory events of 512 bytes each,
// event i's field field set to the raw JSON value bad[i] where given.
func memTrace(n int, bad map[int][2]string) string {
	var evs []string
	for i := range 2 {
		evs = append(evs, fmt.Sprintf(`{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":%d,"dur":5}`, 100+i*10))
	}
	for i := range n {
		ts, b := fmt.Sprint(200+i), "512"
		if f, ok := bad[i]; ok && f[0] == "ts" {
			ts = f[1]
		} else if ok {
			b = f[1]
		}
		evs = append(evs, fmt.Sprintf(`{"ph":"i","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"s":"t","ts":%s,`+
			`"args":{"Addr":%d,"Bytes":%s,"Total Allocated":%d,"Total Reserved":65536,"Device Type":1,"Device Id":0}}`, ts, 4096+i, b, 512*(i+1)))
	}
	return `{"traceEvents":[` + strings.Join(evs, ", ") + `]}`
}

// TestNonFinite: an event holding NaN or ±Infinity (Python's json writes
// them) where a number is needed is skipped with a warning naming it; the
// events after it are kept, the first memory event included. A trace
// whose every memory event holds one says so, not "record it with
// profile_memory=True".
func TestNonFinite(t *testing.T) {
	for _, c := range []struct {
		name string
		bad  map[int][2]string
		want string // in the warning
	}{
		{"first Bytes NaN", map[int][2]string{0: {"Bytes", "NaN"}}, `traceEvents[2] ("[memory]", Bytes is NaN)`},
		{"first ts NaN", map[int][2]string{0: {"ts", "NaN"}}, `traceEvents[2] ("[memory]", ts is NaN)`},
		{"middle Infinity", map[int][2]string{3: {"Bytes", "-Infinity"}, 5: {"Bytes", "Infinity"}}, `skipped 2 event(s) holding NaN or Infinity where a number is needed (the first: traceEvents[5] ("[memory]", Bytes is -Infinity))`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Decode(strings.NewReader(memTrace(8, c.bad)), "nan.json")
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got, want := len(tr.Memory), 8-len(c.bad); got != want {
				t.Errorf("%d memory events, want %d (each but the skipped)", got, want)
			}
			if err := tr.CheckValid(); err != nil {
				t.Error(err)
			}
			warned := false
			for _, w := range tr.Warnings {
				warned = warned || strings.Contains(w.Message, c.want)
			}
			if !warned {
				t.Errorf("warnings %v, want one with %q", tr.Warnings, c.want)
			}
		})
	}
	_, err := Decode(strings.NewReader(memTrace(2, map[int][2]string{0: {"Bytes", "NaN"}, 1: {"ts", "NaN"}})), "nan.json")
	if err == nil || strings.Contains(err.Error(), "profile_memory") || !strings.Contains(err.Error(), `2 event(s) hold NaN or Infinity where a number is needed (the first: traceEvents[2] ("[memory]", Bytes is NaN))`) {
		t.Errorf("every memory event NaN: error %v, want it to say they hold NaN", err)
	}
}

// TestCutBeforeMemory: a trace cut before its first memory event says it
// is damaged there, with the offset, not that the recording lacked
// profile_memory=True.
func TestCutBeforeMemory(t *testing.T) {
	full := memTrace(4, nil)
	cut := strings.Index(full, `[memory]`) - 30
	_, err := Decode(bytes.NewReader([]byte(full[:cut])), "cut.json")
	want := fmt.Sprintf("decoding cut.json at byte %d: the trace is damaged before its first [memory] event: unexpected end of file (truncated?)", cut)
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "profile_memory") {
		t.Errorf("Decode(cut at %d) = %v, want %q", cut, err, want)
	}
}

// TestHugeSizes: events whose sizes no device holds (five of 2^62 bytes,
// which summed wrap around int64) are skipped with a warning naming the
// first, the others kept; sizes that add up past 4 PiB are refused.
func TestHugeSizes(t *testing.T) {
	bad := map[int][2]string{}
	for i := 1; i <= 5; i++ {
		bad[i] = [2]string{"Bytes", fmt.Sprint(int64(1) << 62)}
	}
	tr, err := Decode(strings.NewReader(memTrace(8, bad)), "huge.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Memory) != 3 {
		t.Errorf("%d memory events kept, want 3", len(tr.Memory))
	}
	for _, m := range tr.Memory {
		if m.Bytes != 512 {
			t.Errorf("kept an event of %d bytes", m.Bytes)
		}
	}
	want := "skipped 5 [memory] event(s) with a size or total beyond any device (more than 16 TiB; the first: memory event 1 at 201 µs: Bytes 4611686018427387904"
	warned := false
	for _, w := range tr.Warnings {
		warned = warned || strings.Contains(w.Message, want)
	}
	if !warned {
		t.Errorf("warnings %v, want %q", tr.Warnings, want)
	}
	many := map[int][2]string{}
	for i := range 300 {
		many[i] = [2]string{"Bytes", fmt.Sprint(int64(1) << 44)}
	}
	_, err = Decode(strings.NewReader(memTrace(300, many)), "many.json")
	if err == nil || !strings.Contains(err.Error(), "sizes add up to more than 4503599627370496 bytes (4 PiB) by memory event 256") {
		t.Errorf("300 events of 16 TiB: error %v, want the sum refused", err)
	}
}
