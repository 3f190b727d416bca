// Package python tests memscope's Python package (python/memscope) and the
// wheels python/build.sh writes; it has no Go code of its own.
//
// TestPythonUnit runs the package's torch-free unittest file. TestWheel
// builds the wheels of this machine's platform (all seven under CI=true or
// with MEMSCOPE_ALL_WHEELS=1), checks each one's RECORD, metadata, licences
// and binary, installs the linux amd64 wheel into a fresh venv with pip
// --no-index and holds memscope.analyze's numbers to the fixture's
// truth.json.
package python

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memscope/memscope/internal/testenv"
	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/internal/units"
)

// testVersion is the version the test builds the wheels at.
const testVersion = "0.1.0.dev7"

// fixture is the memscope.record snapshot analyze is checked on.
const fixture = "fixtures/plain-record"

// platform is one wheel python/build.sh writes.
type platform struct {
	goos, goarch string // what its binary is built for
	tag          string // the wheel's platform tag
	exe          string // the binary's name in memscope/bin
	check        func(b []byte) error
}

// platforms are the wheels build.sh writes, the linux amd64 one first. The
// musllinux wheels hold the same static binary as the manylinux ones.
var platforms = []platform{
	{"linux", "amd64", "manylinux_2_17_x86_64.manylinux2014_x86_64", "memscope", elfCheck(elf.EM_X86_64)},
	{"linux", "amd64", "musllinux_1_1_x86_64", "memscope", elfCheck(elf.EM_X86_64)},
	{"linux", "arm64", "manylinux_2_17_aarch64.manylinux2014_aarch64", "memscope", elfCheck(elf.EM_AARCH64)},
	{"linux", "arm64", "musllinux_1_1_aarch64", "memscope", elfCheck(elf.EM_AARCH64)},
	{"darwin", "amd64", "macosx_10_12_x86_64", "memscope", machoCheck(macho.CpuAmd64, false)},
	{"darwin", "arm64", "macosx_11_0_arm64", "memscope", machoCheck(macho.CpuArm64, true)},
	{"windows", "amd64", "win_amd64", "memscope.exe", peCheck(pe.IMAGE_FILE_MACHINE_AMD64)},
}

// allWheels reports whether TestWheel builds every platform's wheel (under
// CI, or with MEMSCOPE_ALL_WHEELS=1) rather than this machine's only.
func allWheels() bool {
	return os.Getenv("CI") == "true" || os.Getenv("MEMSCOPE_ALL_WHEELS") == "1"
}

// elfCheck: a static ELF executable (no interpreter) for machine m.
func elfCheck(m elf.Machine) func([]byte) error {
	return func(b []byte) error {
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return err
		}
		if f.Machine != m {
			return fmt.Errorf("ELF machine %v, want %v", f.Machine, m)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				return fmt.Errorf("ELF has an interpreter (dynamically linked), want a static binary")
			}
		}
		return nil
	}
}

// machoCheck: a Mach-O executable for cpu c; signed: with a code
// signature (the ad-hoc one Go's linker writes), which arm64 macOS needs
// before it runs a binary.
func machoCheck(c macho.Cpu, signed bool) func([]byte) error {
	return func(b []byte) error {
		f, err := macho.NewFile(bytes.NewReader(b))
		if err != nil {
			return err
		}
		if f.Cpu != c || f.Type != macho.TypeExec {
			return fmt.Errorf("Mach-O cpu %v type %v, want %v executable", f.Cpu, f.Type, c)
		}
		const lcCodeSignature = 0x1d
		has := false
		for _, l := range f.Loads {
			if raw := l.Raw(); len(raw) >= 4 && f.ByteOrder.Uint32(raw) == lcCodeSignature {
				has = true
			}
		}
		if signed && !has {
			return fmt.Errorf("Mach-O has no LC_CODE_SIGNATURE: arm64 macOS refuses to run it")
		}
		return nil
	}
}

func peCheck(m uint16) func([]byte) error {
	return func(b []byte) error {
		f, err := pe.NewFile(bytes.NewReader(b))
		if err != nil {
			return err
		}
		if f.Machine != m {
			return fmt.Errorf("PE machine %#x, want %#x", f.Machine, m)
		}
		return nil
	}
}

// needPython returns python3's path, or stops the test (testenv.Need).
func needPython(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Need(t, "python3 not found: the Python package's tests need it")
	}
	return py
}

// run runs a command in dir and returns its stdout; it fails the test,
// with stderr, when the command fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	r := runStatus(dir, env, name, args...)
	if r.err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r.stdout
}

type result struct {
	stdout, stderr string
	status         int
	err            error
}

func runStatus(dir string, env []string, name string, args ...string) result {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PIP_DISABLE_PIP_VERSION_CHECK=1",
		"PIP_NO_INPUT=1"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	}
	return result{stdout.String(), stderr.String(), status, err}
}

