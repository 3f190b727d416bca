package snapshot

import "bytes"

// The profiler's files are JSON too, and users give them to snapshot
// commands by mistake. They are told apart from a JSON snapshot by their
// first bytes, before anything is decoded.

// Profiler file kinds recognised by profilerFile.
const (
	notProfiler = iota
	chromeTrace
	memoryTimeline
)

// traceKeys are top-level keys of a Chrome trace that a snapshot never
// has; Kineto writes "schemaVersion" first, other writers "traceEvents".
var traceKeys = []string{"traceEvents", "schemaVersion", "deviceProperties", "displayTimeUnit", "traceName",
	"baseTimeNanoseconds", "otherData", "systemTraceEvents"}

// profilerFile says whether head, the first bytes of a JSON input, is a
// torch.profiler Chrome trace (an object with traceEvents, or the legacy
// array of event objects) or an export_memory_timeline file (an array of
// arrays).
func profilerFile(head []byte) int {
	i := skipSpace(head, 0)
	if i >= len(head) {
		return notProfiler
	}
	switch head[i] {
	case '{':
		if k, ok := firstKey(head, i+1); ok {
			for _, t := range traceKeys {
				if k == t {
					return chromeTrace
				}
			}
		}
		if bytes.Contains(head, []byte(`"traceEvents"`)) && !bytes.Contains(head, []byte(`"segments"`)) {
			return chromeTrace
		}
	case '[':
		j := skipSpace(head, i+1)
		if j >= len(head) {
			return notProfiler
		}
		switch head[j] {
		case '[':
			return memoryTimeline
		case '{':
			obj := head[j:]
			if end := bytes.IndexByte(obj, '}'); end >= 0 {
				obj = obj[:end]
			}
			if hasKey(obj, "ph") && !hasKey(obj, "blocks") {
				return chromeTrace
			}
		}
	}
	return notProfiler
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// firstKey returns the first key of the object whose '{' precedes b[i],
// when it is a plain string without escapes.
func firstKey(b []byte, i int) (string, bool) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '"' {
		return "", false
	}
	end := bytes.IndexAny(b[i+1:], `"\`)
	if end < 0 || b[i+1+end] != '"' {
		return "", false
	}
	return string(b[i+1 : i+1+end]), true
}

// hasKey reports whether obj holds "k" followed by a colon.
func hasKey(obj []byte, k string) bool {
	pat := []byte(`"` + k + `"`)
	for off := 0; ; {
		j := bytes.Index(obj[off:], pat)
		if j < 0 {
			return false
		}
		off += j + len(pat)
		if n := skipSpace(obj, off); n < len(obj) && obj[n] == ':' {
			return true
		}
	}
}
