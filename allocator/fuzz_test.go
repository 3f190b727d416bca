package allocator

import (
	"encoding/binary"
	"reflect"
	"slices"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// fuzzSources are the fixtures FuzzReplay mutates: a clean start, an
// OOM with its retry, expandable segments, a late start, a CUDA graph's
// private pool.
var fuzzSources = []string{
	"../fixtures/mlp-adamw/snapshot.pickle",
	"../fixtures/oom/snapshot.pickle",
	"../fixtures/expandable/snapshot.pickle",
	"../fixtures/plain-lightning/snapshot.pickle",
	"../fixtures/advise/infer-static/snapshot.pickle",
}

// mutate applies the mutations data encodes, 8 bytes each, to a copy of
// s's device 0 trace, its end-state segments and its settings.
func mutate(s *snapshot.Snapshot, data []byte) *snapshot.Snapshot {
	c := *s
	c.Traces = [][]snapshot.Event{slices.Clone(s.Traces[0])}
	c.Segments = slices.Clone(s.Segments)
	c.Settings = map[string]any{}
	for k, v := range s.Settings {
		c.Settings[k] = v
	}
	tr := c.Traces[0]
	for len(data) >= 8 {
		op, arg := data[0], binary.LittleEndian.Uint32(data[1:5])
		v := int64(binary.LittleEndian.Uint16(data[5:7])) << (data[7] % 40)
		data = data[8:]
		if len(tr) == 0 {
			break
		}
		i := int(arg) % len(tr)
		switch op % 13 {
		case 0:
			tr = slices.Delete(tr, i, i+1)
		case 1:
			tr = slices.Insert(tr, i, tr[int(v)%len(tr)])
		case 2:
			tr[i].Size = v
		case 3:
			tr[i].Addr += uint64(v)
		case 4:
			tr[i].Action = snapshot.Action(int(v) % 12)
		case 5:
			tr[i].Stream = v % 3
		case 6:
			tr[i], tr[int(v)%len(tr)] = tr[int(v)%len(tr)], tr[i]
		case 7:
			c.Settings["expandable_segments"] = v%2 == 1
		case 8:
			c.Settings["max_split_size"] = v
		case 9:
			c.Settings["roundup_power2_divisions"] = v % 17
		case 10:
			if len(c.Segments) > 0 {
				j := int(arg) % len(c.Segments)
				c.Segments = slices.Delete(c.Segments, j, j+1)
			}
		case 11:
			tr = tr[:i]
		case 12: // move a segment to another pool: routes by recorded address change
			if len(c.Segments) > 0 {
				j := int(arg) % len(c.Segments)
				c.Segments[j].Pool = snapshot.PoolID{A: v % 3, B: v / 3 % 3}
			}
		}
	}
	c.Traces[0] = tr
	return &c
}

// FuzzReplay replays mutated fixtures: Replay must never panic, and the
// model it ends with must pass CheckValid.
func FuzzReplay(f *testing.F) {
	var srcs []*snapshot.Snapshot
	for _, p := range fuzzSources {
		s, err := snapshot.Open(p)
		if err != nil {
			f.Fatal(err)
		}
		srcs = append(srcs, s)
	}
	f.Add(uint8(0), []byte{})
	f.Add(uint8(1), []byte{0, 5, 0, 0, 0, 0, 0, 0})
	f.Add(uint8(2), []byte{2, 40, 0, 0, 0, 1, 0, 30, 4, 9, 0, 0, 0, 3, 0, 0})
	f.Add(uint8(3), []byte{7, 0, 0, 0, 0, 1, 0, 0, 6, 3, 0, 0, 0, 9, 0, 0})
	f.Add(uint8(1), []byte{8, 0, 0, 0, 0, 1, 0, 25, 11, 90, 0, 0, 0, 0, 0, 0})
	debugCheck = true
	f.Cleanup(func() { debugCheck = false })
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		s := mutate(srcs[int(which)%len(srcs)], data)
		rep, a, err := replay(s, 0, ReplayOptions{TieBreak: TieBreak(which / 64 % 3)})
		if err != nil {
			return
		}
		if err := a.CheckValid(); err != nil {
			t.Fatalf("after %s: %v", rep, err)
		}
		_ = rep.String()
		checkWhatIfs(t, s, which)
	})
}

// fuzzConfs are the settings checkWhatIfs runs the recorded requests
// under, beside the recorded ones.
var fuzzConfs = []string{"expandable_segments:True", "max_split_size_mb:20", "garbage_collection_threshold:0.5"}

// checkWhatIfs runs the what-ifs of s's device 0 beside the check
// (Recording.WhatIfs, the models checked after every entry, as debugCheck
// asks) and again once the check is done: the outcomes must be the same.
func checkWhatIfs(t *testing.T, s *snapshot.Snapshot, which uint8) {
	base, err := SettingsFromSnapshot(s.Settings)
	if err != nil {
		return
	}
	sets := []Settings{base}
	for _, c := range fuzzConfs {
		set := base
		if set.ApplyConf(c) == nil {
			sets = append(sets, set)
		}
	}
	opt := WhatIfOptions{MemoryFraction: float64(which%4) / 4, DeviceTotal: 1 << 34}
	rc, err := NewRecording(s, 0, opt)
	if err != nil {
		return
	}
	outs, errs := rc.WhatIfs(sets)
	for i, set := range sets {
		late, lerr := rc.WhatIf(set)
		if (errs[i] == nil) != (lerr == nil) {
			t.Fatalf("what-if %d: beside the check: %v; after it: %v", i, errs[i], lerr)
		}
		if lerr != nil {
			continue
		}
		early := *outs[i]
		early.speculated, early.aborted = false, false
		if !reflect.DeepEqual(&early, late) {
			t.Fatalf("what-if %d: beside the check:\n%+v\nafter it:\n%+v", i, &early, late)
		}
	}
}
