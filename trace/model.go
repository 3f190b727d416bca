package trace

import (
	"fmt"
	"strconv"
	"strings"
)

// StringID indexes Trace.Strings.
type StringID uint32

// ThreadID indexes Trace.Threads.
type ThreadID uint32

// OpID indexes Trace.Ops; NoOp means none.
type OpID int32

// PyID indexes Trace.PyFuncs; NoPy means none.
type PyID int32

// NoOp and NoPy are the absent OpID and PyID.
const (
	NoOp OpID = -1
	NoPy PyID = -1
)

// Trace is the part of a torch.profiler Chrome trace that memory analysis
// needs. Slices are sorted: Ops and PyFuncs by (Thread, Start, longer first),
// Memory by time (file order among equal times).
type Trace struct {
	Name    string   // file name given to Open or Decode
	Meta    Meta     // top-level metadata
	Strings []string // names of ops, python functions, threads' labels
	Threads []Thread // distinct (pid, tid) pairs, in order of first use

	Ops     []Op        // cpu_op and user_annotation intervals
	PyFuncs []PyFunc    // python_function intervals (with_stack=True)
	Memory  []MemEvent  // [memory] and [OutOfMemory] events
	Calls   []Call      // cuda_runtime, cuda_driver and overhead intervals
	Flows   []Flow      // fwdbwd flows resolved to ops
	Counts  EventCounts // every event counted, kept or not

	Warnings []Warning // what was lost from damaged input

	recorded map[Device]Recorded
	opSpans  []span // per thread: Ops[lo:hi]
	pySpans  []span // per thread: PyFuncs[lo:hi]
	fwdOf    []OpID // per op: ForwardOf
	modOf    []PyID // per python function: enclosingModule
	opModule []PyID // per op: the module around its start (moduleAround)
}

type span struct{ lo, hi int32 }

// Thread is one (pid, tid) pair, each kept as its raw JSON text: 413, or
// "Spans" with its quotes, so numbers and strings never collide; a string
// holding a decimal integer ("4242", as Kineto before torch 1.13 wrote the
// tid of ops) is kept as that number.
type Thread struct {
	PID, TID string
}

// String renders the pair as pid/tid with string quotes removed.
func (t Thread) String() string { return unquote(t.PID) + "/" + unquote(t.TID) }

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// OpKind says which Chrome-trace category an Op came from.
type OpKind uint8

// Op kinds.
const (
	CPUOp          OpKind = iota // cat "cpu_op": an ATen operator or autograd node
	UserAnnotation               // cat "user_annotation": a record_function range
)

func (k OpKind) String() string {
	if k == UserAnnotation {
		return "user_annotation"
	}
	return "cpu_op"
}

// Op is one cpu_op or user_annotation X event. Field order keeps the
// struct at 48 bytes: traces hold millions.
type Op struct {
	Start  int64 // epoch ns
	Dur    int64 // ns
	Name   StringID
	Thread ThreadID
	// Parent is the innermost op on the same thread that contains this one.
	Parent OpID
	// Forward, on a backward op, is the forward op whose autograd node it
	// runs, chosen by name among the ops with its sequence number and its
	// fwdbwd flow (see linkForward); NoOp otherwise.
	Forward OpID
	// Seq is the "Sequence number" arg, -1 when absent; FwdThread is
	// "Fwd thread id" (a profiler thread index, not an OS tid), -1 when absent.
	Seq, FwdThread int32
	Kind           OpKind
}

// End is Start+Dur.
func (o *Op) End() int64 { return o.Start + o.Dur }

// PyFunc is one python_function X event (40 bytes).
type PyFunc struct {
	Start  int64 // epoch ns
	Dur    int64 // ns
	Name   StringID
	Thread ThreadID
	// PythonID and PythonParentID are the "Python id" and "Python parent id"
	// args (-1 when absent, null or beyond int32); Parent is the resolved
	// parent.
	PythonID, PythonParentID int32
	Parent                   PyID
	// Module is true for names "nn.Module: Class_N".
	Module bool
}

// End is Start+Dur.
func (p *PyFunc) End() int64 { return p.Start + p.Dur }

// Call is a cuda_runtime, cuda_driver or overhead interval. Only
// KeyAverages uses them, as torch counts them as CPU events.
type Call struct {
	Start  int64
	Dur    int64
	Name   StringID
	Thread ThreadID
}

