package snapshot_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
)

// TestSalvageEveryCut: a two-device snapshot cut at every 211th byte keeps
// a valid prefix: the first segments, then whole device traces and the
// first entries of the one being read, never fewer entries for a later
// cut, each equal to the file's.
func TestSalvageEveryCut(t *testing.T) {
	var traces [][]map[string]any
	for d := range 2 {
		var tr []map[string]any
		for i := range 1500 { // more than one APPENDS batch
			addr := int64(1<<30 + d<<28 + (i%50)*4096)
			action := []string{"alloc", "free_requested", "free_completed"}[i%3]
			tr = append(tr, snapgen.Ev(action, addr, 4096, int64(10+i), snapgen.Frame("f", "m.py", i%7)))
		}
		traces = append(traces, tr)
	}
	var segs []map[string]any
	for i := range 40 {
		segs = append(segs, snapgen.Seg(int64(1<<40+i<<22), snapgen.Blk(4096, 4096, "inactive")))
	}
	top := map[string]any{"segments": segs, "device_traces": []any{traces[0], traces[1]}}
	var buf bytes.Buffer
	if err := snapgen.Plain(&buf, top); err != nil {
		t.Fatal(err)
	}
	plain, err := snapshot.Decode(&buf, "plain")
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset() // written again in torch's order: segments first
	if _, err := snapgen.Write(&buf, plain, 0); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	full, err := snapshot.Decode(bytes.NewReader(data), "full")
	if err != nil {
		t.Fatal(err)
	}
	kept, salvaged := 0, 0
	for cut := 0; cut < len(data)-1; cut += 211 {
		s, err := snapshot.Decode(bytes.NewReader(data[:cut]), "cut")
		if err == nil {
			t.Fatalf("cut at %d: no error", cut)
		}
		if s == nil {
			if salvaged > 0 {
				t.Fatalf("cut at %d: nothing kept after an earlier cut was salvaged: %v", cut, err)
			}
			continue
		}
		salvaged++
		n := len(s.Segments)
		for i := range s.Segments {
			if s.Segments[i].Address != full.Segments[i].Address {
				t.Fatalf("cut at %d: segment %d differs", cut, i)
			}
		}
		for d, tr := range s.Traces {
			for i := range tr {
				if tr[i] != full.Traces[d][i] {
					t.Fatalf("cut at %d: device %d entry %d = %+v, want %+v", cut, d, i, tr[i], full.Traces[d][i])
				}
			}
			n += len(tr)
		}
		if n < kept {
			t.Fatalf("cut at %d keeps %d segments and entries, an earlier cut %d", cut, n, kept)
		}
		kept = n
	}
	if kept < len(full.Segments)+len(full.Traces[0])+len(full.Traces[1])-10 {
		t.Errorf("the last cut keeps %d segments and entries of %d", kept, len(full.Segments)+len(full.Traces[0])+len(full.Traces[1]))
	}
	t.Logf("%d of %d cuts salvaged", salvaged, len(data)/211)
}

