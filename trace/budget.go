package trace

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/memscope/memscope/internal/units"
)

// This file bounds what reading a gzipped trace may expand to, so that a
// gzip of a few MB cannot make the decoder materialise gigabytes of names:
// the decoder's memory follows the JSON it reads, and the JSON a gzip file
// of size n may hold is bounded by DefaultMaxJSON(n), or by the caller's
// limit.

// Default bounds on the JSON of a gzipped trace: jsonBase plus jsonRatio
// times the file's size (a profiler trace compresses about 10×).
const (
	jsonBase  = 256 << 20
	jsonRatio = 64
)

// DefaultMaxJSON returns the most JSON a gzipped trace of size bytes is
// read for (-1: unknown size, no bound).
func DefaultMaxJSON(size int64) int64 {
	if size < 0 {
		return -1
	}
	return jsonBase + jsonRatio*min(size, 1<<40)
}

// DefaultMaxMemory returns what decoding a trace file of size bytes may
// hold, for the process's memory limit: the JSON a gzip file may expand to
// (DefaultMaxJSON), or the file's size plus jsonBase (the decoded model
// takes about half its JSON).
func DefaultMaxMemory(size int64, gzipped bool) int64 {
	if gzipped {
		return DefaultMaxJSON(size)
	}
	return jsonBase + min(size, 1<<50)
}

// maxToken is the longest JSON token (a name, a number) read for a limit
// on the JSON of limit bytes (-1: none): the JSON reader holds a whole
// token in its buffer, doubling it as it grows, and copies it out.
func maxToken(limit int64) int64 {
	if limit < 0 {
		return 64 << 20
	}
	return max(limit/8, 1<<20)
}

// OpenProfileWith is OpenProfile that reads a gzipped file's JSON only up
// to maxJSON bytes (0: DefaultMaxJSON of the file's size), failing past it
// with an error that names the limit.
func OpenProfileWith(path string, maxJSON int64) (Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return Profile{}, err
	}
	defer f.Close()
	limit := maxJSON
	if limit <= 0 {
		limit = DefaultMaxJSON(-1) // a pipe: no bound but maxToken's
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			limit = DefaultMaxJSON(st.Size())
		}
	}
	return decodeProfile(f, filepath.Base(path), limit, maxJSON > 0)
}

// boundedReader fails once more than limit bytes were read.
type boundedReader struct {
	r        io.Reader
	n, limit int64
	explicit bool
	err      error // the limit error, once returned
}

func (b *boundedReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.n += int64(n); b.n > b.limit {
		if b.explicit {
			b.err = fmt.Errorf("the JSON runs past %s, the --max-memory limit", units.Bytes(b.limit))
		} else {
			b.err = fmt.Errorf("the gzip stream expands past %s, the limit for a file of its size (a hostile or damaged file?); "+
				"if the file is real, raise the limit with --max-memory", units.Bytes(b.limit))
		}
		return n, b.err
	}
	return n, err
}
