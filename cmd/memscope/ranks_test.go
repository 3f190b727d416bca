package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/snapshot"
)

// rankSet writes n rank snapshots into a directory: copies of
// fixtures/plain-record (a real training loop), rank outlier a copy of
// fixtures/plain-record-oom (the same loop, its batch doubling to an OOM).
func rankSet(t testing.TB, n, outlier int) string {
	t.Helper()
	dir := t.TempDir()
	typical, err := os.ReadFile("../../fixtures/plain-record/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	odd, err := os.ReadFile("../../fixtures/plain-record-oom/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		b := typical
		if i == outlier {
			b = odd
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("snapshot.rank%d.pickle", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// rankStatsOf analyses one fixture as ranks does.
func rankStatsOf(t *testing.T, path string) attribution.RankStats {
	t.Helper()
	s, err := snapshot.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return attribution.RankStatsOf(attribution.Analyze(s, attribution.Options{Device: -1}).Primary(), path, -1)
}

// TestRanksNamesTheOutlier: on 64 rank snapshots with one made the
// outlier, ranks names that rank, its peak, and the site that differs most
// from a typical rank, with the bytes each holds there — all as the two
// snapshots' own analyses give them; every other rank is the median.
func TestRanksNamesTheOutlier(t *testing.T) {
	const n, outlier = 64, 37
	dir := rankSet(t, n, outlier)
	typ := rankStatsOf(t, "../../fixtures/plain-record/snapshot.pickle")
	odd := rankStatsOf(t, "../../fixtures/plain-record-oom/snapshot.pickle")
	want := attribution.Deltas(typ.Sites, odd.Sites)[0]

	r := runMemscope("ranks", "--json", "--jobs", "2", dir)
	if r.code != 0 {
		t.Fatalf("exit %d: %v\n%s", r.code, r.err, r.stderr)
	}
	var doc report.ResultDoc[report.RanksJSON]
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	res := doc.Result
	if len(res.Ranks) != n {
		t.Fatalf("%d ranks, want %d", len(res.Ranks), n)
	}
	for i, x := range res.Ranks {
		if x.Rank != i {
			t.Fatalf("ranks[%d] is rank %d: want rank order", i, x.Rank)
		}
		wantPeak := typ.PeakAllocated
		if i == outlier {
			wantPeak = odd.PeakAllocated
		}
		if x.PeakAllocated != wantPeak {
			t.Errorf("rank %d: peak allocated %d, want %d", i, x.PeakAllocated, wantPeak)
		}
	}
	if res.MedianPeak != typ.PeakAllocated || res.Worst != outlier {
		t.Errorf("median %d worst %d, want %d and rank %d", res.MedianPeak, res.Worst, typ.PeakAllocated, outlier)
	}
	if len(res.Outliers) != 1 || res.Outliers[0].Rank != outlier {
		t.Fatalf("outliers %+v, want rank %d alone", res.Outliers, outlier)
	}
	top := res.Outliers[0].Sites[0]
	if top.Name != want.Name || top.A != want.A || top.B != want.B {
		t.Errorf("top differing site %+v, want %s: %d → %d", top, want.Name, want.A, want.B)
	}
	text := runMemscope("ranks", dir)
	if !strings.Contains(text.stdout, fmt.Sprintf("outlier: rank %d", outlier)) || !strings.Contains(text.stdout, want.Name) {
		t.Errorf("text names no outlier rank %d with site %s:\n%s", outlier, want.Name, text.stdout)
	}
}

// TestRanksFromSummaries: the per-rank summaries each rank can write
// (memscope summary --json) give ranks the same peaks and outlier as the
// snapshots, and a file that is not a summary is skipped with why.
func TestRanksFromSummaries(t *testing.T) {
	const n, outlier = 8, 5
	snaps := rankSet(t, n, outlier)
	dir := t.TempDir()
	for i := range n {
		r := runMemscope("summary", "--json", filepath.Join(snaps, fmt.Sprintf("snapshot.rank%d.pickle", i)))
		if r.code != 0 {
			t.Fatal(r.err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank%d.json", i)), []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	get := func(args ...string) report.RanksJSON { return ranksJSON(t, args...) }
	a, b := get(snaps), get(dir)
	if len(a.Ranks) != n || len(b.Ranks) != n {
		t.Fatalf("%d and %d ranks, want %d", len(a.Ranks), len(b.Ranks), n)
	}
	for i := range a.Ranks {
		if a.Ranks[i].PeakAllocated != b.Ranks[i].PeakAllocated || a.Ranks[i].PeakReserved != b.Ranks[i].PeakReserved || a.Ranks[i].Rank != b.Ranks[i].Rank {
			t.Errorf("rank %d: from the snapshot %+v, from its summary %+v", i, a.Ranks[i], b.Ranks[i])
		}
	}
	if len(b.Outliers) != 1 || b.Outliers[0].Rank != outlier || len(a.Outliers) != 1 || b.Outliers[0].Sites[0].Name != a.Outliers[0].Sites[0].Name {
		t.Errorf("outliers from summaries %+v, from snapshots %+v", b.Outliers, a.Outliers)
	}
	bad := filepath.Join(dir, "rank9.json")
	if err := os.WriteFile(bad, []byte(`{"schema": "memscope/v1", "kind": "peak"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := get(filepath.Join(dir, "*.json"))
	if len(c.Ranks) != n || len(c.Skipped) != 1 || !strings.Contains(c.Skipped[0], "rank9.json") {
		t.Errorf("with a peak document among them: %d ranks, skipped %v", len(c.Ranks), c.Skipped)
	}
}

// BenchmarkRanksSummaries: ranks over 1,000 per-rank summaries (read and
// compared; the bar is under a second).
func BenchmarkRanksSummaries(b *testing.B) {
	snaps := rankSet(b, 2, 1)
	var docs [2]string
	for i := range docs {
		r := runMemscope("summary", "--json", filepath.Join(snaps, fmt.Sprintf("snapshot.rank%d.pickle", i)))
		if r.code != 0 {
			b.Fatal(r.err)
		}
		docs[i] = r.stdout
	}
	dir := b.TempDir()
	for i := range 1000 {
		doc := docs[0]
		if i == 617 {
			doc = docs[1]
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank%d.json", i)), []byte(doc), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		r := runMemscope("ranks", "--json", dir)
		if r.code != 0 {
			b.Fatal(r.err)
		}
	}
}

// TestRanksOfCaptureRun: capture writes each rank's summary beside its
// snapshot (writeRankSummaries, run on fixtures/capture-ddp copied), and
// ranks over the run directory reads those: the same peaks as from the
// snapshots, the device used and rank each capture.json gives, and the
// ranks' peaks.
func TestRanksOfCaptureRun(t *testing.T) {
	src := "../../fixtures/capture-ddp"
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stderr strings.Builder
	writeRankSummaries(&cmdContext{stdout: io.Discard, stderr: &stderr}, dir)
	if stderr.Len() > 0 {
		t.Errorf("warnings: %s", stderr.String())
	}
	for r := range 2 {
		if !fileExists(filepath.Join(dir, fmt.Sprintf("summary.rank%d.json", r))) {
			t.Fatalf("no summary.rank%d.json written", r)
		}
	}
	get := func(args ...string) report.RanksJSON { return ranksJSON(t, args...) }
	run := get(dir)
	snaps := get(filepath.Join(src, "snapshot.rank0.pickle"), filepath.Join(src, "snapshot.rank1.pickle"))
	rd, err := capture.ReadRun(src)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range run.Ranks {
		if !strings.HasSuffix(x.File, fmt.Sprintf("summary.rank%d.json", i)) {
			t.Errorf("rank %d read from %s, want its summary", i, x.File)
		}
		if x.Rank != i || x.PeakAllocated != snaps.Ranks[i].PeakAllocated || x.PeakReserved != snaps.Ranks[i].PeakReserved {
			t.Errorf("rank %d from the run %+v, from its snapshot %+v", i, x, snaps.Ranks[i])
		}
		if x.DeviceUsed == nil || *x.DeviceUsed != rd.Ranks[i].DeviceUsed {
			t.Errorf("rank %d device used %v, want capture.json's %d", i, x.DeviceUsed, rd.Ranks[i].DeviceUsed)
		}
	}
}

// FuzzRanksSummary feeds ranks' summary reader documents built from the
// fuzzer's numbers (files, devices, peaks, sites: the schema's shape with
// any values, negative and huge ones included) and raw bytes, and compares
// what it reads: it never panics, a document it accepts gives ranks with
// no negative peak, and CompareRanks of them holds its invariants (the
// median and the worst are ranks' peaks, the z-scores finite, outliers
// beyond the bar).
func FuzzRanksSummary(f *testing.F) {
	r := runMemscope("summary", "--json", "../../fixtures/plain-record/snapshot.pickle")
	if r.code != 0 {
		f.Fatal(r.err)
	}
	f.Add([]byte(r.stdout), false, int64(0), int64(0), uint8(0), uint8(0))
	f.Add([]byte(nil), true, int64(574559232), int64(614465536), uint8(3), uint8(2))
	f.Add([]byte(nil), true, int64(-1), int64(1<<62), uint8(1), uint8(200))
	f.Add([]byte(`{"schema": "memscope/v1", "kind": "summary", "files": [{"devices": [{}]}]}`), false, int64(0), int64(0), uint8(0), uint8(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, raw []byte, built bool, peak, reserved int64, files, sites uint8) {
		doc := raw
		if built {
			doc = builtSummary(peak, reserved, int(files%8), int(sites))
		}
		path := filepath.Join(dir, "rank3.json")
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		ranks, err := attribution.SummaryRanks(path)
		if err != nil {
			return
		}
		for _, x := range ranks {
			if x.PeakAllocated < 0 || x.PeakReserved < 0 {
				t.Fatalf("accepted a negative peak: %+v", x)
			}
			for s, b := range x.Sites {
				if b < 0 {
					t.Fatalf("accepted a negative site %q: %d", s, b)
				}
			}
		}
		fl := attribution.CompareRanks(ranks)
		found := func(v int64) bool {
			for _, x := range fl.Ranks {
				if x.PeakAllocated == v {
					return true
				}
			}
			return false
		}
		if !found(fl.MedianPeak) || fl.Ranks[fl.Worst].PeakAllocated < fl.MedianPeak {
			t.Fatalf("median %d, worst %d: not the ranks' peaks", fl.MedianPeak, fl.Ranks[fl.Worst].PeakAllocated)
		}
		for _, o := range fl.Outliers {
			if z := fl.Z[o.Index]; z != z || z > -attribution.OutlierZ && z < attribution.OutlierZ {
				t.Fatalf("outlier with z %v", z)
			}
		}
	})
}

// builtSummary writes a summary document of the schema's shape with the
// given numbers: files entries of one device each, sites top sites.
func builtSummary(peak, reserved int64, files, sites int) []byte {
	doc := report.SummaryDoc{Schema: report.Schema, Kind: "summary"}
	for i := range files {
		d := report.SummaryDevice{Peaks: map[string]report.PeakJSON{"allocated": {Bytes: peak + int64(i)}, "reserved": {Bytes: reserved}}}
		for k := range sites {
			d.TopSites = append(d.TopSites, report.SiteJSON{Label: fmt.Sprintf("f.py:%d g", k), Bytes: peak / int64(k+1)})
		}
		doc.Files = append(doc.Files, report.SummaryFile{Source: fmt.Sprintf("snapshot.rank%d.pickle", i), Devices: []report.SummaryDevice{d}})
	}
	b, _ := json.Marshal(doc)
	return b
}

// ranksJSON runs memscope ranks --json ARGS… and decodes its result.
func ranksJSON(t *testing.T, args ...string) report.RanksJSON {
	t.Helper()
	r := runMemscope(append([]string{"ranks", "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("ranks %v: exit %d: %v", args, r.code, r.err)
	}
	var doc report.ResultDoc[report.RanksJSON]
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Result
}

// TestRanksAgreesWithSummaryRun: on one capture run, ranks and summary
// --run give the same median peak and the same worst rank with the same
// peak (one median rule: the mean of the middle two of the fixture's two
// ranks, 2.64 GiB, where ranks once said 2.51).
func TestRanksAgreesWithSummaryRun(t *testing.T) {
	const dir = "../../fixtures/capture-ddp"
	rk := ranksJSON(t, dir)
	r := runMemscope("summary", "--json", "--run", dir)
	if r.code != 0 {
		t.Fatalf("summary --run: exit %d: %v", r.code, r.err)
	}
	var run report.RunDoc
	if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
		t.Fatal(err)
	}
	sp := run.Spread
	if sp == nil || len(rk.Ranks) != 2 {
		t.Fatalf("summary --run worst rank %v, ranks %d; want both of 2 ranks", sp, len(rk.Ranks))
	}
	worst := rk.Ranks[rk.Worst]
	if rk.MedianPeak != sp.Median || worst.Rank != sp.Rank || worst.PeakAllocated != sp.Peak {
		t.Errorf("ranks: median %d, worst rank %d at %d; summary --run: median %d, worst rank %d at %d",
			rk.MedianPeak, worst.Rank, worst.PeakAllocated, sp.Median, sp.Rank, sp.Peak)
	}
	if a, b := run.Ranks[0].Peak.Allocated, run.Ranks[1].Peak.Allocated; sp.Median != a+(b-a)/2 {
		t.Errorf("median %d, want the mean of torch's two peaks %d and %d", sp.Median, a, b)
	}
}

// TestRanksNamesAndCountsOnce: a folder holding each rank's snapshot and
// its summary counts each rank once (from its summary); files whose names
// give no rank are named by their file, never "rank ?".
func TestRanksNamesAndCountsOnce(t *testing.T) {
	snaps := rankSet(t, 3, 1)
	dir := t.TempDir()
	for i := range 3 {
		sub := filepath.Join(dir, fmt.Sprintf("rank_%d", i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(snaps, fmt.Sprintf("snapshot.rank%d.pickle", i)))
		if err != nil {
			t.Fatal(err)
		}
		snap := filepath.Join(sub, "snapshot.pickle")
		if err := os.WriteFile(snap, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r := runMemscope("summary", "--json", snap)
		if r.code != 0 {
			t.Fatal(r.err)
		}
		if err := os.WriteFile(filepath.Join(sub, "summary.json"), []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := ranksJSON(t, dir)
	if len(got.Ranks) != 3 || len(got.Duplicates) != 0 {
		t.Fatalf("%d ranks, duplicates %v; want 3, each once", len(got.Ranks), got.Duplicates)
	}
	for i, x := range got.Ranks {
		if x.Rank != i || !strings.HasSuffix(x.File, "summary.json") {
			t.Errorf("ranks[%d] = rank %d from %s, want rank %d from its summary", i, x.Rank, x.File, i)
		}
	}

	plain := t.TempDir()
	var names []string
	for i, from := range []string{"rank_0", "rank_1", "rank_2"} {
		b, err := os.ReadFile(filepath.Join(dir, from, "snapshot.pickle"))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Join(plain, string(rune('a'+i))+".pickle"))
		if err := os.WriteFile(names[i], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := runMemscope(append([]string{"ranks"}, names...)...)
	if text.code != 0 || strings.Contains(text.stdout, "rank ?") || !strings.Contains(text.stdout, "outlier: "+names[1]+" ") ||
		!strings.Contains(text.stdout, " on "+names[1]+" (") {
		t.Errorf("ranks of files without a rank: exit %d, want the outlier and the worst named by its file %s, no \"rank ?\":\n%s", text.code, names[1], text.stdout)
	}
}
