package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/memscope/memscope/internal/testenv"
	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/snapshot"
)

// TestPProf writes profiles of fixtures, checks them with pprof's own
// parser, and reads them back with 'go tool pprof -top' as a user would:
// the first line with a source location must be the site truth.json names.
func TestPProf(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		testenv.Need(t, "go not on PATH: cannot run 'go tool pprof'")
	}
	type site struct {
		File string `json:"file"`
		Line int64  `json:"line"`
	}
	for _, tt := range []struct {
		fixture, at string
		want        func(tr *truth.File) []site
	}{
		{"leak", "end", func(tr *truth.File) []site { return []site{{tr.Leak.File, tr.Leak.Line}} }},
		{"llama-bf16", "peak", func(tr *truth.File) []site {
			var out []site
			for _, s := range tr.Sites {
				out = append(out, site{s.File, s.Line})
			}
			return out
		}},
	} {
		t.Run(tt.fixture, func(t *testing.T) {
			snap := filepath.Join("../../fixtures", tt.fixture, "snapshot.pickle")
			p, out := runPProf(t, "--at", tt.at, snap)
			if err := p.CheckValid(); err != nil {
				t.Fatalf("CheckValid: %v", err)
			}
			if len(p.SampleType) != 4 || p.SampleType[0].Type != "inuse_space" || p.SampleType[2].Type != "alloc_space" {
				t.Errorf("sample types = %v", p.SampleType)
			}
			tr := readFixtureTruth(t, tt.fixture)
			want := tt.want(tr)
			if len(want) == 0 {
				t.Fatal("truth names no site")
			}
			for _, idx := range []string{"inuse_space", "alloc_space"} {
				cmd := exec.Command(goTool, "tool", "pprof", "-top", "-lines", "-sample_index="+idx, out)
				b, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("go tool pprof -sample_index=%s: %v\n%s", idx, err, b)
				}
				if idx == "alloc_space" {
					continue // it must work; which site leads depends on the window
				}
				first := firstTopRow(string(b))
				ok := false
				for _, s := range want {
					ok = ok || strings.HasSuffix(first, " "+s.File+":"+strconv.FormatInt(s.Line, 10))
				}
				if !ok {
					t.Errorf("go tool pprof -top -lines: first row %q, want one of %v\n%s", first, want, b)
				}
			}
		})
	}
}

// firstTopRow returns the first row of a 'pprof -top' table that names a
// source line: the synthetic leaves of blocks with no Python frame ("(allocated
// before recording began)") name none.
func firstTopRow(out string) string {
	for _, r := range regexp.MustCompile(`(?m)^\s*[0-9.]+[kMG]?B\s.*$`).FindAllString(out, -1) {
		if r = strings.TrimSpace(r); !strings.HasSuffix(r, ")") {
			return r
		}
	}
	return ""
}

var (
	topShownRE = regexp.MustCompile(`(?m)^Showing nodes accounting for (\d+)B, [0-9.e+-]+% of (\d+)B total$`)
	topFlatRE  = regexp.MustCompile(`(?m)^\s*(\d+)B?\s+[0-9.e+-]+%\s+[0-9.e+-]+%\s`)
)

// pprofTop runs 'go tool pprof -top' on the inuse_space of the profile at
// path, in bytes and with no node dropped, and returns the bytes its nodes
// account for, the profile's total, and the sum of the rows' flat bytes.
func pprofTop(t *testing.T, goTool, path string) (shown, total, flat int64) {
	t.Helper()
	b, err := exec.Command(goTool, "tool", "pprof", "-top", "-unit=B", "-nodefraction=0", "-nodecount=1000000",
		"-sample_index=inuse_space", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, b)
	}
	m := topShownRE.FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("go tool pprof -top: no \"Showing nodes accounting for\" line\n%s", b)
	}
	shown, _ = strconv.ParseInt(m[1], 10, 64)
	total, _ = strconv.ParseInt(m[2], 10, 64)
	for _, r := range topFlatRE.FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.ParseInt(r[1], 10, 64)
		flat += n
	}
	return shown, total, flat
}

// runPProf runs memscope pprof with args (the snapshot last) into a
// temporary file and returns the parsed profile and the file.
func runPProf(t *testing.T, args ...string) (*profile.Profile, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "mem.pb.gz")
	args = append([]string{"pprof", "-o", out}, args...)
	if r := runMemscope(args...); r.err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), r.err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("profile.Parse: %v", err)
	}
	return p, out
}

