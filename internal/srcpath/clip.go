package srcpath

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/memscope/memscope/internal/textsafe"
)

// fileLine matches a file and line in a label: "transformers/activations.py:78",
// "<repo>/train.py:42" (no spaces or parentheses in the file).
var fileLine = regexp.MustCompile(`[^\s()]+:[0-9]+`)

// Clip fits s to n characters (runes) for a column or a legend, escaped for
// a terminal (textsafe.Escape). It is the one rule for every label that
// names a file: file names and lines are kept whole.
//
//   - A label holding files and lines ("file:line function (called from
//     file:line function)") first loses the directories of its files, from
//     the left, one folder at a time, the longest directory first:
//     "…/integrations/sdpa_attention.py:96 sdpa_attention_forward". If it
//     is still too long it is cut at the right, "…" marking the cut, never
//     inside a file and line: a cut that would fall in one ends before it,
//     or, for the label's first, after it (the result is then longer than
//     n).
//   - A path with no line (an input file) loses its directory the same way
//     and is never cut inside its last element.
//   - Other text keeps its end: "…" and its last n-1 characters.
func Clip(s string, n int) string {
	s = textsafe.Escape(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	locs := fileLine.FindAllStringIndex(s, -1)
	if locs == nil {
		if strings.ContainsRune(s, '/') && !strings.ContainsAny(s, " \t") {
			locs = [][]int{{0, len(s)}}
		} else {
			r := []rune(s)
			return "…" + string(r[len(r)-max(n-1, 0):])
		}
	}
	// The parts of s: text between files, and each file's directory
	// elements and the rest of its token (file name and line).
	type token struct {
		dirs []string // directory elements left, each without its '/'
		cut  bool     // some were dropped: the token starts "…/"
		rest string   // file name and line
	}
	var texts []string // texts[i] precedes toks[i]; the last follows all
	var toks []*token
	prev := 0
	for _, l := range locs {
		texts = append(texts, s[prev:l[0]])
		tok := s[l[0]:l[1]]
		file := tok
		if fl := strings.LastIndexByte(tok, ':'); fl >= 0 && isDigits(tok[fl+1:]) {
			file = tok[:fl]
		}
		i := strings.LastIndexByte(file, '/')
		t := &token{rest: tok}
		if i >= 0 {
			t.dirs = strings.Split(tok[:i], "/")
			t.rest = tok[i+1:]
		}
		toks = append(toks, t)
		prev = l[1]
	}
	texts = append(texts, s[prev:])
	render := func(t *token) string {
		var b strings.Builder
		if t.cut {
			b.WriteString("…/")
		}
		for _, d := range t.dirs {
			b.WriteString(d)
			b.WriteByte('/')
		}
		b.WriteString(t.rest)
		return b.String()
	}
	join := func() string {
		var b strings.Builder
		for i, t := range toks {
			b.WriteString(texts[i])
			b.WriteString(render(t))
		}
		b.WriteString(texts[len(texts)-1])
		return b.String()
	}
	out := join()
	for utf8.RuneCountInString(out) > n {
		var longest *token
		most := 0
		for _, t := range toks {
			if l := len(strings.Join(t.dirs, "/")); len(t.dirs) > 0 && l >= most {
				if l > most || longest == nil {
					longest, most = t, l
				}
			}
		}
		if longest == nil {
			break
		}
		drop := 1
		if longest.dirs[0] == "" && len(longest.dirs) > 1 { // an absolute path's root goes with its first folder
			drop = 2
		}
		longest.dirs, longest.cut = longest.dirs[drop:], true
		out = join()
	}
	if utf8.RuneCountInString(out) <= n || len(toks) == 1 && texts[0] == "" && texts[1] == "" {
		return out
	}
	// Cut at the right, never inside a file and line.
	var b strings.Builder
	used := 0
	fits := func(p string) bool { return used+utf8.RuneCountInString(p)+1 <= n }
	for i := range texts {
		if !fits(texts[i]) {
			r := []rune(texts[i])
			b.WriteString(string(r[:max(n-1-used, 0)]))
			break
		}
		b.WriteString(texts[i])
		used += utf8.RuneCountInString(texts[i])
		if i == len(toks) {
			break
		}
		f := render(toks[i])
		if !fits(f) {
			if i == 0 && used == 0 {
				b.WriteString(f)
			}
			break
		}
		b.WriteString(f)
		used += utf8.RuneCountInString(f)
	}
	return b.String() + "…"
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
