package report

import (
	"io"
	"text/tabwriter"
)

// newTable returns a tabwriter for an aligned text table (two spaces
// between columns) whose lines carry no trailing spaces.
func newTable(w io.Writer, flags uint) *tabwriter.Writer {
	return tabwriter.NewWriter(&trimWriter{w: w}, 0, 0, 2, ' ', flags)
}

// trimWriter drops spaces at the end of lines: it holds back runs of spaces
// until something other than a newline follows them.
type trimWriter struct {
	w      io.Writer
	spaces int
	buf    []byte
}

func (t *trimWriter) Write(p []byte) (int, error) {
	t.buf = t.buf[:0]
	for _, c := range p {
		switch c {
		case ' ':
			t.spaces++
			continue
		case '\n':
			t.spaces = 0
		default:
			for ; t.spaces > 0; t.spaces-- {
				t.buf = append(t.buf, ' ')
			}
		}
		t.buf = append(t.buf, c)
	}
	if _, err := t.w.Write(t.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}
