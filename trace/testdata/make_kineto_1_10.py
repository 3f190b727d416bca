#!/usr/bin/env python3
"""Writes kineto-1.10.json: a small trace in the layout Kineto wrote for
torch 1.9-1.12 (libkineto output_json.cpp of 2021): ops in category
"Operator" with the tid quoted, [memory] instant events with no category,
an unquoted tid and Bytes only, absolute integer ts in us, no
baseTimeNanoseconds, "Call stack" args. The events and the figures that
follow from them are listed in README.md.

Run from trace/testdata:  python3 make_kineto_1_10.py > kineto-1.10.json
"""
B = 1650000000000000
PID = 4242
out = []
def op(name, tid, ts, dur, args):
    a = ['"Device": %d, "External id": %d,' % (PID, len(out) + 1),
         '      "Trace name": "PyTorch Profiler", "Trace iteration": 0 ' + ("," if args else "")]
    extra = ", ".join('"%s": %s' % (k, v) for k, v in args)
    s = '''  {
    "ph": "X", "cat": "Operator", 
    "name": "%s", "pid": %d, "tid": "%d",
    "ts": %d, "dur": %d,
    "args": {
      %s
      %s
    }
  },''' % (name, PID, tid, B + ts, dur, a[0] + "\n" + a[1], extra)
    out.append(s)
def mem(tid, ts, nbytes, devtype=1, devid=0):
    out.append('''  {
    "ph": "i", "s": "t", "name": "[memory]",
    "pid": %d, "tid": %d,
    "ts": %d,
    "args": {
      "Device Type": %d, "Device Id": %d, "Bytes": %d
    }
  },''' % (PID, tid, B + ts, devtype, devid, nbytes))
STACK = '"model.py(12): forward;torch/nn/modules/module.py(1051): _call_impl;train.py(30): <module>"'
STACK2 = '"train.py(31): <module>"'
M, A = 4242, 4300
op("ProfilerStep#1", M, 1000, 1000, [])
op("aten::linear", M, 1100, 100, [("Input dims", "[[8, 16], [128, 16], [128]]"), ("Sequence number", 10), ("Fwd thread id", 0), ("Call stack", STACK)])
op("aten::t", M, 1105, 5, [("Input dims", "[[128, 16]]"), ("Call stack", STACK)])
mem(M, 1107, 64, 0, -1)
op("aten::addmm", M, 1110, 80, [("Input dims", "[[128], [8, 16], [16, 128], [], []]"), ("Sequence number", 10), ("Fwd thread id", 0), ("Call stack", STACK)])
mem(M, 1150, 4096)
out.append('''  {
    "ph": "X", "cat": "Runtime", 
    "name": "cudaLaunchKernel", "pid": %d, "tid": "%d",
    "ts": %d, "dur": 6,
    "args": {
      "cbid": 211, "correlation": 77,
      "external id": 5, "external ts": %d
    }
  },''' % (PID, M, B + 1160, B + 1110))
out.append('''  {
    "ph": "X", "cat": "Kernel", 
    "name": "volta_sgemm_32x128_tn", "pid": 0, "tid": "stream 7",
    "ts": %d, "dur": 12,
    "args": {
      "queued": 0, "device": 0, "context": 1,
      "stream": 7, "correlation": 77, "external id": 5,
      "registers per thread": 57,
      "shared memory": 16384,
      "blocks per SM": 0.05,
      "warps per SM": 0.2,
      "grid": [1, 4, 1],
      "block": [128, 1, 1],
      "est. achieved occupancy %%": 3
    }
  },''' % (B + 1170))
op("aten::relu", M, 1200, 50, [("Input dims", "[[8, 128]]"), ("Sequence number", 11), ("Fwd thread id", 0), ("Call stack", '"model.py(13): forward;torch/nn/modules/module.py(1051): _call_impl;train.py(30): <module>"')])
mem(M, 1220, 4096)
op("aten::sum", M, 1250, 50, [("Input dims", "[[8, 128]]"), ("Sequence number", 12), ("Fwd thread id", 0), ("Call stack", STACK2)])
mem(M, 1260, 512)
mem(M, 1310, -4096)
op("aten::ones_like", M, 1320, 10, [("Input dims", "[[]]"), ("Call stack", '"torch/autograd/__init__.py(147): backward;train.py(32): <module>"')])
mem(M, 1325, 512)
op("autograd::engine::evaluate_function: SumBackward0", A, 1400, 50, [])
op("SumBackward0", A, 1401, 48, [("Sequence number", 12), ("Fwd thread id", 1)])
op("aten::expand", A, 1410, 10, [("Input dims", "[[], []]")])
op("autograd::engine::evaluate_function: ReluBackward0", A, 1450, 50, [])
op("ReluBackward0", A, 1451, 48, [("Sequence number", 11), ("Fwd thread id", 1)])
op("aten::threshold_backward", A, 1460, 30, [("Input dims", "[[8, 128], [8, 128], []]")])
mem(A, 1470, 4096)
op("autograd::engine::evaluate_function: AddmmBackward0", A, 1500, 100, [])
op("AddmmBackward0", A, 1501, 98, [("Sequence number", 10), ("Fwd thread id", 1)])
op("aten::mm", A, 1510, 30, [("Input dims", "[[8, 128], [128, 16]]")])
mem(A, 1520, 8192)
op("aten::mm", A, 1540, 30, [("Input dims", "[[128, 8], [8, 16]]")])
mem(A, 1550, 2048)
mem(A, 1580, -4096)
for ts, b in [(1700, -8192), (1710, -512), (1720, -512), (1730, -4096)]:
    mem(M, ts, b)
head = '''
{
  "schemaVersion": 1,
  "deviceProperties": [
    {
      "id": 0, "name": "Tesla V100-SXM2-16GB", "totalGlobalMem": 16945512448,
      "computeMajor": 7, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 98304,
      "numSms": 80, "sharedMemPerBlockOptin": 98304
    }
  ],
  "traceEvents": [
  {
    "name": "process_name", "ph": "M", "ts": %d, "pid": %d, "tid": 0,
    "args": {
      "name": "python3"
    }
  },
  {
    "name": "thread_name", "ph": "M", "ts": %d, "pid": %d, "tid": "%d",
    "args": {
      "name": "thread %d (python3)"
    }
  },
  {
    "name": "thread_name", "ph": "M", "ts": %d, "pid": %d, "tid": "%d",
    "args": {
      "name": "thread %d (python3)"
    }
  },''' % (B + 900, PID, B + 900, PID, M, M, B + 900, PID, A, A)
tail = '''  {
    "ph": "X", "cat": "Trace", "ts": %d, "dur": 1100,
    "pid": "Traces", "tid": "PyTorch Profiler",
    "name": "PyTorch Profiler (0)",
    "args": {
      "Op count": 0
    }
  },
  {
    "name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g",
    "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": %d
  },
  {
    "name": "Record Window End", "ph": "i", "s": "g",
    "pid": "", "tid": "", "ts": %d
  }
]}''' % (B + 950, B + 950, B + 2050)
text = head + "\n" + "\n".join(out) + "\n" + tail
print("\n".join(line.rstrip() for line in text.splitlines()))
