package attribution

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sg "github.com/memscope/memscope/internal/snapgen"
	"github.com/memscope/memscope/snapshot"
	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// TestOOMCapAndStack: on the two OOM fixtures, made under
// set_per_process_memory_fraction, the post-mortem names the cap with a
// bracket that holds the limit torch's OOM observer reported, calls the
// OOM capacity (torch: a few MiB reserved but unallocated against a request
// of 128 or 256 MiB), and shows the failing request's site: the first user
// frame of the oom entry's frames as an independent unpickler reads them.
func TestOOMCapAndStack(t *testing.T) {
	type observed struct {
		Request    int64 `json:"request"`
		DeviceFree int64 `json:"device_free"`
		Limit      int64 `json:"device_limit"`
	}
	for _, tc := range []struct{ dir, truth string }{
		{"../fixtures/oom", "truth.json"},           // {"oom": {"observer": [...]}}
		{"../fixtures/capture-oom", "capture.json"}, // {"oom": [...]}
	} {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(tc.dir, tc.truth))
			if err != nil {
				t.Fatal(err)
			}
			var truth struct {
				OOM json.RawMessage `json:"oom"`
			}
			if err := json.Unmarshal(b, &truth); err != nil {
				t.Fatal(err)
			}
			var obs []observed
			var wrapped struct {
				Observer []observed `json:"observer"`
			}
			if json.Unmarshal(truth.OOM, &wrapped) == nil && len(wrapped.Observer) > 0 {
				obs = wrapped.Observer
			} else if err := json.Unmarshal(truth.OOM, &obs); err != nil || len(obs) != 1 {
				t.Fatalf("%s: oom observer calls %v (%v), want one", tc.truth, obs, err)
			}
			path := filepath.Join(tc.dir, "snapshot.pickle")
			s, err := snapshot.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			an := Analyze(s, Options{Device: -1})
			d := an.Devices[0]
			if len(d.OOMs) != 1 {
				t.Fatalf("OOMs = %d, want 1", len(d.OOMs))
			}
			o, w := d.OOMs[0], obs[0]
			if o.Request != w.Request || o.DeviceFree != w.DeviceFree {
				t.Errorf("request, device free = %d, %d; want %d, %d (observer)", o.Request, o.DeviceFree, w.Request, w.DeviceFree)
			}
			if o.Cap == nil || w.Limit < o.Cap.Low || w.Limit >= o.Cap.High {
				t.Errorf("Cap = %+v, want a bracket holding the observer's limit %d", o.Cap, w.Limit)
			}
			if v := o.Verdict; v.Kind != OOMCapacity || v.Cap == nil || *v.Cap != *o.Cap {
				t.Errorf("verdict = %+v, want capacity under the per-process cap %+v", v, o.Cap)
			}
			if k := o.Frag.Verdict.Kind; k != FragRequestTooLarge {
				t.Errorf("frag verdict at the OOM = kind %d, want it to agree: FragRequestTooLarge", k)
			}

			// The oom entry's frames, read by gopickle.
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			u := pickle.NewUnpickler(f)
			tree, err := u.Load()
			if err != nil {
				t.Fatal(err)
			}
			traces, _ := tree.(*types.Dict).Get("device_traces")
			wantLabel := "(no Python frame: C++ or autograd engine)"
			for _, e := range *(*traces.(*types.List))[0].(*types.List) {
				ed := e.(*types.Dict)
				if a, _ := ed.Get("action"); a != "oom" {
					continue
				}
				frames, _ := ed.Get("frames")
				list, _ := frames.(*types.List)
				if list == nil {
					break
				}
				for _, fr := range *list {
					fd := fr.(*types.Dict)
					file, _ := fd.Get("filename")
					name, _ := fd.Get("name")
					line, _ := fd.Get("line")
					if fs := file.(string); !strings.Contains(fs, "site-packages") && !strings.Contains(fs, "<python>") {
						wantLabel = fs + ":" + itoa(line.(int)) + " " + name.(string)
						break
					}
				}
			}
			if o.SiteLabel != wantLabel {
				t.Errorf("request site = %q, want %q", o.SiteLabel, wantLabel)
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// stranded is a 100 MiB segment holding five 10 MiB blocks with a 10 MiB
// hole after each: 50 MiB free, stranded (the segment is split), no hole
// larger than 10 MiB. The trace asks for 64 MiB and fails with deviceFree
// bytes free on the device; with release, a 40 MiB segment is freed first
// (the OOM retry's release of cached blocks), so 140 MiB had been reserved.
func stranded(deviceFree int64, release bool) *sg.Synth {
	var blocks []map[string]any
	for range 5 {
		blocks = append(blocks, sg.Blk(10*mib, 10*mib, "active_allocated"), sg.Blk(10*mib, 0, "inactive"))
	}
	var trace []map[string]any
	if release {
		trace = append(trace, sg.Ev("segment_free", seg+1<<30, 40*mib, 10))
	}
	trace = append(trace, sg.Ev("oom", deviceFree, 64*mib, 11))
	return &sg.Synth{Segments: []map[string]any{sg.Seg(seg, blocks...)}, Traces: [][]map[string]any{trace}}
}

// TestOOMVerdicts: fragmentation when no free block takes the request but
// the bytes stranded in split segments plus what could still be reserved
// would have; capacity otherwise — on the device and under a cap. The
// verdict carries the numbers it rests on and, for fragmentation, the
// settings to try (report/verdict_test.go words these same values).
func TestOOMVerdicts(t *testing.T) {
	frag := []Suggestion{{ExpandableSegments, "True"}, {Setting: MaxSplitSize}}
	base := OOMVerdict{Severity: SeverityProblem, Request: 64 * mib, Allocated: 50 * mib, Free: 50 * mib,
		Pool: LargePool, Largest: 10 * mib, Stranded: 50 * mib, AllocSize: 64 * mib}
	with := func(kind OOMKind, headroom, deviceFree int64, c *Cap, try []Suggestion) *OOMVerdict {
		v := base
		v.Kind, v.Headroom, v.DeviceFree, v.Cap, v.Try = kind, headroom, deviceFree, c, try
		return &v
	}
	tests := []struct {
		name     string
		s        *sg.Synth
		kind     OOMKind
		cap      *Cap
		headroom int64
		want     *OOMVerdict // nil: only kind, cap and headroom checked
	}{
		{"fragmentation, device nearly full", stranded(30*mib, false), OOMFragmentation, nil, 30 * mib,
			with(OOMFragmentation, 30*mib, 30*mib, nil, frag)},
		{"capacity, device full", stranded(5*mib, false), OOMCapacity, nil, 5 * mib,
			with(OOMCapacity, 5*mib, 5*mib, nil, nil)},
		{"capacity under a cap", stranded(100<<30, false), OOMCapacity, &Cap{100 * mib, 164 * mib}, 0,
			with(OOMCapacity, 0, 100<<30, &Cap{100 * mib, 164 * mib}, nil)},
		{"fragmentation under a cap", stranded(100<<30, true), OOMFragmentation, &Cap{140 * mib, 164 * mib}, 40 * mib, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := analyzeSynth(t, tt.s).Devices[0]
			if len(d.OOMs) != 1 {
				t.Fatalf("OOMs = %d, want 1", len(d.OOMs))
			}
			o := d.OOMs[0]
			v := o.Verdict
			if v.Kind != tt.kind || o.Frag.Stranded != 50*mib || o.Frag.Headroom != tt.headroom || o.AllocSize != 64*mib {
				t.Errorf("kind %d, stranded %d, headroom %d, alloc size %d; want %d, 50 MiB, %d, 64 MiB",
					v.Kind, o.Frag.Stranded, o.Frag.Headroom, o.AllocSize, tt.kind, tt.headroom)
			}
			if (o.Cap == nil) != (tt.cap == nil) || (o.Cap != nil && *o.Cap != *tt.cap) {
				t.Errorf("Cap = %+v, want %+v", o.Cap, tt.cap)
			}
			if tt.want != nil && !reflect.DeepEqual(v, *tt.want) {
				t.Errorf("verdict:\n got %+v\nwant %+v", v, *tt.want)
			}
			// The fragmentation verdict at the OOM agrees.
			fk := o.Frag.Verdict.Kind
			if (fk == FragRequestFragmented) != (v.Kind == OOMFragmentation) || o.Frag.Verdict.Problem() != (v.Kind == OOMFragmentation) {
				t.Errorf("verdicts disagree: oom kind %d, frag kind %d (problem %v)", v.Kind, fk, o.Frag.Verdict.Problem())
			}
		})
	}
}
