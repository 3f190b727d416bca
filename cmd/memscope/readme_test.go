package main

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// readmeCommands returns the memscope command lines of the README's code
// blocks, each without its "go run ./cmd/memscope" prefix.
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
		if rest, ok := strings.CutPrefix(line, "go run ./cmd/memscope "); ok && inCode {
			cmds = append(cmds, strings.Fields(rest))
		}
	}
	return cmds
}

// The README's memscope commands run, so that they cannot rot (STYLE 18).
// A command on a fixture that is not committed yet, or one that is still a
// placeholder, is skipped, saying so.
func TestReadmeCommands(t *testing.T) {
	t.Chdir("../..") // the README's commands run from the repository root
	cmds := readmeCommands(t, "README.md")
	if len(cmds) == 0 {
		t.Fatal("README.md has no 'go run ./cmd/memscope' command in a code block")
	}
	for _, args := range cmds {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			for _, a := range args[1:] {
				if strings.HasPrefix(a, "fixtures/") {
					if _, err := os.Stat(a); err != nil {
						t.Skipf("%v: the fixture is not committed yet", err)
					}
				}
			}
			r := runMemscope(args...)
			if r.err != nil && strings.Contains(r.err.Error(), "not implemented yet") {
				t.Skipf("memscope %s: %v", strings.Join(args, " "), r.err)
			}
			if r.err != nil || r.stdout == "" {
				t.Errorf("memscope %s = %v, %d bytes of output; want nil and some output\nstderr:\n%s",
					strings.Join(args, " "), r.err, len(r.stdout), r.stderr)
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

// The README's example output is what the command it names prints.
func TestReadmeExampleOutput(t *testing.T) {
	t.Chdir("../..")
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	const cmd = "`go run ./cmd/memscope summary fixtures/plain-trainer-late/snapshot.pickle`"
	_, rest, ok := strings.Cut(s, "## Example output")
	if !ok || !strings.Contains(rest, cmd) {
		t.Fatalf("README.md has no example output of %s", cmd)
	}
	_, rest, _ = strings.Cut(rest, "```\n")
	want, _, _ := strings.Cut(rest, "```")
	r := runMemscope("summary", "fixtures/plain-trainer-late/snapshot.pickle")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.stdout != want {
		t.Errorf("README.md's example output differs from memscope summary's; got:\n%s", r.stdout)
	}
}