// TestPythonUnit runs the package's torch-free tests (rank_path, record's
// argument checks and lazy torch import, the binary lookup, the wheel
// writer) with python3.
func TestPythonUnit(t *testing.T) {
	py := needPython(t)
	r := runStatus(".", nil, py, "-m", "unittest", "discover", "-v", "-s", "tests")
	if r.err != nil {
		t.Fatalf("python3 -m unittest discover -s tests: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	t.Log(r.stderr) // unittest reports there
}

// TestWheel builds the wheels with python/build.sh (this machine's
// GOOS/GOARCH only, unless allWheels), checks every one, and installs the
// linux amd64 wheel into a fresh venv: the memscope command, python -m
// memscope, and memscope.analyze, whose numbers are torch's own in the
// fixture's truth.json.
func TestWheel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memscope and installs a wheel; skipped with -short")
	}
	py := needPython(t)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		testenv.Need(t, "the go command is not on PATH: build.sh cross-compiles with it")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		testenv.Need(t, "bash not found: python/build.sh needs it")
	}
	if r := runStatus(".", nil, py, "-c", "import venv, ensurepip"); r.err != nil {
		testenv.Need(t, "python3 has no venv/ensurepip (Debian: apt-get install python3-venv): %s", strings.TrimSpace(r.stderr))
	}

	dist := t.TempDir()
	args, built := []string{"build.sh", dist, testVersion}, platforms
	if !allWheels() {
		args = []string{"build.sh", "--host", dist, testVersion}
		built = nil
		for _, p := range platforms {
			if p.goos == runtime.GOOS && p.goarch == runtime.GOARCH {
				built = append(built, p)
			}
		}
		t.Logf("building the wheels of %s/%s only (CI=true or MEMSCOPE_ALL_WHEELS=1 builds all %d)", runtime.GOOS, runtime.GOARCH, len(platforms))
	}
	start := time.Now()
	out := runStatus(".", []string{"GO=" + goCmd}, "bash", args...)
	if out.err != nil {
		t.Fatalf("bash python/%s: %v\n%s", strings.Join(args, " "), out.err, out.stderr)
	}
	t.Logf("build.sh: %s\n%s", time.Since(start).Round(time.Millisecond), out.stderr)

	wheels := map[string]string{}
	for _, p := range built {
		name := fmt.Sprintf("memscope-%s-py3-none-%s.whl", testVersion, p.tag)
		wheels[p.tag] = filepath.Join(dist, name)
		t.Run(p.tag, func(t *testing.T) { checkWheel(t, wheels[p.tag], p) })
	}
	if entries, _ := os.ReadDir(dist); len(entries) != len(built) {
		t.Errorf("build.sh wrote %d files, want the %d wheels", len(entries), len(built))
	}

	readme := readmeSection(t)
	t.Run("readme", func(t *testing.T) { checkReadme(t, readme, wheels[platforms[0].tag]) })

	t.Run("install", func(t *testing.T) {
		if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
			t.Skipf("the linux amd64 wheel does not run on %s/%s", runtime.GOOS, runtime.GOARCH)
		}
		installed(t, py, wheels[platforms[0].tag], readme)
	})
	if len(built) < len(platforms) {
		t.Logf("built %d of the %d wheels: CI=true or MEMSCOPE_ALL_WHEELS=1 builds and checks every one", len(built), len(platforms))
	}
}