// TestSalvageJSONEveryCut: the same for a JSON snapshot (the form
// MemoryViz reads): a cut after the segments keeps them, whole device
// traces and the complete entries of the one being read, each equal to
// the file's, never fewer for a later cut, with a warning saying so.
func TestSalvageJSONEveryCut(t *testing.T) {
	var tr []any
	for i := range 300 {
		addr := int64(1<<30 + (i%50)*4096)
		action := []string{"alloc", "free_requested", "free_completed"}[i%3]
		tr = append(tr, map[string]any{"action": action, "addr": addr, "size": 4096, "stream": 0, "time_us": 10 + i,
			"frames": []any{map[string]any{"name": "f", "filename": "m.py", "line": i%7 + 1}}})
	}
	var segs []any
	for i := range 20 {
		segs = append(segs, map[string]any{"device": 0, "address": int64(1<<40 + i<<22), "total_size": 4096,
			"allocated_size": 0, "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "large",
			"blocks": []any{map[string]any{"size": 4096, "requested_size": 4096, "state": "inactive", "frames": []any{}}}})
	}
	// Keys in torch's order: segments first.
	var buf bytes.Buffer
	buf.WriteString(`{"segments": `)
	b, _ := json.Marshal(segs)
	buf.Write(b)
	buf.WriteString(`, "device_traces": [`)
	b, _ = json.Marshal(tr)
	buf.Write(b)
	buf.WriteString(`, `)
	buf.Write(b)
	buf.WriteString(`]}`)
	data := buf.Bytes()
	full, err := snapshot.Decode(bytes.NewReader(data), "full.json")
	if err != nil {
		t.Fatal(err)
	}
	kept, salvaged := 0, 0
	for cut := 1; cut < len(data)-1; cut += 97 {
		s, err := snapshot.Decode(bytes.NewReader(data[:cut]), "cut.json")
		if err == nil {
			t.Fatalf("cut at %d: no error", cut)
		}
		if s == nil {
			if salvaged > 0 {
				t.Fatalf("cut at %d: nothing kept after an earlier cut was salvaged: %v", cut, err)
			}
			continue
		}
		salvaged++
		if len(s.Warnings) == 0 || s.Warnings[len(s.Warnings)-1].Kind != snapshot.WarnLost {
			t.Fatalf("cut at %d: warnings %v, want one saying what was lost", cut, s.Warnings)
		}
		n := len(s.Segments)
		for i := range s.Segments {
			if s.Segments[i].Address != full.Segments[i].Address {
				t.Fatalf("cut at %d: segment %d differs", cut, i)
			}
		}
		for d, tr := range s.Traces {
			for i := range tr {
				if tr[i] != full.Traces[d][i] {
					t.Fatalf("cut at %d: device %d entry %d = %+v, want %+v", cut, d, i, tr[i], full.Traces[d][i])
				}
			}
			n += len(tr)
		}
		if n < kept {
			t.Fatalf("cut at %d keeps %d segments and entries, an earlier cut %d", cut, n, kept)
		}
		kept = n
	}
	if want := len(full.Segments) + len(full.Traces[0]) + len(full.Traces[1]) - 2; kept < want {
		t.Errorf("the last cut kept %d segments and entries, want at least %d", kept, want)
	}
}

// TestSalvageLastByte: a snapshot missing only its last byte (STOP) is
// kept whole, with the error and a warning saying what is missing, as a
// cut of more bytes keeps its valid part: on a generated snapshot and on
// real fixtures (protocol 4 with frames, and protocol 2).
func TestSalvageLastByte(t *testing.T) {
	paths := []string{"../fixtures/plain-record/snapshot.pickle", "../fixtures/llama-bf16/snapshot.pickle"}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if data[len(data)-1] != '.' {
			t.Fatalf("%s does not end in STOP", p)
		}
		full, err := snapshot.Decode(bytes.NewReader(data), p)
		if err != nil {
			t.Fatal(err)
		}
		s, err := snapshot.Decode(bytes.NewReader(data[:len(data)-1]), p)
		if err == nil || s == nil {
			t.Fatalf("%s without its last byte: snapshot %v, error %v; want the snapshot and an error", p, s != nil, err)
		}
		if !strings.Contains(err.Error(), "unexpected end of input") {
			t.Errorf("%s without its last byte: error %q, want it to say the input ended", p, err)
		}
		if len(s.Segments) != len(full.Segments) || len(s.Traces) != len(full.Traces) {
			t.Fatalf("%s without its last byte: %d segments, %d devices; want %d, %d", p, len(s.Segments), len(s.Traces), len(full.Segments), len(full.Traces))
		}
		for d := range full.Traces {
			if len(s.Traces[d]) != len(full.Traces[d]) {
				t.Errorf("%s without its last byte: device %d has %d entries, want %d", p, d, len(s.Traces[d]), len(full.Traces[d]))
			}
		}
		if err := s.CheckValid(); err != nil {
			t.Errorf("%s without its last byte: %v", p, err)
		}
		lost := ""
		for _, w := range s.Warnings {
			if w.Kind == snapshot.WarnLost {
				lost = w.Message
			}
		}
		if want := fmt.Sprintf("at byte %d, before the pickle's STOP opcode", len(data)-1); !strings.Contains(lost, want) {
			t.Errorf("%s without its last byte: lost warning %q, want %q", p, lost, want)
		}
	}
}
