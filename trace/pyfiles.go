package trace

import "strings"

// pyFile splits a python_function event's name, "FILE(LINE): FUNCTION" as
// torch.profiler writes it, at its file; ok is false for other names
// ("nn.Module: Linear_0", "<built-in method ...>").
func pyFile(name string) (file, rest string, ok bool) {
	i := strings.Index(name, "): ")
	if i < 0 {
		return "", "", false
	}
	j := strings.LastIndexByte(name[:i], '(')
	if j <= 0 {
		return "", "", false
	}
	for _, c := range name[j+1 : i] {
		if c < '0' || c > '9' {
			return "", "", false
		}
	}
	return name[:j], name[j:], true
}

// PyFiles returns the files named by the trace's python_function events,
// each once, in the order first seen.
func (t *Trace) PyFiles() []string {
	var out []string
	seen := map[string]bool{}
	for i := range t.PyFuncs {
		if f, _, ok := pyFile(t.Str(t.PyFuncs[i].Name)); ok && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// RewritePyFiles replaces the file in every python_function event's name
// with rename(file): memscope's --neutral-paths. Names stay interned: each
// distinct name is rewritten once, in place in the string table.
func (t *Trace) RewritePyFiles(rename func(string) string) {
	done := map[StringID]bool{}
	for i := range t.PyFuncs {
		id := t.PyFuncs[i].Name
		if done[id] || int(id) >= len(t.Strings) {
			continue
		}
		done[id] = true
		if f, rest, ok := pyFile(t.Strings[id]); ok {
			t.Strings[id] = rename(f) + rest
		}
	}
}
