package serve

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http/httptest"
	"strconv"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for _, c := range []struct {
		header string
		want   bool
	}{
		{"", false},
		{"gzip", true},
		{"gzip, deflate, br, zstd", true}, // Chromium's
		{"deflate, br", false},
		{"GZIP;q=0.5", true},
		{"gzip;q=0", false},
		{"gzip; q=0.0, br", false},
		{"*", true},
		{"*;q=0", false},
		{"identity", false},
		{"x-gzip", true},
	} {
		r := httptest.NewRequest("GET", "/api/summary", nil)
		if c.header != "" {
			r.Header.Set("Accept-Encoding", c.header)
		}
		if got := acceptsGzip(r); got != c.want {
			t.Errorf("acceptsGzip(Accept-Encoding: %q) = %v, want %v", c.header, got, c.want)
		}
	}
}

// TestGzip: an answer is gzipped when the client accepts it and it is
// large enough, and decompresses to the bytes of the plain answer; a
// client that does not accept gzip, and a small answer, get plain JSON.
func TestGzip(t *testing.T) {
	s := newServer(t, "../fixtures/llama-bf16/snapshot.pickle")
	fetch := func(url, accept string) (*httptest.ResponseRecorder, []byte) {
		r := httptest.NewRequest("GET", url, nil)
		if accept != "" {
			r.Header.Set("Accept-Encoding", accept)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Header().Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("GET %s: %v", url, err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatalf("GET %s: %v", url, err)
			}
		}
		return rec, body
	}
	for _, url := range []string{"/api/timeline?px=800", "/api/moment?at=peak", "/api/summary", "/api/steps", "/api/sites?at=peak"} {
		plain, want := fetch(url, "")
		if enc := plain.Header().Get("Content-Encoding"); enc != "" {
			t.Errorf("GET %s with no Accept-Encoding: Content-Encoding %q, want none", url, enc)
		}
		zipped, got := fetch(url, "gzip, deflate, br")
		if enc := zipped.Header().Get("Content-Encoding"); enc != "gzip" {
			t.Errorf("GET %s (%d bytes) accepting gzip: Content-Encoding %q, want gzip", url, len(want), enc)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("GET %s: the gzipped answer decompresses to %d bytes, not the %d of the plain one", url, len(got), len(want))
		}
		if n := zipped.Body.Len(); n*2 > len(want) || zipped.Header().Get("Content-Length") != strconv.Itoa(n) {
			t.Errorf("GET %s: %d bytes gzipped (Content-Length %s) of %d", url, n, zipped.Header().Get("Content-Length"), len(want))
		}
		if v := zipped.Header().Get("Vary"); v != "Accept-Encoding" {
			t.Errorf("GET %s: Vary %q, want Accept-Encoding", url, v)
		}
	}
	// llama-bf16 has no OOM: "[]" is not worth compressing.
	small, body := fetch("/api/oom", "gzip")
	if enc := small.Header().Get("Content-Encoding"); enc != "" || string(body) != "[]" {
		t.Errorf("GET /api/oom: Content-Encoding %q, body %q; want none and []", enc, body)
	}
	refused, _ := fetch("/api/timeline?px=800", "gzip;q=0, identity")
	if enc := refused.Header().Get("Content-Encoding"); enc != "" {
		t.Errorf("GET /api/timeline with gzip;q=0: Content-Encoding %q, want none", enc)
	}
}
