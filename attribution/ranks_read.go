package attribution

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/report/jsondoc"
	"github.com/memscope/memscope/snapshot"
)

// This file finds and reads a job's ranks for CompareRanks: files, globs,
// capture run directories and folders of snapshots or per-rank summaries
// (RankInputs), read by a pool of workers that each hold one snapshot at a
// time (ReadRanks).

// RankInput is one file to read as a rank, with what a capture run
// directory says of it.
type RankInput struct {
	Path       string
	Rank       int            // -1: from the file's name
	DeviceUsed int64          // the run's sampled device used, -1 when not known
	Coords     map[string]int // the run's coordinates of the rank
	// Retries and OOMs are the run's memory_stats() at the rank's exit
	// (num_alloc_retries, num_ooms), -1 when not known.
	Retries, OOMs int64
	// Skip, when set, says why the input is not read (a named pipe found
	// in a directory); Pipe: named on its own and not a regular file,
	// waited for up to PipeWait.
	Skip string
	Pipe bool
}

// PipeWait is how long ReadRanks waits for a process to open a named pipe
// given as a rank's file for writing (tests shorten it).
var PipeWait = 10 * time.Second

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

// waitPipe waits up to PipeWait for the named pipe path to have a writer:
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
	case <-time.After(PipeWait):
		// The goroutine stays blocked in open until a writer comes or
		// the process ends: harmless, one per such input.
		return nil, fmt.Errorf("%s: no process wrote to it within %s: give the snapshot as a file", notRegular(path), PipeWait)
	}
}

// RankInputs expands the arguments of 'memscope ranks': files as given,
// globs, directories (a capture run directory for each rank's summary,
// else its snapshot, with the rank, device used and coordinates its
// capture.json gives; another directory for the snapshots and per-rank
// summary JSON files in it and one level down). A malformed glob is
// filepath.ErrBadPattern; every error names the argument.
func RankInputs(args []string) ([]RankInput, error) {
	var out []RankInput
	plain := func(paths ...string) {
		for _, p := range paths {
			out = append(out, RankInput{Path: p, Rank: -1, DeviceUsed: -1, Retries: -1, OOMs: -1})
		}
	}
	// found adds files ranks found itself (in a directory, or by its own
	// glob): one that is not a regular file (a named pipe, a device, a
	// socket) is skipped with why, never opened: a FIFO no process
	// writes to would hold the open forever.
	found := func(paths ...string) {
		for _, p := range paths {
			if why := notRegular(p); why != "" {
				out = append(out, RankInput{Path: p, Rank: -1, DeviceUsed: -1, Retries: -1, OOMs: -1, Skip: why + ": not read when found in a directory or by a pattern (name it on its own to read it)"})
				continue
			}
			plain(p)
		}
	}
	for _, a := range args {
		if _, err := os.Stat(a); err != nil && strings.ContainsAny(a, "*?[") {
			m, gerr := filepath.Glob(a)
			if gerr != nil {
				return nil, fmt.Errorf("%s: %w", a, gerr)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("%s matches no file", a)
			}
			found(m...)
			continue
		}
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			in := RankInput{Path: a, Rank: -1, DeviceUsed: -1, Retries: -1, OOMs: -1}
			if !st.Mode().IsRegular() {
				in.Pipe = true
			}
			out = append(out, in)
			continue
		}
		if in, ok := runRanks(a); ok {
			out = append(out, in...)
			continue
		}
		if snaps, err := capture.SnapshotPaths([]string{a}); err == nil {
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
			return nil, fmt.Errorf("%s: no snapshot (*.pickle) or summary JSON (memscope summary --json) in it or one level down", a)
		}
		sort.Strings(files)
		found(onceEach(files)...)
	}
	return out, nil
}

