package snapshot

import (
	"bytes"
	"testing"

	"github.com/memscope/memscope/internal/pickle"
)

// The fast path remembers the stack each list of frame references made
// (listStacks). A BINPUT between two batches that rebinds one of those
// references to another frame must not leave the old stack remembered:
// the entries of the batch after it have the new frame, as the general
// machine reads them.
func TestFastPathFramesRebound(t *testing.T) {
	var buf bytes.Buffer
	w := pickle.NewWriter(&buf, 4)
	mem := map[string]uint32{}
	str := func(s string) { // a string memoized once, then referenced
		if i, ok := mem[s]; ok {
			w.Get(i)
			return
		}
		w.String(s)
		mem[s] = w.Memoize()
	}
	var frameRefs []uint32
	frame := func(name string, line int64) {
		w.Raw(pickle.EmptyDict)
		frameRefs = append(frameRefs, w.Memoize())
		w.Raw(pickle.Mark)
		str("name")
		str(name)
		str("filename")
		str("<repo>/train.py")
		str("line")
		w.Int(line)
		w.Raw(pickle.SetItems)
	}
	ts := int64(1795969944824791)
	event := func(action string, addr int64, frames func()) {
		w.Raw(pickle.EmptyDict)
		w.Memoize()
		w.Raw(pickle.Mark)
		str("action")
		str(action)
		str("addr")
		w.Int(addr)
		str("size")
		w.Int(512)
		str("stream")
		w.Int(0)
		str("time_us")
		ts++
		w.Int(ts)
		str("frames")
		w.Raw(pickle.EmptyList)
		w.Memoize()
		w.Raw(pickle.Mark)
		frames()
		w.Raw(pickle.Appends)
		w.Raw(pickle.SetItems)
	}
	refs := func(is ...int) func() {
		return func() {
			for _, i := range is {
				w.Get(frameRefs[i])
			}
		}
	}
	batch := func(base int64, frames func()) {
		w.Raw(pickle.Mark)
		for k := range int64(8) {
			event("alloc", base+k*512, frames)
			event("free_requested", base+k*512, frames)
		}
		w.Raw(pickle.Appends)
	}

	w.Raw(pickle.EmptyDict)
	w.Memoize()
	w.Raw(pickle.Mark)
	str("segments")
	w.Raw(pickle.EmptyList)
	w.Memoize()
	str("device_traces")
	w.Raw(pickle.EmptyList)
	w.Memoize()
	w.Raw(pickle.EmptyList)
	w.Memoize()
	// The first batch defines the frames (the general machine's), the
	// second refers to frames 0 and 1 (the fast path's).
	w.Raw(pickle.Mark)
	event("alloc", 0x1000, func() {
		for i, name := range []string{"forward", "backward", "step"} {
			frame(name, int64(10*(i+1)))
		}
	})
	w.Raw(pickle.Appends)
	batch(0x10000, refs(0, 1))
	// A batch the general machine reads, whose one entry's frames rebind
	// frame 0's memo entry to frame 2 (BINGET, LONG_BINPUT): pickle.dump
	// never writes that, but it is a valid pickle.
	w.Raw(pickle.Mark)
	event("alloc", 0x18000, func() {
		w.Get(frameRefs[2])
		w.Raw(pickle.LongBinPut, byte(frameRefs[0]), byte(frameRefs[0]>>8), byte(frameRefs[0]>>16), byte(frameRefs[0]>>24))
	})
	w.Raw(pickle.Appends)
	batch(0x20000, refs(0, 1))
	w.Raw(pickle.Append) // the device's list into device_traces
	w.Raw(pickle.SetItems)
	w.Raw(pickle.Stop)
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()

	if n := decodeBoth(t, "rebound.pickle", data); n < 2 {
		t.Fatalf("the fast path read %d batches, want the two that refer to frames read before", n)
	}
	s, err := Decode(bytes.NewReader(data), "rebound.pickle")
	if err != nil {
		t.Fatal(err)
	}
	name := func(e Event) string {
		st := s.Stacks.Stack(e.Stack)
		if len(st) == 0 {
			return ""
		}
		return s.Stacks.Frame(st[0]).Name
	}
	tr := s.Traces[0]
	if got := name(tr[1]); got != "forward" {
		t.Errorf("entry 1 (second batch): innermost frame %q, want forward", got)
	}
	if got := name(tr[len(tr)-1]); got != "step" {
		t.Errorf("last entry (after the BINPUT): innermost frame %q, want step, the frame rebound", got)
	}
}
