package serve

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// gzipMin is the smallest answer worth compressing: below it the gzip
// header and the work cost more than the bytes saved.
const gzipMin = 1 << 10

// gzipWriters are reused: a gzip.Writer holds about 800 KB of state.
// BestSpeed: the API's JSON (long runs of digits and repeated keys)
// shrinks about tenfold at it, at several hundred MB/s, where the default
// level would cost a large answer tens of milliseconds more.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip
// (RFC 9110: "gzip" or "*" with a q-value above 0).
func acceptsGzip(r *http.Request) bool {
	for _, h := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(h, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "x-gzip" && coding != "*" {
				continue
			}
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
						q = f
					}
				}
			}
			if q > 0 {
				return true
			}
		}
	}
	return false
}

// writeBody writes an answer's body with its status, gzipped when the
// client accepts it and the body is large enough to gain from it.
func writeBody(w http.ResponseWriter, r *http.Request, code int, body []byte) {
	h := w.Header()
	h.Add("Vary", "Accept-Encoding")
	if len(body) < gzipMin || r == nil || !acceptsGzip(r) {
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(code)
		w.Write(body)
		return
	}
	var buf bytes.Buffer
	buf.Grow(len(body) / 6)
	gz := gzipWriters.Get().(*gzip.Writer)
	gz.Reset(&buf)
	gz.Write(body)
	gz.Close()
	gzipWriters.Put(gz)
	h.Set("Content-Encoding", "gzip")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}
