// Package capture holds the capture harness (harness.py: stdlib + torch, one
// file, embedded so that an installed memscope needs no checkout) and the Go
// side that drives it on a GPU machine: one training script under capture
// (Capture), a batch-size sweep with one fresh process per point (Sweep),
// several ranks under torchrun. It also reads what those runs leave in their
// run directory (ReadRun, ReadResults), and nothing more: it runs processes
// and reads run directories. What a sweep or a capture run means (fits,
// frontiers, savings, the worst rank) is package sweep's; report renders
// both. It depends on nothing else of memscope.
//
// # A capture run directory (memscope capture)
//
// Files of one process are named by RankFile: snapshot.pickle when the run
// has one process, snapshot.rank3.pickle for rank 3 of several.
//
//	run.json             written by memscope: schema "memscope-run/v1" (type Run):
//	                     the command, the harness command line, the exit status,
//	                     what the preflight check found, the per-rank files
//	capture.json         written by each process: schema "memscope-capture/v1"
//	                     (type CaptureRank): exit status, exception, OOM observer
//	                     calls, per-phase peaks of the measured steps, the
//	                     run's peaks, memory_stats() at exit
//	snapshot.pickle      the allocator snapshot at exit (pickle protocol 4)
//	snapshot.oom.pickle  at the first phase boundary after an OOM the script survived
//	steps.jsonl          one line per optimizer step: memory_stats() subset and
//	                     mem_get_info(); the last line ("at": "exit") at exit
//	trace.json.gz        torch.profiler trace of --profile-steps
//
// # A sweep run directory (memscope sweep)
//
//	results.json         schema "memscope-sweep/v1" (type Results): the
//	                     sweep's settings and every point measured, in order
//	points/ID/           one folder per point (ID as "bf16-b16", or
//	                     "bf16-b16-largest-fit" for a snapshot point): the
//	                     harness's point.json, log.txt (its output), and
//	                     snapshot.pickle / trace.json.gz at the snapshot points
//
// Both schemas carry their version in "schema"; a reader refuses a version
// it does not know rather than misread it. Adding fields keeps the version;
// renaming or changing the meaning of one bumps it. Sizes are bytes, times
// seconds or milliseconds as the field names say.
package capture
