package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeCommands returns the memscope command lines of the README's code
// blocks, each without its "go run ./cmd/memscope" prefix, and the
// "memscope report" lines of its report section (runnable from a checkout;
// the other bare "memscope" lines are the capture example, which needs a
// GPU and the run directories it makes).
func readmeCommands(t *testing.T, readme string) [][]string {
	t.Helper()
	f, err := os.Open(readme)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds [][]string
	inCode := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "go run ./cmd/memscope "); ok {
			cmds = append(cmds, strings.Fields(rest))
		} else if rest, ok := strings.CutPrefix(line, "memscope report "); ok {
			cmds = append(cmds, append([]string{"report"}, strings.Fields(rest)...))
		}
	}
	return cmds
}

// The README's memscope commands run and print something, so that they
// cannot rot (STYLE 18): a command that fails, on a fixture that is
// missing or with a flag that is gone, is a failure. A report's -o file is
// written to a temporary folder.
func TestReadmeCommands(t *testing.T) {
	t.Chdir("../..") // the README's commands run from the repository root
	cmds := readmeCommands(t, "README.md")
	if len(cmds) < 8 {
		t.Fatalf("README.md has %d memscope commands in code blocks, want its 8 or more", len(cmds))
	}
	tmp := t.TempDir()
	for _, args := range cmds {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out := ""
			for i := range args {
				if args[i] == "-o" && i+1 < len(args) {
					out = filepath.Join(tmp, filepath.Base(args[i+1]))
					args = append(slices.Clone(args[:i+1]), append([]string{out}, args[i+2:]...)...)
					break
				}
			}
			r := runMemscope(args...)
			if r.err != nil {
				t.Fatalf("memscope %s: %v\nstderr:\n%s", strings.Join(args, " "), r.err, r.stderr)
			}
			if out != "" {
				if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
					t.Errorf("memscope %s wrote no %s: %v", strings.Join(args, " "), out, err)
				}
			} else if r.stdout == "" {
				t.Errorf("memscope %s printed nothing", strings.Join(args, " "))
			}
		})
	}
}

// The README's Commands section names every command of the table.
func TestReadmeListsCommands(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Commands\n")
	if !ok {
		t.Fatal("README.md has no '## Commands' section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, c := range commands {
		if !strings.Contains(section, "`memscope "+c.name) {
			t.Errorf("README.md's Commands section does not list `memscope %s`", c.name)
		}
	}
}

// readmeOutputs returns the README's printed examples: each prose line
// that names a command in backquotes followed by a colon
// ("`go run ./cmd/memscope summary X`: …") with the code block after it,
// which is that command's output.
func readmeOutputs(t *testing.T, readme string) (cmds [][]string, outputs []string) {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?m)^`go run \\./cmd/memscope ([^`]+)`:")
	s := string(b)
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		_, rest, ok := strings.Cut(s[m[1]:], "\n```\n")
		if !ok {
			t.Fatalf("README.md: no code block after %s", s[m[0]:m[1]])
		}
		block, _, ok := strings.Cut(rest, "```\n")
		if !ok {
			t.Fatalf("README.md: the code block after %s does not end", s[m[0]:m[1]])
		}
		cmds = append(cmds, strings.Fields(s[m[2]:m[3]]))
		outputs = append(outputs, block)
	}
	return cmds, outputs
}

// trimTrailing removes the spaces at the end of every line (Markdown
// editors strip them; the output pads table cells).
func trimTrailing(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Join(lines, "\n")
}

// The README's example outputs are, byte for byte but for trailing
// spaces, what the commands they name print now.
func TestReadmeExampleOutput(t *testing.T) {
	t.Chdir("../..")
	cmds, outputs := readmeOutputs(t, "README.md")
	if len(cmds) == 0 || strings.Join(cmds[0], " ") != "summary fixtures/plain-trainer-late/snapshot.pickle" {
		t.Fatalf("README.md's example outputs are of %q, want the first the summary of plain-trainer-late", cmds)
	}
	for i, args := range cmds {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := runMemscope(args...)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if got, want := trimTrailing(r.stdout), trimTrailing(outputs[i]); got != want {
				gotFile := filepath.Join(t.TempDir(), "got")
				wantFile := filepath.Join(t.TempDir(), "want")
				os.WriteFile(gotFile, []byte(got), 0o644)
				os.WriteFile(wantFile, []byte(want), 0o644)
				t.Errorf("README.md's output of memscope %s differs from what it prints:\n%s", strings.Join(args, " "), diff(wantFile, gotFile))
			}
		})
	}
}