// readmeSection returns the README's "pip install memscope" section.
func readmeSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## `pip install memscope`\n")
	if !ok {
		t.Fatal("README.md has no '## `pip install memscope`' section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// checkReadme: the README's commands build the wheels the way this test
// does, and its pip install line names the linux amd64 wheel.
func checkReadme(t *testing.T, section, linuxWheel string) {
	if !strings.Contains(section, "\nbash python/build.sh dist\n") {
		t.Error("README.md's pip install section does not build with 'bash python/build.sh dist'")
	}
	n := 0
	for line := range strings.Lines(section) {
		pattern, ok := strings.CutPrefix(strings.TrimSpace(line), "pip install dist/")
		if !ok {
			continue
		}
		n++
		if m, err := filepath.Match(pattern, filepath.Base(linuxWheel)); err != nil || !m {
			t.Errorf("README.md's 'pip install dist/%s' does not match the wheel build.sh wrote, %s", pattern, filepath.Base(linuxWheel))
		}
	}
	if n == 0 {
		t.Error("README.md's pip install section has no 'pip install dist/…whl' line")
	}
}

// readmeNames returns the memscope.X and a.X names the README's Python
// lines use, for the installed package to have.
func readmeNames(section string) (module, analysis []string) {
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`\b(memscope|a)\.([A-Za-z_]\w*)`).FindAllStringSubmatch(section, -1) {
		if seen[m[0]] {
			continue
		}
		seen[m[0]] = true
		if m[1] == "memscope" {
			module = append(module, m[2])
		} else {
			analysis = append(analysis, m[2])
		}
	}
	return module, analysis
}

// checkWheel opens one wheel: every file RECORD lists is there with its
// digest and size and every file is listed; the binary is executable
// (mode 0755), built for the platform, and the dist-info says the version
// and the tags.
func checkWheel(t *testing.T, path string, p platform) {
	z, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	files := map[string][]byte{}
	modes := map[string]os.FileMode{}
	for _, f := range z.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		files[f.Name] = b
		modes[f.Name] = f.Mode()
	}
	distInfo := "memscope-" + testVersion + ".dist-info/"
	rows, err := csv.NewReader(bytes.NewReader(files[distInfo+"RECORD"])).ReadAll()
	if err != nil {
		t.Fatalf("RECORD: %v", err)
	}
	listed := map[string]bool{}
	for _, row := range rows {
		if len(row) != 3 {
			t.Fatalf("RECORD row %q: want path,hash,size", row)
		}
		name, hash, size := row[0], row[1], row[2]
		listed[name] = true
		if name == distInfo+"RECORD" {
			if hash != "" || size != "" {
				t.Errorf("RECORD lists itself with %q,%q, want empty hash and size", hash, size)
			}
			continue
		}
		b, ok := files[name]
		if !ok {
			t.Errorf("RECORD lists %s, which the wheel does not hold", name)
			continue
		}
		sum := sha256.Sum256(b)
		if want := "sha256=" + base64.RawURLEncoding.EncodeToString(sum[:]); hash != want {
			t.Errorf("RECORD %s hash = %s, want %s", name, hash, want)
		}
		if n, err := strconv.Atoi(size); err != nil || n != len(b) {
			t.Errorf("RECORD %s size = %s, want %d", name, size, len(b))
		}
	}
	for name := range files {
		if !listed[name] {
			t.Errorf("%s is in the wheel but not in RECORD", name)
		}
	}
	for _, name := range []string{"memscope/__init__.py", "memscope/__main__.py", "memscope/_analyze.py",
		"memscope/_binary.py", "memscope/_record.py", "memscope/_version.py", distInfo + "METADATA",
		distInfo + "WHEEL", distInfo + "entry_points.txt"} {
		if _, ok := files[name]; !ok {
			t.Errorf("the wheel has no %s", name)
		}
	}
	// The capture harness, as memscope capture embeds it.
	if harness, err := os.ReadFile(filepath.Join("..", "capture", "harness.py")); err != nil {
		t.Error(err)
	} else if !bytes.Equal(files["memscope/harness.py"], harness) {
		t.Errorf("the wheel's memscope/harness.py is not capture/harness.py")
	}

	bin := "memscope/bin/" + p.exe
	b, ok := files[bin]
	if !ok {
		t.Fatalf("the wheel has no %s", bin)
	}
	if m := modes[bin]; m != 0o755 {
		t.Errorf("%s mode = %v, want -rwxr-xr-x", bin, m)
	}
	if err := p.check(b); err != nil {
		t.Errorf("%s: %v", bin, err)
	}
	if !bytes.Contains(b, []byte(testVersion)) {
		t.Errorf("%s does not hold the version %s (-X main.buildVersion)", bin, testVersion)
	}

	wheel := string(files[distInfo+"WHEEL"])
	for _, tag := range strings.Split(p.tag, ".") {
		if !strings.Contains(wheel, "\nTag: py3-none-"+tag+"\n") {
			t.Errorf("WHEEL has no Tag: py3-none-%s:\n%s", tag, wheel)
		}
	}
	if !strings.Contains(wheel, "Root-Is-Purelib: false\n") {
		t.Errorf("WHEEL does not say Root-Is-Purelib: false:\n%s", wheel)
	}
	meta := string(files[distInfo+"METADATA"])
	if !strings.HasPrefix(meta, "Metadata-Version: 2.1\nName: memscope\nVersion: "+testVersion+"\n") {
		t.Errorf("METADATA starts %q, want name memscope, version %s", meta[:min(len(meta), 80)], testVersion)
	}
	checkMetadata(t, meta)
	checkLicenses(t, files, distInfo)
	if ep := string(files[distInfo+"entry_points.txt"]); !strings.Contains(ep, "[console_scripts]\nmemscope = memscope._binary:main\n") {
		t.Errorf("entry_points.txt = %q, want the memscope console script", ep)
	}
	if v := string(files["memscope/_version.py"]); v != `__version__ = "`+testVersion+`"`+"\n" {
		t.Errorf("memscope/_version.py = %q", v)
	}
}