// onceEach drops from files each snapshot that a summary beside it (in
// the same directory) describes: one whose source has the snapshot's
// name, or that names the same rank. The summary stands for the rank: it
// is a few KB where the snapshot is the whole recording.
func onceEach(files []string) []string {
	type key struct {
		dir  string
		name string // a file name, or "#N" for rank N
	}
	described := map[key]bool{}
	for _, p := range files {
		if !strings.HasSuffix(p, ".json") || notRegular(p) != "" { // a FIFO is never opened here
			continue
		}
		dir := filepath.Dir(p)
		if n := RankOf(p); n >= 0 {
			described[key{dir, "#" + strconv.Itoa(n)}] = true
		}
		for _, src := range summarySources(p) {
			described[key{dir, filepath.Base(src)}] = true
		}
	}
	var out []string
	for _, p := range files {
		dir := filepath.Dir(p)
		if !strings.HasSuffix(p, ".json") && (described[key{dir, filepath.Base(p)}] || RankOf(p) >= 0 && described[key{dir, "#" + strconv.Itoa(RankOf(p))}]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// summarySources are the snapshots a summary document describes (its
// files' sources); none when it cannot be read.
func summarySources(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var doc struct {
		Files []struct {
			Source string `json:"source"`
		} `json:"files"`
	}
	if json.NewDecoder(io.LimitReader(f, maxSummaryJSON)).Decode(&doc) != nil {
		return nil
	}
	var out []string
	for _, file := range doc.Files {
		out = append(out, file.Source)
	}
	return out
}

// runRanks reads a capture run directory's ranks: each one's summary
// (summary.rankN.json, which capture writes at the end) where present, else
// its snapshot; false when dir is no capture run or has no rank to read.
func runRanks(dir string) ([]RankInput, bool) {
	if k, err := capture.DirKind(dir); err != nil || k != capture.KindCapture {
		return nil, false
	}
	rd, err := capture.ReadRun(dir)
	if err != nil {
		return nil, false
	}
	var out []RankInput
	for _, r := range rd.Ranks {
		in := RankInput{Rank: r.Rank, DeviceUsed: -1, Coords: r.Coords, Retries: -1, OOMs: -1}
		if r.DeviceUsed > 0 {
			in.DeviceUsed = r.DeviceUsed
		}
		if v, ok := r.MemoryStatsEnd["num_alloc_retries"]; ok && v >= 0 && v < 1<<53 {
			in.Retries = int64(v)
		}
		if v, ok := r.MemoryStatsEnd["num_ooms"]; ok && v >= 0 && v < 1<<53 {
			in.OOMs = int64(v)
		}
		if p := filepath.Join(dir, capture.RankFile("summary", ".json", r.Rank, r.World)); regularFile(p) {
			in.Path = p
		} else if p := filepath.Join(dir, filepath.Base(r.Files["snapshot"])); r.Files["snapshot"] != "" && regularFile(p) {
			in.Path = p
		} else {
			continue
		}
		out = append(out, in)
	}
	return out, len(out) > 0
}

func regularFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// rankRE finds a rank number in a file or directory name: snapshot.rank3.pickle,
// rank_3/, rank-3.json.
var rankRE = regexp.MustCompile(`(?i)rank[._-]?(\d+)`)

// RankOf is the rank a path names (its file name first, then its
// directories), -1 when none.
func RankOf(path string) int {
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

// ReadRanksOptions tune ReadRanks.
type ReadRanksOptions struct {
	// Jobs is the number of workers (at least 1).
	Jobs int
	// Open decodes a rank's snapshot: the caller's memory budget and
	// warnings (called by one worker at a time).
	Open func(path string) (*snapshot.Snapshot, error)
	// Done, when set, is called by a worker after each rank it read: its
	// snapshot is garbage then (the caller's collection policy).
	Done func()
}

// ReadRanks reads every input with opt.Jobs workers, each holding one
// snapshot at a time; inputs it cannot read are skipped, with why.
func ReadRanks(inputs []RankInput, opt ReadRanksOptions) ([]RankStats, []string) {
	type result struct {
		stats []RankStats
		err   error
	}
	results := make([]result, len(inputs))
	var decodeMu sync.Mutex
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(max(opt.Jobs, 1), len(inputs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if inputs[i].Skip != "" {
					continue
				}
				st, err := readRank(inputs[i], opt.Open, &decodeMu)
				results[i] = result{st, err}
				if opt.Done != nil {
					opt.Done()
				}
			}
		}()
	}
	for i := range inputs {
		next <- i
	}
	close(next)
	wg.Wait()
	var stats []RankStats
	var skipped []string
	for i, r := range results {
		if inputs[i].Skip != "" {
			r.err = errors.New(inputs[i].Skip)
		}
		if r.err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", inputs[i].Path, r.err))
			continue
		}
		stats = append(stats, r.stats...)
	}
	return stats, skipped
}

// readRank reads one input: a snapshot (its device with recorded events)
// or a summary JSON document (each file entry's first device), with what
// the run directory says of the rank. Decoding holds decodeMu.
func readRank(in RankInput, open func(string) (*snapshot.Snapshot, error), decodeMu *sync.Mutex) ([]RankStats, error) {
	var out []RankStats
	if in.Pipe && notRegular(in.Path) == "a named pipe (FIFO)" {
		release, err := waitPipe(in.Path)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	if strings.HasSuffix(in.Path, ".json") {
		var err error
		if out, err = SummaryRanks(in.Path); err != nil {
			return nil, err
		}
	} else {
		// One decode at a time: decoding holds the unpickler's memo and
		// tape on top of the snapshot (a third more), so two workers
		// decoding at once would need twice that; a worker analyses while
		// the other decodes.
		decodeMu.Lock()
		s, err := open(in.Path)
		decodeMu.Unlock()
		if err != nil {
			return nil, err
		}
		an := Analyze(s, Options{Device: -1})
		d := an.Primary()
		if d == nil {
			return nil, errors.New("no device in the snapshot")
		}
		out = []RankStats{RankStatsOf(d, in.Path, RankOf(in.Path))}
		for _, w := range s.Warnings {
			if w.Kind == snapshot.WarnLost {
				out[0].Mark(MarkTruncated)
			}
		}
	}
	if len(out) == 1 {
		if in.Rank >= 0 {
			out[0].Rank = in.Rank
		}
		if in.DeviceUsed >= 0 && out[0].DeviceUsed < 0 {
			out[0].DeviceUsed = in.DeviceUsed
		}
		if out[0].Coords == nil {
			out[0].Coords = in.Coords
		}
		if in.Retries >= 0 {
			out[0].Retries = in.Retries
		}
		if in.OOMs >= 0 {
			out[0].OOMs = max(out[0].OOMs, in.OOMs)
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

// SummarySchema is the schema a summary document ranks reads carries
// (jsondoc.Schema).
const SummarySchema = jsondoc.Schema

// maxRankBytes bounds a byte count a summary may give: 1 PiB.
const maxRankBytes = 1 << 50

// maxSummaryJSON bounds a summary document ranks reads: a summary is a few
// hundred KB at most.
const maxSummaryJSON = 64 << 20

// SummaryRanks reads the ranks of a 'memscope summary --json' document:
// each file entry's first device.
func SummaryRanks(path string) ([]RankStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var doc jsondoc.SummaryDoc
	dec := json.NewDecoder(io.LimitReader(f, maxSummaryJSON))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a summary JSON document (memscope summary --json): %v", err)
	}
	if doc.Schema != SummarySchema || doc.Kind != "summary" {
		return nil, fmt.Errorf("schema %q kind %q, want a %s summary document (memscope summary --json)", doc.Schema, doc.Kind, SummarySchema)
	}
	var out []RankStats
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
		}{{"peak allocated", d.Peaks["allocated"].Bytes}, {"peak reserved", d.Peaks["reserved"].Bytes}} {
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
		rank := RankOf(path)
		if len(doc.Files) > 1 || rank < 0 {
			rank = RankOf(file.Source)
		}
		r := RankStats{Name: name, Rank: rank, Device: d.Device, PeakAllocated: d.Peaks["allocated"].Bytes,
			PeakReserved: d.Peaks["reserved"].Bytes, DeviceUsed: -1, PeakStep: -1, PeakPhase: d.PeakPhase, Retries: -1, OOMs: int64(max(d.OOMs, 0)),
			Sites: map[string]int64{}}
		for _, fd := range d.Findings {
			if fd.Kind == FindingLeak.String() && fd.Problem {
				r.LeakFound, r.Leak = true, -1 // a summary gives the finding, not its bytes
			}
		}
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
				r.Mark(MarkTruncated)
			}
		}
		for _, w := range d.Warnings {
			if strings.Contains(w, "contradicts the snapshot") {
				r.Mark(MarkContradiction)
			}
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, errors.New("the summary has no device")
	}
	return out, nil
}