// MemEvent is one [memory] or [OutOfMemory] instant event.
type MemEvent struct {
	Time int64 // epoch ns; TimeUS gives epoch µs
	// Bytes is the rounded block size, negative for frees (JSON floats are
	// rounded to the nearest integer).
	Bytes int64
	// TotalAllocated and TotalReserved are the device's allocated_bytes and
	// reserved_bytes after this event. An event without Total Allocated
	// (Kineto before torch 1.13 wrote Bytes only) gets the previous event's
	// TotalAllocated on its device plus Bytes: the running sum of Bytes, 0
	// at the trace's start. Without Total Reserved it is 0; Trace.Recorded
	// says which.
	TotalAllocated, TotalReserved int64
	Addr                          int64 // block address; 0 when absent (OOM)
	Thread                        ThreadID
	DeviceID                      int16 // -1 for CPU
	DeviceType                    int8  // c10::DeviceType: 0 CPU, 1 CUDA, …
	OOM                           bool  // an [OutOfMemory] event

	// Op is the innermost cpu_op/user_annotation on the same thread that
	// contains the event; Py, set only when Op is NoOp, the innermost
	// python_function; Module the innermost nn.Module python_function that
	// ran the allocation (for backward ops, the forward op's module).
	Op     OpID
	Py     PyID
	Module PyID

	has argSet // which of Total Allocated, Total Reserved and Addr the event carried
}

// TimeUS is Time in epoch microseconds, the unit of snapshot time_us.
func (e *MemEvent) TimeUS() float64 { return float64(e.Time) / 1e3 }

// Device names the event's device.
func (e *MemEvent) Device() Device { return Device{Type: e.DeviceType, ID: e.DeviceID} }

// OnGPU reports whether the event is on an accelerator (CUDA, HIP or
// PrivateUse1), the memory torch reports as device memory.
func (e *MemEvent) OnGPU() bool { return isDeviceMem(e.DeviceType) }

func isDeviceMem(t int8) bool { return t == 1 || t == 6 || t == 20 }
func isCPUMem(t int8) bool    { return t == 0 || t == 2 || t == 5 }

// Device is a (c10::DeviceType, index) pair.
type Device struct {
	Type int8
	ID   int16
}

// CPU reports whether the device's memory is host memory (CPU, MKLDNN or
// IDEEP), the memory torch reports as CPU memory.
func (d Device) CPU() bool { return isCPUMem(d.Type) }

func (d Device) String() string {
	names := map[int8]string{0: "cpu", 1: "cuda", 6: "hip", 12: "xpu", 13: "mps", 20: "privateuse1"}
	if n, ok := names[d.Type]; ok {
		if d.ID < 0 {
			return n
		}
		return fmt.Sprintf("%s:%d", n, d.ID)
	}
	return fmt.Sprintf("device-type-%d:%d", d.Type, d.ID)
}

// Recorded says which running totals and addresses a device's memory
// events carried (any of its events, OOM events aside). Kineto before
// torch 1.13 wrote Bytes only: none of the three.
type Recorded struct {
	// TotalAllocated false: MemEvent.TotalAllocated is the running sum of
	// Bytes since the trace began, blind to what was allocated before.
	TotalAllocated bool
	// TotalReserved false: reserved memory is not recorded (0).
	TotalReserved bool
	// Addr false: frees cannot be paired with their allocations, so the
	// bytes each op left live at the peak are not known.
	Addr bool
}

// Recorded says what the memory events of dev carried.
func (t *Trace) Recorded(dev Device) Recorded { return t.recorded[dev] }

// Flow is one fwdbwd flow: the forward op that starts it and the backward op
// that ends it, as the file has them. The backward op's Forward is Fwd
// unless Fwd's name does not match and an op with the same sequence
// number does (ForwardName).
type Flow struct {
	ID       int64
	Fwd, Bwd OpID
}

// EventCounts counts events by kind, including those not kept.
type EventCounts struct {
	Events  int64            // every element of traceEvents
	ByCat   map[string]int64 // by "cat" (ph "M" metadata as "(metadata)")
	Kernels map[int64]int64  // kernel events by pid (the device index)
}

// Warning is a non-fatal problem: something lost or not understood.
type Warning struct {
	Offset  int64 // byte offset in the (decompressed) file, -1 if none
	Message string
}

func (w Warning) String() string {
	if w.Offset < 0 {
		return w.Message
	}
	return fmt.Sprintf("at byte %d: %s", w.Offset, w.Message)
}

// Str returns the string with the given ID.
func (t *Trace) Str(id StringID) string { return t.Strings[id] }

// OpName returns an op's name.
func (t *Trace) OpName(id OpID) string { return t.Strings[t.Ops[id].Name] }

// ModuleName strips the "nn.Module: " prefix of a module python_function.
func (t *Trace) ModuleName(id PyID) string {
	return strings.TrimPrefix(t.Strings[t.PyFuncs[id].Name], modulePrefix)
}

const modulePrefix = "nn.Module: "