// checkMetadata: METADATA's header (up to the blank line before the
// description) names the licence, the author, the home page and the
// project's URLs, each field once.
func checkMetadata(t *testing.T, meta string) {
	head, _, _ := strings.Cut(meta, "\n\n")
	fields := map[string][]string{}
	for line := range strings.Lines(head) {
		k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), ": ")
		if !ok {
			t.Errorf("METADATA line %q is not a field", line)
		}
		fields[k] = append(fields[k], v)
	}
	const home = "https://github.com/memscope/memscope"
	for k, want := range map[string][]string{
		"License":     {"Apache-2.0"},
		"Author":      {"memscope developers"},
		"Home-page":   {home},
		"Project-URL": {"Source, " + home, "Issues, " + home + "/issues"},
	} {
		if got := fields[k]; !slices.Equal(got, want) {
			t.Errorf("METADATA %s = %q, want %q", k, got, want)
		}
	}
	if !slices.Contains(fields["Classifier"], "License :: OSI Approved :: Apache Software License") {
		t.Errorf("METADATA classifiers %q lack the Apache licence's", fields["Classifier"])
	}
}

// checkLicenses: the dist-info folder carries the repository's LICENSE
// (Apache-2.0) and NOTICE, the licence of the d3 code inside ECharts, and
// the licence of each Go module the binary is built from and of Go's
// standard library, each the file itself.
func checkLicenses(t *testing.T, files map[string][]byte, distInfo string) {
	for name, src := range map[string]string{
		"LICENSE":                     "../LICENSE",
		"NOTICE":                      "../NOTICE",
		"licenses/echarts/LICENSE-d3": "../report/echarts/LICENSE-d3",
	} {
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(files[distInfo+name], want) {
			t.Errorf("the wheel's %s%s is not %s (%d bytes, want %d)", distInfo, name, src, len(files[distInfo+name]), len(want))
		}
	}
	if lic := string(files[distInfo+"LICENSE"]); !strings.Contains(lic, "Apache License\n                           Version 2.0, January 2004") {
		t.Errorf("the wheel's LICENSE is not the Apache License 2.0")
	}
	for _, mod := range []string{"github.com/spf13/pflag", "github.com/go-echarts/go-echarts/v2", "github.com/go-json-experiment/json", "go"} {
		if b := files[distInfo+"licenses/"+mod+"/LICENSE"]; !bytes.Contains(b, []byte("Copyright")) {
			t.Errorf("the wheel has no licence for %s (%slicenses/%s/LICENSE: %d bytes)", mod, distInfo, mod, len(b))
		}
	}
}

// analyzeScript is what a user runs: memscope.analyze on a snapshot, then
// the results as JSON for the test to compare with truth.json.
const analyzeScript = `
import dataclasses, importlib.util, json, sys
import memscope

a = memscope.analyze(sys.argv[1])
d = a.device()
out = {
    "file": memscope.__file__, "version": memscope.__version__, "torch": "torch" in sys.modules,
    "devices": [x.device for x in a.devices],
    "start": dataclasses.asdict(d.start), "at_peak": dataclasses.asdict(d.at_peak), "end": dataclasses.asdict(d.end),
    "peaks": {q: getattr(d.peaks, q).bytes for q in ("requested", "allocated", "active", "reserved")},
    "peak_step": a.peak_step, "peak_phase": a.peak_phase, "steps": a.steps,
    "categories_at_peak": d.categories_at_peak, "top_sites": [s.bytes for s in d.top_sites],
    "findings": {f.kind: f.problem for f in d.findings},
    "scalars": a.scalars(), "compact": a._repr_html_(), "html": a.report()._repr_html_(),
}
names = json.loads(sys.argv[2])
out["missing"] = ["memscope." + n for n in names["module"]
                  if not hasattr(memscope, n) and importlib.util.find_spec("memscope." + n) is None] + \
    ["a." + n for n in names["analysis"] if not hasattr(a, n)]
out["fixtures"] = {}
for p in sys.argv[3:]:
    f = memscope.analyze(p).device()
    out["fixtures"][p] = {"peaks": {q: getattr(f.peaks, q).bytes for q in ("requested", "allocated", "active", "reserved")},
                          "end": dataclasses.asdict(f.end), "scalars": f.scalars(),
                          "step_table": {str(r.step): r.phase_peaks for r in f.step_table.rows},
                          "private_pools_at_end": [dataclasses.asdict(x) for x in f.private_pools_at_end]}
try:
    memscope.analyze("no-such.pickle")
    out["error"] = None
except memscope.MemscopeError as e:
    out["error"] = {"status": e.returncode, "stderr": e.stderr}
json.dump(out, sys.stdout)
`

type numbers struct{ Requested, Allocated, Active, Reserved int64 }

type analyzeOut struct {
	File, Version string
	Torch         bool
	Devices       []int
	Start         numbers
	AtPeak        numbers `json:"at_peak"`
	End           numbers
	Peaks         numbers
	PeakStep      *int   `json:"peak_step"`
	PeakPhase     string `json:"peak_phase"`
	Steps         int
	Categories    map[string]int64 `json:"categories_at_peak"`
	TopSites      []int64          `json:"top_sites"`
	Findings      map[string]bool
	Scalars       map[string]float64
	Compact, HTML string
	Missing       []string
	Fixtures      map[string]struct {
		Peaks, End numbers
		Scalars    map[string]float64
		// StepTable: each step's phase_peaks, by step number.
		StepTable    map[string]map[string]int64 `json:"step_table"`
		PrivatePools []struct {
			Pool                      [2]int64
			Reserved, Allocated, Free int64
			Segments                  int
		} `json:"private_pools_at_end"`
	}
	Error *struct {
		Status int
		Stderr string
	}
}

