package report

import "fmt"

// nouns is the one way a count and its noun are written: "1 block",
// "2 blocks", "1 process", "3 processes", "0 entries". The plural is the
// regular English one of the noun's last word (+es after s, x, z, ch and
// sh; y after a consonant becomes ies; else +s).
func nouns(n int, noun string) string {
	return fmt.Sprintf("%d %s", n, pluralNoun(n, noun))
}

// pluralNoun is noun for n == 1 (and −1), else its plural.
func pluralNoun(n int, noun string) string {
	if n == 1 || n == -1 || noun == "" {
		return noun
	}
	last := func(suffix string) bool {
		return len(noun) >= len(suffix) && noun[len(noun)-len(suffix):] == suffix
	}
	switch {
	case last("s"), last("x"), last("z"), last("ch"), last("sh"):
		return noun + "es"
	case last("y") && len(noun) >= 2 && !isVowel(noun[len(noun)-2]):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}

func isVowel(c byte) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	}
	return false
}