// TestPProfPythonNames: Python's own function names in angle brackets
// (<module>) read as they are in 'go tool pprof', not as <unknown>: pprof
// demangles names it takes for C++ and strips their <…>.
func TestPProfPythonNames(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		testenv.Need(t, "go not on PATH: cannot run 'go tool pprof'")
	}
	_, out := runPProf(t, "../../fixtures/mlp-adamw/snapshot.pickle")
	b, err := exec.Command(goTool, "tool", "pprof", "-top", "-sample_index=alloc_space", out).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), " <module>\n") || strings.Contains(string(b), "<unknown>") {
		t.Errorf("go tool pprof -top does not name the harness's <module> frame:\n%s", b)
	}
}

// TestPProfTotals: at --at peak the profile's inuse_space samples add up
// to torch's max_memory_allocated (window max_allocated) to the byte, on
// every fixture with a truth.json, and every one of them has a location:
// 'go tool pprof -top' shows nodes accounting for all of it, and the flat
// bytes of its rows add up to it (blocks from before recording and from
// the autograd engine have a synthetic leaf); its alloc_* samples count every alloc
// event the snapshot records, with the bytes of the block each one got
// (the snapshot package's replay, Timeline.AllocSizes: at least the
// request rounded up to the allocator's 512 bytes).
func TestPProfTotals(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		testenv.Need(t, "go not on PATH: cannot run 'go tool pprof'")
	}
	for _, dir := range truthFixtures(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			snap := filepath.Join(dir, "snapshot.pickle")
			p, out := runPProf(t, "--at", "peak", snap)
			var inuse, inuseN, alloc, allocN int64
			for _, s := range p.Sample {
				inuse += s.Value[0]
				inuseN += s.Value[1]
				alloc += s.Value[2]
				allocN += s.Value[3]
				if len(s.Location) == 0 {
					t.Errorf("a sample of %d bytes in use, %d allocated (labels %v) has no location", s.Value[0], s.Value[2], s.Label)
				}
			}
			tr := readFixtureTruth(t, filepath.Base(dir))
			if inuse != tr.Window.MaxAllocated {
				t.Errorf("Σ inuse_space at peak = %d, want %d (torch's max_memory_allocated)", inuse, tr.Window.MaxAllocated)
			}
			shown, total, flat := pprofTop(t, goTool, out)
			if shown != tr.Window.MaxAllocated || total != tr.Window.MaxAllocated || flat != tr.Window.MaxAllocated {
				t.Errorf("go tool pprof -top: nodes accounting for %d B of %d B total, rows' flat bytes %d; want all %d (torch's max_memory_allocated)",
					shown, total, flat, tr.Window.MaxAllocated)
			}
			t.Logf("go tool pprof -top: %d B in the rows, %d B total; torch's max_memory_allocated %d B", flat, total, tr.Window.MaxAllocated)
			s, err := snapshot.Open(snap)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Devices()) != 1 {
				t.Fatalf("%d devices, want 1", len(s.Devices()))
			}
			dev := s.Devices()[0]
			sizes := snapshot.Replay(s, dev, snapshot.ReplayOptions{}).AllocSizes()
			var n, blocks, rounded int64
			for i, ev := range s.Traces[dev] {
				if ev.Action == snapshot.ActionAlloc {
					n++
					blocks += sizes[i]
					rounded += (ev.Size + 511) / 512 * 512
				}
			}
			if allocN != n || alloc != blocks {
				t.Errorf("Σ alloc_objects, alloc_space = %d, %d; want %d alloc events of %d bytes of blocks", allocN, alloc, n, blocks)
			}
			if blocks < rounded {
				t.Errorf("Σ block bytes of the allocs = %d, below the requests rounded to 512 bytes, %d", blocks, rounded)
			}
			// inuse_objects: the blocks live at the peak's event, less
			// those pending free (their memory is not in allocated).
			var doc peakAtDoc
			runJSON(t, &doc, "peak", "--json", "--top", "0", snap)
			var liveN int64
			for _, b := range snapshot.Replay(s, dev, snapshot.ReplayOptions{}).LiveAt(doc.Files[0].Devices[0].EventIndex) {
				if !b.PendingFree {
					liveN++
				}
			}
			if inuseN != liveN {
				t.Errorf("Σ inuse_objects = %d, want the %d blocks live at the peak", inuseN, liveN)
			}
		})
	}
}
