package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/report"
)

// TestWhatIfCommand: 'memscope whatif' on the fragmentation OOM recorded
// under the default settings, with torch's cap as --memory-limit and the
// other runs' settings as --conf, gives what torch measured in those runs
// (fixtures/whatif-fragoom: peak reserved, the OOM outcome, retries), and
// the replay check of the recording.
func TestWhatIfCommand(t *testing.T) {
	const dir = "../../fixtures/whatif-fragoom/"
	rec, err := truth.Read(dir + "default/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"whatif", "--json", "--memory-limit", "1200MiB"}
	names := []string{"expandable", "maxsplit128", "pow2div4"}
	for _, n := range names {
		tr, err := truth.Read(dir + n + "/truth.json")
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--conf", tr.AllocConf)
	}
	if rec.CapBytes != 1200<<20 {
		t.Fatalf("the fixture's cap is %d bytes, the test says 1200MiB", rec.CapBytes)
	}
	r := runMemscope(append(args, dir+"default/snapshot.pickle")...)
	if r.err != nil {
		t.Fatalf("memscope %v: %v\n%s", args, r.err, r.stderr)
	}
	var doc report.FilesDoc[report.WhatIfFileJSON]
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.Files[0].Devices[0]
	if d.Replay == nil || !d.Replay.Exact || d.Replay.Checked == 0 || len(d.Runs) != 1+len(names) {
		t.Fatalf("whatif: replay %+v, %d runs; want an exact replay and %d runs", d.Replay, len(d.Runs), 1+len(names))
	}
	for i, n := range append([]string{"default"}, names...) {
		tr, err := truth.Read(dir + n + "/truth.json")
		if err != nil {
			t.Fatal(err)
		}
		run, st := d.Runs[i], tr.MemoryStatsEnd
		if run.PeakReserved != st["reserved_bytes.all.peak"] || run.OOM != (st["num_ooms"] > 0) || int64(run.Retries) != st["num_alloc_retries"] {
			t.Errorf("whatif %q: peak reserved %d, OOM %v, retries %d; torch's %s run: %d, %v, %d",
				run.Conf, run.PeakReserved, run.OOM, run.Retries, n, st["reserved_bytes.all.peak"], st["num_ooms"] > 0, st["num_alloc_retries"])
		}
		if run.CapacityFrom != "cap" || run.Capacity != 1200<<20 {
			t.Errorf("whatif %q: capacity %d from %s, want --memory-limit's", run.Conf, run.Capacity, run.CapacityFrom)
		}
	}
	// Text: the settings side by side, the OOM's request.
	r = runMemscope("whatif", "--conf", "expandable_segments:True", dir+"default/snapshot.pickle")
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, want := range []string{"recorded settings", "expandable_segments:True", "19 of 19 recorded decisions", "yes: event 36, 200.00 MiB"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("whatif text lacks %q:\n%s", want, r.stdout)
		}
	}
	// Usage: a bad --conf or --memory-limit.
	for _, bad := range [][]string{{"--conf", "expandable_segments:maybe"}, {"--memory-limit", "lots"}} {
		r := runMemscope(append(append([]string{"whatif"}, bad...), dir+"default/snapshot.pickle")...)
		if r.code != exitError || !strings.Contains(r.err.Error(), bad[0]) {
			t.Errorf("memscope whatif %v: exit %d, %v; want a usage error naming %s", bad, r.code, r.err, bad[0])
		}
	}
}
