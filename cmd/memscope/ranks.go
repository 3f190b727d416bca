package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/snapshot"
)

// ranksOptions are the flags of 'memscope ranks'.
type ranksOptions struct {
	json bool
	jobs int
	top  int
}

func ranksFlags(fs *pflag.FlagSet) runFunc {
	var o ranksOptions
	fs.BoolVar(&o.json, "json", false, "write JSON instead of text; sizes are raw bytes")
	fs.IntVarP(&o.jobs, "jobs", "j", min(2, runtime.NumCPU()), "read `N` ranks at a time: each worker holds one snapshot, and one decodes while the others analyse")
	fs.IntVar(&o.top, "top", 16, "show the `N` highest ranks (and every outlier) in the text table, and N differing sites per outlier")
	memoryFlag(fs)
	return func(cc *cmdContext, paths []string) error {
		if o.jobs < 1 {
			return usageErrorf("--jobs %d: want 1 or more", o.jobs)
		}
		if o.top < 1 {
			return usageErrorf("--top %d: want 1 or more", o.top)
		}
		inputs, err := rankInputs(paths)
		if err != nil {
			return err
		}
		gcChurn() // each worker's snapshot is garbage once its numbers are read
		stats, skipped := readRanks(cc, inputs, o.jobs)
		if len(stats) == 0 {
			return badInput(fmt.Errorf("no rank could be read: %s", strings.Join(skipped, "; ")))
		}
		f := report.Text
		if o.json {
			f = report.JSON
		}
		return report.Write(cc.stdout, f, &report.Ranks{Fleet: attribution.CompareRanks(stats), Top: o.top, Skipped: skipped})
	}
}

// rankInput is one file ranks reads, with what a capture run directory
// says of its rank.
type rankInput struct {
	path       string
	rank       int            // -1: from the file's name
	deviceUsed int64          // the run's sampled device used, -1 when not known
	coords     map[string]int // the run's coordinates of the rank
	// skip, when set, says why the input is not read (a named pipe found
	// in a directory); pipe: named on its own and not a regular file,
	// opened with pipeWait's limit.
	skip string
	pipe bool
}

// pipeWait is how long ranks waits for a process to open a named pipe
// given as a rank's file for writing (tests shorten it).
var pipeWait = 10 * time.Second

