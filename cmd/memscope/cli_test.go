package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// flagsOf returns the flags command name defines.
func flagsOf(t *testing.T, name string) *pflag.FlagSet {
	t.Helper()
	c := lookup(name)
	if c == nil {
		t.Fatalf("no command %q", name)
	}
	fs, _, _ := commandFlags(c)
	return fs
}

// TestReadmeSharedFlags: the README's table of shared flags lists exactly
// the commands that define each flag.
func TestReadmeSharedFlags(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- shared-flags -->")
	table, _, ok2 := strings.Cut(rest, "<!-- /shared-flags -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no shared-flags table")
	}
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) != 2 || !strings.Contains(cells[0], "`--") {
			continue
		}
		rows++
		listed := strings.Split(strings.TrimSpace(cells[1]), ", ")
		for _, m := range regexp.MustCompile("--([a-z-]+)").FindAllStringSubmatch(cells[0], -1) {
			flag := m[1]
			var have []string
			for _, c := range commands {
				if flagsOf(t, c.name).Lookup(flag) != nil {
					have = append(have, c.name)
				}
			}
			for _, c := range listed {
				if !slices.Contains(have, c) {
					t.Errorf("README says %s takes --%s; it does not", c, flag)
				}
			}
			for _, c := range have {
				if !slices.Contains(listed, c) {
					t.Errorf("%s takes --%s; the README's table does not say so", c, flag)
				}
			}
		}
	}
	if rows == 0 {
		t.Fatal("the shared-flags table has no rows")
	}
}

// TestReadmeFlagsExist: every flag the README shows with a command, in its
// code blocks and in `memscope CMD …` spans, is a flag of that command.
func TestReadmeFlagsExist(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	var uses []string
	inCode := false
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		if inCode {
			uses = append(uses, line)
		}
	}
	for _, m := range regexp.MustCompile("`(memscope [a-z]+[^`]*)`").FindAllStringSubmatch(readme, -1) {
		uses = append(uses, m[1])
	}
	cmdRE := regexp.MustCompile(`(?:^|\s|go run \./cmd/)memscope ([a-z]+)(.*)`)
	checked := 0
	for _, u := range uses {
		m := cmdRE.FindStringSubmatch(u)
		if m == nil || lookup(m[1]) == nil {
			continue
		}
		args, _, _ := strings.Cut(m[2], " -- ") // capture: the script's own flags follow
		args, _, _ = strings.Cut(args, "#")
		fs := flagsOf(t, m[1])
		for _, f := range regexp.MustCompile(`(?:^|\s|\[)--([a-z][a-z-]*)`).FindAllStringSubmatch(args, -1) {
			checked++
			if fs.Lookup(f[1]) == nil {
				t.Errorf("README shows %q: %s has no --%s", strings.TrimSpace(u), m[1], f[1])
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d flags in the README's commands: the parser lost them", checked)
	}
}