// installed installs the wheel into a fresh venv and runs what a user runs.
func installed(t *testing.T, py, wheel, readme string) {
	venv := filepath.Join(t.TempDir(), "venv")
	start := time.Now()
	run(t, ".", nil, py, "-m", "venv", venv)
	vpy, vbin := filepath.Join(venv, "bin", "python"), filepath.Join(venv, "bin", "memscope")
	run(t, ".", nil, vpy, "-m", "pip", "install", "--no-index", "--no-deps", "-q", wheel)
	t.Logf("venv and pip install: %s", time.Since(start).Round(time.Millisecond))

	// From the repository root, where no memscope package shadows the
	// installed one (python/ would).
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(fixture, "snapshot.pickle")
	tr, err := truth.Read(filepath.Join(root, fixture, "truth.json"))
	if err != nil {
		testenv.Need(t, "fixture %s: %v", fixture, err)
	}
	w := tr.Window

	if got, want := run(t, root, nil, vbin, "--version"), "memscope "+testVersion+"\n"; got != want {
		t.Errorf("memscope --version = %q, want %q", got, want)
	}
	if help := run(t, root, nil, vpy, "-m", "memscope.harness", "--help"); !strings.Contains(help, "memscope capture harness") {
		t.Errorf("python -m memscope.harness --help:\n%s", help)
	}
	summary := run(t, root, nil, vpy, "-m", "memscope", "summary", snap)
	if want := "peak allocated " + units.Bytes(w.MaxAllocated) + " "; !strings.Contains(summary, want) {
		t.Errorf("python -m memscope summary %s does not say %q (truth.json's max_allocated):\n%s", snap, want, summary)
	}
	if console := run(t, root, nil, vbin, "summary", snap); console != summary {
		t.Errorf("memscope summary and python -m memscope summary differ:\n%s\n---\n%s", console, summary)
	}
	for _, argv := range [][]string{{vbin}, {vpy, "-m", "memscope"}} {
		r := runStatus(root, nil, argv[0], append(argv[1:], "summary", "no-such.pickle")...)
		if r.status != 2 || !strings.Contains(r.stderr, "no-such.pickle") {
			t.Errorf("%s summary no-such.pickle: exit status %d, stderr %q; want 2 and the file named",
				strings.Join(argv, " "), r.status, r.stderr)
		}
	}

	script := filepath.Join(t.TempDir(), "analyze.py")
	if err := os.WriteFile(script, []byte(analyzeScript), 0o644); err != nil {
		t.Fatal(err)
	}
	module, analysis := readmeNames(readme)
	if len(module) < 3 || len(analysis) < 5 {
		t.Errorf("README.md's Python lines use memscope.%v and a.%v: want record, analyze… and a's fields", module, analysis)
	}
	names, _ := json.Marshal(map[string][]string{"module": module, "analysis": analysis})
	dirs, err := truth.Fixtures(filepath.Join(root, "fixtures"))
	if err != nil {
		testenv.Need(t, "%v", err)
	}
	args := []string{script, snap, string(names)}
	for _, dir := range dirs {
		args = append(args, filepath.Join(dir, "snapshot.pickle"))
	}
	// Gradient accumulation's step table and a CUDA graph's private pool.
	gradAccum := filepath.Join(root, "fixtures", "workloads", "grad-accum")
	graphs := filepath.Join(root, "fixtures", "workloads", "reduce-overhead")
	args = append(args, filepath.Join(gradAccum, "snapshot.pickle"), filepath.Join(graphs, "snapshot.pickle"))
	var got analyzeOut
	if err := json.Unmarshal([]byte(run(t, root, nil, vpy, args...)), &got); err != nil {
		t.Fatalf("analyze.py's output: %v", err)
	}
	if len(got.Missing) > 0 {
		t.Errorf("README.md's Python lines use names the installed package lacks: %v", got.Missing)
	}
	if !strings.HasPrefix(got.File, venv+string(filepath.Separator)) || got.Version != testVersion {
		t.Errorf("memscope imported from %s at version %s, want the venv's, %s", got.File, got.Version, testVersion)
	}
	if got.Torch {
		t.Error("memscope.analyze imported torch")
	}

	// The step and phase torch saw reach the window's allocated peak first.
	wantStep, wantPhase := -1, ""
	for _, ph := range tr.Phases {
		if ph.PeakAllocated == w.MaxAllocated {
			wantStep, wantPhase = ph.Step, ph.Phase
			break
		}
	}
	ints := []struct {
		name      string
		got, want int64
	}{
		{"devices", int64(len(got.Devices)), 1},
		{"start.requested", got.Start.Requested, w.RequestedStart},
		{"start.allocated", got.Start.Allocated, w.AllocatedStart},
		{"start.active", got.Start.Active, w.ActiveStart},
		{"start.reserved", got.Start.Reserved, w.ReservedStart},
		{"peaks.requested", got.Peaks.Requested, w.MaxRequested},
		{"peaks.allocated", got.Peaks.Allocated, w.MaxAllocated},
		{"peaks.active", got.Peaks.Active, w.MaxActive},
		{"peaks.reserved", got.Peaks.Reserved, w.MaxReserved},
		{"at_peak.allocated", got.AtPeak.Allocated, w.MaxAllocated},
		{"end.requested", got.End.Requested, w.RequestedEnd},
		{"end.allocated", got.End.Allocated, w.AllocatedEnd},
		{"end.active", got.End.Active, w.ActiveEnd},
		{"end.reserved", got.End.Reserved, w.ReservedEnd},
		{"steps", int64(got.Steps), int64(tr.StepsRecorded)},
		{"Σ categories_at_peak", sum(got.Categories), w.MaxAllocated},
	}
	for _, c := range ints {
		if c.got != c.want {
			t.Errorf("analyze(%s).%s = %d, want %d (truth.json)", snap, c.name, c.got, c.want)
		}
	}
	if got.PeakStep == nil || *got.PeakStep != wantStep || got.PeakPhase != wantPhase {
		step := "None"
		if got.PeakStep != nil {
			step = strconv.Itoa(*got.PeakStep)
		}
		t.Errorf("analyze(%s) peak at step %s %q, want step %d %q (truth.json's first phase at max_allocated)",
			snap, step, got.PeakPhase, wantStep, wantPhase)
	}
	if len(got.TopSites) == 0 || sum64(got.TopSites) > w.MaxAllocated {
		t.Errorf("analyze(%s).top_sites bytes %v: want some, summing to at most max_allocated %d", snap, got.TopSites, w.MaxAllocated)
	}
	if got.Findings["leak"] || got.Findings["fragmentation"] {
		t.Errorf("analyze(%s) findings %v: want no leak and healthy fragmentation (truth.json has no leak)", snap, got.Findings)
	}

	// scalars(): keyed like torch.cuda.memory_stats(); ".current" is the
	// end of the window, which truth.json's memory_stats_end read.
	scalars := []struct {
		key  string
		want int64
	}{
		{"allocated_bytes.all.peak", w.MaxAllocated},
		{"reserved_bytes.all.peak", w.MaxReserved},
		{"active_bytes.all.peak", w.MaxActive},
		{"requested_bytes.all.peak", w.MaxRequested},
		{"memscope.peak_step", int64(wantStep)},
		{"memscope.steps", int64(tr.StepsRecorded)},
		{"memscope.ooms", 0},
	}
	for _, key := range []string{"allocated_bytes.all.current", "reserved_bytes.all.current",
		"active_bytes.all.current", "requested_bytes.all.current"} {
		v, ok := tr.MemoryStatsEnd[key]
		if !ok {
			t.Fatalf("truth.json: memory_stats_end has no %s", key)
		}
		scalars = append(scalars, struct {
			key  string
			want int64
		}{key, v})
	}
	for _, s := range scalars {
		v, ok := got.Scalars[s.key]
		if !ok {
			t.Errorf("scalars() has no %q; it has %v", s.key, keys(got.Scalars))
		} else if v != float64(s.want) {
			t.Errorf("scalars()[%q] = %.0f, want %d (truth.json)", s.key, v, s.want)
		}
	}

	// _repr_html_: compact, memscope summary's text, which says the
	// allocated peak; no script, no page.
	if want := "peak allocated " + units.Bytes(w.MaxAllocated) + " "; !strings.Contains(html.UnescapeString(got.Compact), want) ||
		strings.Contains(got.Compact, "<script") || strings.Contains(got.Compact, "<iframe") || len(got.Compact) > 32<<10 {
		t.Errorf("_repr_html_() (%d bytes) does not say %q in the summary's text, or holds a script or a page:\n%s",
			len(got.Compact), want, got.Compact[:min(len(got.Compact), 400)])
	}
	// report()._repr_html_: the report page, whole, in an iframe's srcdoc,
	// with ECharts inlined and nothing loaded from the network.
	const pre = `<iframe srcdoc="`
	if !strings.HasPrefix(got.HTML, pre) {
		t.Errorf("report()._repr_html_() starts %q, want %q", got.HTML[:min(len(got.HTML), 40)], pre)
	} else {
		doc, _, _ := strings.Cut(got.HTML[len(pre):], `"`)
		page := html.UnescapeString(doc)
		if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.Contains(page, "</html>") {
			t.Errorf("report()._repr_html_()'s srcdoc is not a whole HTML page: %q…", page[:min(len(page), 80)])
		}
		if !strings.Contains(page, units.Bytes(w.MaxAllocated)) {
			t.Errorf("report()._repr_html_()'s page does not show the allocated peak %s", units.Bytes(w.MaxAllocated))
		}
		if !strings.Contains(page, `<script data-echarts="5.4.3">`) || regexp.MustCompile(`<script[^>]*\ssrc=|cdn\.jsdelivr`).MatchString(page) {
			t.Errorf("report()._repr_html_()'s page does not inline ECharts 5.4.3, or loads a script from elsewhere")
		}
	}

	// Every fixture with a truth.json: the peaks and the end torch measured.
	t.Logf("memscope.analyze on %d fixtures with truth.json", len(dirs))
	for _, dir := range dirs {
		tr, err := truth.Read(filepath.Join(dir, "truth.json"))
		if err != nil {
			t.Fatal(err)
		}
		snap := filepath.Join(dir, "snapshot.pickle")
		f, ok := got.Fixtures[snap]
		if !ok {
			t.Errorf("analyze.py did not analyze %s", snap)
			continue
		}
		w := tr.Window
		// scalars()' torch-named keys of the end state: torch's own
		// memory_stats() at the end of the window.
		for _, k := range []string{"num_ooms", "segment.all.current", "inactive_split.all.current", "inactive_split_bytes.all.current"} {
			want, ok := tr.MemoryStatsEnd[k]
			if !ok {
				continue
			}
			if v, ok := f.Scalars[k]; !ok || v != float64(want) {
				t.Errorf("analyze(%s).scalars()[%q] = %.0f (present: %v), want %d (truth.json's memory_stats_end)", snap, k, v, ok, want)
			}
		}
		for _, c := range []struct {
			name      string
			got, want int64
		}{
			{"peaks.allocated", f.Peaks.Allocated, w.MaxAllocated},
			{"peaks.requested", f.Peaks.Requested, w.MaxRequested},
			{"peaks.reserved", f.Peaks.Reserved, w.MaxReserved},
			{"end.allocated", f.End.Allocated, w.AllocatedEnd},
			{"end.requested", f.End.Requested, w.RequestedEnd},
			{"end.reserved", f.End.Reserved, w.ReservedEnd},
		} {
			if c.got != c.want {
				t.Errorf("analyze(%s).%s = %d, want %d (truth.json)", snap, c.name, c.got, c.want)
			}
		}
	}

	// The step × phase table: each cell torch's peak over the phase, the
	// highest of its micro-batches'.
	if tr, err := truth.Read(filepath.Join(gradAccum, "truth.json")); err != nil {
		t.Error(err)
	} else {
		want := map[string]map[string]int64{}
		for _, ph := range tr.Phases {
			if ph.Step >= 0 {
				k := strconv.Itoa(ph.Step)
				if want[k] == nil {
					want[k] = map[string]int64{}
				}
				want[k][ph.Phase] = max(want[k][ph.Phase], ph.PeakAllocated)
			}
		}
		if got := got.Fixtures[filepath.Join(gradAccum, "snapshot.pickle")].StepTable; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("analyze(grad-accum).step_table's phase_peaks = %v, want %v (truth.json, the highest micro-batch)", got, want)
		}
	}
	// The private pools at the end: torch's memory_snapshot() per pool.
	if tr, err := truth.Read(filepath.Join(graphs, "truth.json")); err != nil {
		t.Error(err)
	} else {
		pools := got.Fixtures[filepath.Join(graphs, "snapshot.pickle")].PrivatePools
		if len(pools) != len(tr.PrivatePools) || len(pools) == 0 {
			t.Errorf("analyze(reduce-overhead).private_pools_at_end = %+v, torch held %d pools", pools, len(tr.PrivatePools))
		}
		for _, p := range pools {
			w := tr.PrivatePools[fmt.Sprintf("(%d, %d)", p.Pool[0], p.Pool[1])]
			if p.Reserved != w.Reserved || p.Allocated != w.Allocated || p.Segments != w.Segments || p.Free != w.Reserved-w.Allocated {
				t.Errorf("analyze(reduce-overhead) pool %v = %+v, want torch's %+v", p.Pool, p, w)
			}
		}
	}

	if got.Error == nil || got.Error.Status != 2 || !strings.Contains(got.Error.Stderr, "no-such.pickle") {
		t.Errorf("analyze(\"no-such.pickle\") raised %+v, want MemscopeError with exit status 2 and the binary's stderr", got.Error)
	}
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func sum64(s []int64) int64 {
	var n int64
	for _, v := range s {
		n += v
	}
	return n
}