// notRegular says what path is when it is not a regular file ("" when it
// is, or cannot be stat'ed: opening it will say why).
func notRegular(path string) string {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() || st.IsDir() {
		return ""
	}
	switch m := st.Mode(); {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// waitPipe waits up to pipeWait for the named pipe path to have a writer:
// an open for reading returns once one opens it. The descriptor is held
// until release so the writer does not see the pipe closed meanwhile.
func waitPipe(path string) (release func(), err error) {
	got := make(chan *os.File, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			got <- nil
			return
		}
		got <- f
	}()
	select {
	case f := <-got:
		if f == nil {
			return func() {}, nil // the open that follows says why
		}
		return func() { f.Close() }, nil
	case <-time.After(pipeWait):
		// The goroutine stays blocked in open until a writer comes or
		// the process ends: harmless, one per such input.
		return nil, fmt.Errorf("%s: no process wrote to it within %s: give the snapshot as a file", notRegular(path), pipeWait)
	}
}

// rankInputs expands the arguments: files as given, globs, directories (a
// capture run directory for each rank's summary, else its snapshot, with
// the rank, device used and coordinates its capture.json gives; another
// directory for the snapshots and per-rank summary JSON files in it and
// one level down).
func rankInputs(args []string) ([]rankInput, error) {
	var out []rankInput
	plain := func(paths ...string) {
		for _, p := range paths {
			out = append(out, rankInput{path: p, rank: -1, deviceUsed: -1})
		}
	}
	// found adds files ranks found itself (in a directory, or by its own
	// glob): one that is not a regular file (a named pipe, a device, a
	// socket) is skipped with why, never opened: a FIFO no process
	// writes to would hold the open forever.
	found := func(paths ...string) {
		for _, p := range paths {
			if why := notRegular(p); why != "" {
				out = append(out, rankInput{path: p, rank: -1, deviceUsed: -1, skip: why + ": not read when found in a directory or by a pattern (name it on its own to read it)"})
				continue
			}
			plain(p)
		}
	}
	for _, a := range args {
		if _, err := os.Stat(a); err != nil && strings.ContainsAny(a, "*?[") {
			m, gerr := filepath.Glob(a)
			if gerr != nil {
				return nil, usageErrorf("%s: %v", a, gerr)
			}
			if len(m) == 0 {
				return nil, badInput(fmt.Errorf("%s matches no file", a))
			}
			found(m...)
			continue
		}
		st, err := os.Stat(a)
		if err != nil {
			return nil, badInput(err)
		}
		if !st.IsDir() {
			in := rankInput{path: a, rank: -1, deviceUsed: -1}
			if !st.Mode().IsRegular() {
				in.pipe = true
			}
			out = append(out, in)
			continue
		}
		if in, ok := runRanks(a); ok {
			out = append(out, in...)
			continue
		}
		if snaps, err := snapshotPaths([]string{a}); err == nil {
			found(snaps...)
			continue
		}
		var files []string
		for _, pat := range []string{"*.pickle", "*.pickle.gz", "*.json", "*/*.pickle", "*/*.pickle.gz", "*/*.json"} {
			m, _ := filepath.Glob(filepath.Join(a, pat))
			for _, p := range m {
				// isSummaryJSON opens the file: only a regular one.
				if strings.HasSuffix(p, ".json") && notRegular(p) == "" && !isSummaryJSON(p) {
					continue
				}
				files = append(files, p)
			}
		}
		if len(files) == 0 {
			return nil, badInput(fmt.Errorf("%s: no snapshot (*.pickle) or summary JSON (memscope summary --json) in it or one level down", a))
		}
		sort.Strings(files)
		found(files...)
	}
	return out, nil
}

// runRanks reads a capture run directory's ranks: each one's summary
// (summary.rankN.json, which capture writes at the end) where present, else
// its snapshot; false when dir is no capture run or has no rank to read.
func runRanks(dir string) ([]rankInput, bool) {
	if k, err := capture.DirKind(dir); err != nil || k != capture.KindCapture {
		return nil, false
	}
	rd, err := capture.ReadRun(dir)
	if err != nil {
		return nil, false
	}
	var out []rankInput
	for _, r := range rd.Ranks {
		in := rankInput{rank: r.Rank, deviceUsed: -1, coords: r.Coords}
		if r.DeviceUsed > 0 {
			in.deviceUsed = r.DeviceUsed
		}
		if p := filepath.Join(dir, capture.RankFile("summary", ".json", r.Rank, r.World)); fileExists(p) {
			in.path = p
		} else if p := filepath.Join(dir, filepath.Base(r.Files["snapshot"])); r.Files["snapshot"] != "" && fileExists(p) {
			in.path = p
		} else {
			continue
		}
		out = append(out, in)
	}
	return out, len(out) > 0
}

// rankRE finds a rank number in a file or directory name: snapshot.rank3.pickle,
// rank_3/, rank-3.json.
var rankRE = regexp.MustCompile(`(?i)rank[._-]?(\d+)`)

// rankOf is the rank a path names (its file name first, then its
// directories), -1 when none.
func rankOf(path string) int {
	for p := path; p != "." && p != "/" && p != ""; p = filepath.Dir(p) {
		if m := rankRE.FindStringSubmatch(filepath.Base(p)); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				return n
			}
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	return -1
}

// readRanks reads every input with jobs workers, each holding one snapshot
// at a time; inputs it cannot read are skipped, with why.
func readRanks(cc *cmdContext, inputs []rankInput, jobs int) ([]attribution.RankStats, []string) {
	type result struct {
		stats []attribution.RankStats
		err   error
	}
	results := make([]result, len(inputs))
	var mu sync.Mutex
	wcc := *cc
	wcc.stderr = lockedWriter{&mu, cc.stderr}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(jobs, len(inputs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if inputs[i].skip != "" {
					continue
				}
				st, err := readRank(&wcc, inputs[i])
				results[i] = result{st, err}
				collect() // the snapshot just read is garbage: free it before the next

			}
		}()
	}
	for i := range inputs {
		next <- i
	}
	close(next)
	wg.Wait()
	var stats []attribution.RankStats
	var skipped []string
	for i, r := range results {
		if inputs[i].skip != "" {
			r.err = errors.New(inputs[i].skip)
		}
		if r.err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", inputs[i].path, r.err))
			continue
		}
		stats = append(stats, r.stats...)
	}
	return stats, skipped
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// decodeMu serialises the workers' decoding (see readRank).
var decodeMu sync.Mutex

