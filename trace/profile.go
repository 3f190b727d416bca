package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/memscope/memscope/internal/jsonlimit"
)

// Profile is what a file given as a profiler trace holds: a Chrome trace, or
// a file written by export_memory_timeline (live bytes by category over
// time on the one device it was exported for). Exactly one is set.
type Profile struct {
	Trace    *Trace
	Timeline *CategoryTimeline
}

// OpenProfile reads a Chrome trace or an export_memory_timeline file (.json,
// .json.gz, .raw.json.gz), telling them apart by their first bytes.
func OpenProfile(path string) (Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return Profile{}, err
	}
	defer f.Close()
	limit := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		limit = DefaultMaxJSON(st.Size())
	}
	return decodeProfile(f, filepath.Base(path), limit, false)
}

// DecodeProfile is OpenProfile on a reader. A memory timeline is a JSON array
// whose first element is an array ([times, sizes] or [[t, action, bytes,
// category], …]); a Chrome trace is an object or an array of event
// objects. Everything else is read as a trace, for its error messages.
func DecodeProfile(r io.Reader, name string) (Profile, error) {
	return decodeProfile(r, name, -1, false)
}

// decodeProfile is DecodeProfile reading at most limit bytes of a gzipped
// input's JSON (-1: no bound); explicit says the caller gave the limit.
func decodeProfile(r io.Reader, name string, limit int64, explicit bool) (Profile, error) {
	return decodeProfileMode(r, name, limit, explicit, fastChunk)
}

// decodeProfileMode is decodeProfile; chunk as for decodeTrace.
func decodeProfileMode(r io.Reader, name string, limit int64, explicit bool, chunk int) (Profile, error) {
	in, gz, err := maybeGunzip(r)
	if err != nil {
		return Profile{}, fmt.Errorf("decoding %s: %w", name, err)
	}
	var bounded *boundedReader
	if (gz || explicit) && limit >= 0 { // a plain file's JSON is its size: bounded only by --max-memory
		bounded = &boundedReader{r: in, limit: limit, explicit: explicit}
		in = bounded
	}
	what := "an eighth of the limit for a file of its size"
	if explicit {
		what = "an eighth of the --max-memory limit"
	}
	tokens := &jsonlimit.Reader{R: in, Max: maxToken(limit), What: what}
	p, err := decodeBody(tokens, gz, name, chunk)
	if bounded != nil && bounded.err != nil { // not a file cut short: refused
		return Profile{}, fmt.Errorf("decoding %s at byte %d: %w", name, bounded.limit, bounded.err)
	}
	if tokens.Err() != nil {
		return Profile{}, fmt.Errorf("decoding %s: %w", name, tokens.Err())
	}
	return p, err
}

// ErrPickle is the error for a file that is a pickle, as CUDA allocator
// snapshots are (torch.cuda.memory._dump_snapshot): not a profiler trace.
var ErrPickle = errors.New("a pickle (a CUDA allocator snapshot, torch.cuda.memory._dump_snapshot), not a torch.profiler trace")

// decodeBody tells a memory timeline from a trace and decodes it.
func decodeBody(in io.Reader, gz bool, name string, chunk int) (Profile, error) {
	br := bufio.NewReaderSize(in, 64<<10)
	// Pickle protocols 2 to 5 start with PROTO (0x80) and the version: no
	// JSON text does.
	if b, _ := br.Peek(2); len(b) == 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5 {
		return Profile{}, fmt.Errorf("decoding %s at byte 0: %w", name, ErrPickle)
	}
	if isMemoryTimeline(br) {
		ct, err := decodeTimeline(br, gz, name)
		return Profile{Timeline: ct}, err
	}
	t, err := decodeTrace(br, gz, name, chunk)
	return Profile{Trace: t}, err
}

// isMemoryTimeline peeks at the first bytes of r: '[' then '[' past
// whitespace.
func isMemoryTimeline(r *bufio.Reader) bool {
	b, _ := r.Peek(4096)
	seen := 0
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '[':
			if seen++; seen == 2 {
				return true
			}
			continue
		}
		return false
	}
	return false
}
