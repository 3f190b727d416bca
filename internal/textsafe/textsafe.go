// Package textsafe makes text from an input file safe to print on a
// terminal. A snapshot or trace is often someone else's file: a frame
// name, op name, file name or exception message in it may hold escape
// sequences that move the cursor, rewrite the screen or set the window
// title, or bidirectional controls that reorder what is shown. Every text
// renderer passes such names through Escape; JSON and HTML have their own
// escaping and carry the text unchanged.
package textsafe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every control character (C0 including tab and
// newline, DEL, C1), every bidirectional control (U+200E, U+200F,
// U+202A–U+202E, U+2066–U+2069) and every byte that is not UTF-8 written
// as a Go escape (\x1b, \n, \u202e, \xff). Text with none of them, the
// common case, is returned as is, without allocating.
func Escape(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&15, 16))
		case unsafeRune(r, n):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\n', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether r (n bytes of input) must be escaped.
func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return true
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