// readRank reads one input: a snapshot (its device with recorded events)
// or a summary JSON document (each file entry's first device), with what
// the run directory says of the rank.
func readRank(cc *cmdContext, in rankInput) ([]attribution.RankStats, error) {
	var out []attribution.RankStats
	if in.pipe && notRegular(in.path) == "a named pipe (FIFO)" {
		release, err := waitPipe(in.path)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	if strings.HasSuffix(in.path, ".json") {
		var err error
		if out, err = summaryRanks(in.path); err != nil {
			return nil, err
		}
	} else {
		// One decode at a time: decoding holds the unpickler's memo and
		// tape on top of the snapshot (a third more), so two workers
		// decoding at once would need twice that; a worker analyses while
		// the other decodes.
		decodeMu.Lock()
		s, err := openSnapshot(cc, in.path)
		decodeMu.Unlock()
		if err != nil {
			return nil, err
		}
		an := attribution.Analyze(s, attribution.Options{Device: -1})
		d := an.Primary()
		if d == nil {
			return nil, errors.New("no device in the snapshot")
		}
		out = []attribution.RankStats{attribution.RankStatsOf(d, in.path, rankOf(in.path))}
		for _, w := range s.Warnings {
			if w.Kind == snapshot.WarnLost {
				out[0].Mark(attribution.MarkTruncated)
			}
		}
	}
	if len(out) == 1 {
		if in.rank >= 0 {
			out[0].Rank = in.rank
		}
		if in.deviceUsed >= 0 && out[0].DeviceUsed < 0 {
			out[0].DeviceUsed = in.deviceUsed
		}
		if out[0].Coords == nil {
			out[0].Coords = in.coords
		}
	}
	return out, nil
}

// isSummaryJSON reports whether path looks like a 'memscope summary --json'
// document.
func isSummaryJSON(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	return strings.Contains(string(head[:n]), `"kind": "summary"`) || strings.Contains(string(head[:n]), `"kind":"summary"`)
}

// summaryDoc is what ranks reads of a summary document (docs/json.md).
type summaryDoc struct {
	Schema string `json:"schema"`
	Kind   string `json:"kind"`
	Files  []struct {
		Source   string   `json:"source"`
		Warnings []string `json:"warnings"`
		Devices  []struct {
			Device   int      `json:"device"`
			Warnings []string `json:"warnings"`
			Peaks    struct {
				Allocated struct{ Bytes int64 } `json:"allocated"`
				Reserved  struct{ Bytes int64 } `json:"reserved"`
			} `json:"peaks"`
			DeviceUsedPeak *int64 `json:"device_used_peak"`
			PeakStep       *int   `json:"peak_step"`
			PeakPhase      string `json:"peak_phase"`
			TopSites       []struct {
				Label string `json:"label"`
				Bytes int64  `json:"bytes"`
			} `json:"top_sites"`
		} `json:"devices"`
	} `json:"files"`
}

// maxRankBytes bounds a byte count a summary may give: 1 PiB.
const maxRankBytes = 1 << 50

// maxSummaryJSON bounds a summary document ranks reads: a summary is a few
// hundred KB at most.
const maxSummaryJSON = 64 << 20

func summaryRanks(path string) ([]attribution.RankStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var doc summaryDoc
	dec := json.NewDecoder(io.LimitReader(f, maxSummaryJSON))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a summary JSON document (memscope summary --json): %v", err)
	}
	if doc.Schema != report.Schema || doc.Kind != "summary" {
		return nil, fmt.Errorf("schema %q kind %q, want a %s summary document (memscope summary --json)", doc.Schema, doc.Kind, report.Schema)
	}
	var out []attribution.RankStats
	for k, file := range doc.Files {
		if len(file.Devices) == 0 {
			continue
		}
		d := file.Devices[0]
		bad := func(what string, v int64) error {
			return fmt.Errorf("files[%d] (%s) device %d: %s %d B: want 0 to %d (1 PiB)", k, file.Source, d.Device, what, v, maxRankBytes)
		}
		for _, c := range []struct {
			what string
			v    int64
		}{{"peak allocated", d.Peaks.Allocated.Bytes}, {"peak reserved", d.Peaks.Reserved.Bytes}} {
			if c.v < 0 || c.v > maxRankBytes {
				return nil, bad(c.what, c.v)
			}
		}
		if u := d.DeviceUsedPeak; u != nil && (*u < 0 || *u > maxRankBytes) {
			return nil, bad("device used", *u)
		}
		for _, s := range d.TopSites {
			if s.Bytes < 0 || s.Bytes > maxRankBytes {
				return nil, bad("site "+strconv.Quote(s.Label), s.Bytes)
			}
		}
		name := path
		if len(doc.Files) > 1 {
			name = path + ": " + file.Source
		}
		rank := rankOf(path)
		if len(doc.Files) > 1 || rank < 0 {
			rank = rankOf(file.Source)
		}
		r := attribution.RankStats{Name: name, Rank: rank, Device: d.Device, PeakAllocated: d.Peaks.Allocated.Bytes,
			PeakReserved: d.Peaks.Reserved.Bytes, DeviceUsed: -1, PeakStep: -1, PeakPhase: d.PeakPhase, Sites: map[string]int64{}}
		if d.DeviceUsedPeak != nil {
			r.DeviceUsed = *d.DeviceUsedPeak
		}
		if d.PeakStep != nil {
			r.PeakStep = *d.PeakStep
		}
		for _, s := range d.TopSites {
			r.Sites[s.Label] += s.Bytes
		}
		// The summary's own warnings (docs/json.md): a file cut short, a
		// trace contradicting the segments.
		for _, w := range file.Warnings {
			if strings.Contains(w, "ends early") || strings.Contains(w, "cut short") {
				r.Mark(attribution.MarkTruncated)
			}
		}
		for _, w := range d.Warnings {
			if strings.Contains(w, "contradicts the snapshot") {
				r.Mark(attribution.MarkContradiction)
			}
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, errors.New("the summary has no device")
	}
	return out, nil
}
