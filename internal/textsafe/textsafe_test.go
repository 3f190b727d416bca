package textsafe

import "testing"

func TestEscape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"forward", "forward"},
		{"model.py:12 forward", "model.py:12 forward"},
		{"naïve_ünïcode 日本", "naïve_ünïcode 日本"},
		{"\x1b[2J\x1b]0;pwned\x07", `\x1b[2J\x1b]0;pwned\a`},
		{"a\nb\tc\rd", `a\nb\tc\rd`},
		{"del\x7f c1\u009b", `del\x7f c1\u009b`},
		{"abc\u202edcba", `abc\u202edcba`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"", ""},
	} {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { Escape("model.py:12 forward") }); n != 0 {
		t.Errorf("Escape of plain text allocates %v times, want 0", n)
	}
}