func keys(m map[string]float64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestSdist writes the source distribution (build_wheels.py --sdist) and
// checks what it holds: PKG-INFO with the version and licence, the
// in-tree backend, the Go sources without tests or fixtures, the vendored
// modules; then pip builds the host's wheel from it in a fresh venv with
// no index (the modules vendored, nothing fetched), the wheel passes
// TestWheel's checks, and its memscope says the sdist's version.
func TestSdist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memscope from an sdist with pip; skipped with -short")
	}
	py := needPython(t)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		testenv.Need(t, "the go command is not on PATH: the sdist's backend builds with it")
	}
	if r := runStatus(".", nil, py, "-c", "import venv, ensurepip"); r.err != nil {
		testenv.Need(t, "python3 has no venv/ensurepip (Debian: apt-get install python3-venv): %s", strings.TrimSpace(r.stderr))
	}
	dist := t.TempDir()
	start := time.Now()
	run(t, ".", []string{"GO=" + goCmd}, py, "build_wheels.py", "--sdist", dist, testVersion)
	t.Logf("build_wheels.py --sdist: %s", time.Since(start).Round(time.Millisecond))
	sdist := filepath.Join(dist, "memscope-"+testVersion+".tar.gz")
	files := readTarGz(t, sdist)
	root := "memscope-" + testVersion + "/"
	pkgInfo := string(files[root+"PKG-INFO"])
	for _, want := range []string{"\nVersion: " + testVersion + "\n", "\nLicense: Apache-2.0\n", "Name: memscope\n"} {
		if !strings.Contains(pkgInfo, want) {
			t.Errorf("PKG-INFO does not say %q:\n%s", strings.TrimSpace(want), pkgInfo)
		}
	}
	if py := string(files[root+"pyproject.toml"]); !strings.Contains(py, `build-backend = "memscope_backend"`) || !strings.Contains(py, `backend-path = ["python"]`) {
		t.Errorf("pyproject.toml does not name the in-tree backend:\n%s", py)
	}
	for _, want := range []string{"go.mod", "go.sum", "LICENSE", "NOTICE", "vendor/modules.txt", "cmd/memscope/main.go",
		"cmd/memscope/default.pgo", "capture/harness.py", "report/echarts/echarts.min.js", "python/memscope_backend.py",
		"python/build_wheels.py", "python/memscope/__init__.py", "internal/addrmap/prefetch_amd64.s"} {
		if files[root+want] == nil {
			t.Errorf("the sdist has no %s", want)
		}
	}
	if v := string(files[root+"python/memscope/_version.py"]); v != `__version__ = "`+testVersion+`"`+"\n" {
		t.Errorf("python/memscope/_version.py = %q", v)
	}
	for name := range files {
		if !strings.HasPrefix(name, root) {
			t.Errorf("%s is outside %s", name, root)
		}
		rel := strings.TrimPrefix(name, root)
		if strings.HasSuffix(rel, "_test.go") && !strings.HasPrefix(rel, "vendor/") || strings.HasPrefix(rel, "fixtures/") || strings.Contains(rel, "/testdata/") {
			t.Errorf("the sdist holds %s: no tests, fixtures or test data", rel)
		}
	}

	venv := filepath.Join(t.TempDir(), "venv")
	run(t, ".", nil, py, "-m", "venv", venv)
	vpy := filepath.Join(venv, "bin", "python")
	wheels := t.TempDir()
	start = time.Now()
	run(t, ".", []string{"GO=" + goCmd, "PIP_NO_CACHE_DIR=1"}, vpy, "-m", "pip", "wheel", "--no-index", "--no-deps", "-q", "-w", wheels, sdist)
	t.Logf("pip wheel from the sdist: %s", time.Since(start).Round(time.Millisecond))
	var host *platform
	for i := range platforms {
		if p := &platforms[i]; p.goos == runtime.GOOS && p.goarch == runtime.GOARCH && !strings.HasPrefix(p.tag, "musllinux") {
			host = p
			break
		}
	}
	if host == nil {
		t.Skipf("no wheel platform for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	wheel := filepath.Join(wheels, fmt.Sprintf("memscope-%s-py3-none-%s.whl", testVersion, host.tag))
	if _, err := os.Stat(wheel); err != nil {
		entries, _ := os.ReadDir(wheels)
		t.Fatalf("pip wheel did not write %s (%v); it wrote %v", filepath.Base(wheel), err, entries)
	}
	checkWheel(t, wheel, *host)
	run(t, ".", []string{"PIP_NO_CACHE_DIR=1"}, vpy, "-m", "pip", "install", "--no-index", "--no-deps", "-q", wheel)
	if got, want := run(t, t.TempDir(), nil, filepath.Join(venv, "bin", "memscope"), "--version"), "memscope "+testVersion+"\n"; got != want {
		t.Errorf("memscope --version from the sdist's wheel = %q, want %q", got, want)
	}
}

// readTarGz returns the regular files of a .tar.gz by name.
func readTarGz(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			t.Errorf("%s: %s is not a regular file", path, h.Name)
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, h.Name, err)
		}
		out[h.Name] = b
	}
}
