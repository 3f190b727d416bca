package serve

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// ask sends GET path to h with the Host header host and the extra headers,
// and returns the recorder.
func ask(h http.Handler, host, path string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// checkSecurityHeaders fails unless rec carries the policy headers.
func checkSecurityHeaders(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	h := rec.Header()
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: Content-Security-Policy %q lacks %q", what, csp, want)
		}
	}
	if strings.Contains(csp, "script-src 'self' 'unsafe") || strings.Contains(csp, "'unsafe-eval'") {
		t.Errorf("%s: Content-Security-Policy %q lets inline or eval'd script run", what, csp)
	}
	if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options = %q, want nosniff", what, got)
	}
	if got := h.Get("X-Frame-Options"); got != "DENY" {
		t.Errorf("%s: X-Frame-Options = %q, want DENY", what, got)
	}
}

// TestGuardLoopback: on 127.0.0.1 the server answers the page and the API
// to requests naming it (localhost, 127.0.0.1, [::1], with its port) and
// refuses a forged Host (a DNS-rebinding page's) or another port with
// 403; every answer carries the security headers.
func TestGuardLoopback(t *testing.T) {
	srv := newServer(t, "../fixtures/llama-bf16/snapshot.pickle")
	a, err := NewAccess(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 43117}, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	if a.Token != "" || a.URL("http://127.0.0.1:43117/") != "http://127.0.0.1:43117/" {
		t.Errorf("NewAccess(127.0.0.1) = token %q, URL %q; want no token", a.Token, a.URL("http://127.0.0.1:43117/"))
	}
	h := Guard(srv, a)
	for _, host := range []string{"127.0.0.1:43117", "localhost:43117", "LOCALHOST:43117", "[::1]:43117"} {
		rec := ask(h, host, "/")
		if body := rec.Body.String(); rec.Code != http.StatusOK || !strings.Contains(body, `<script src="app.js">`) {
			t.Errorf("GET / with Host %s = %d, want 200 and the page", host, rec.Code)
		}
		checkSecurityHeaders(t, "GET / Host "+host, rec)
		rec = ask(h, host, "/api/summary")
		var sum Summary
		if err := json.Unmarshal(rec.Body.Bytes(), &sum); rec.Code != http.StatusOK || err != nil || sum.Summary.AtPeak.Allocated <= 0 {
			t.Errorf("GET /api/summary with Host %s = %d (%v), at_peak.allocated %d; want 200 and the peak", host, rec.Code, err, sum.Summary.AtPeak.Allocated)
		}
	}
	for _, host := range []string{"evil.example:43117", "evil.example", "127.0.0.1:8080", "localhost", "127.0.0.2:43117", "localhost.evil.example:43117", ""} {
		for _, p := range []string{"/", "/api/summary", "/api/views", "/app.js"} {
			rec := ask(h, host, p)
			if rec.Code != http.StatusForbidden || strings.Contains(rec.Body.String(), "at_peak") || !strings.Contains(rec.Body.String(), "DNS rebinding") {
				t.Errorf("GET %s with Host %q = %d %q, want 403 saying why", p, host, rec.Code, rec.Body.String())
			}
			checkSecurityHeaders(t, "refused GET "+p, rec)
		}
	}
}

// TestGuardToken: on an address other than loopback the server needs its
// token (48 hex digits, a new one each time): 401 without it or with
// another; ?token= answers and sets the cookie the page's own requests
// carry; a script may send it as a bearer token. Any Host is let in with
// the token.
func TestGuardToken(t *testing.T) {
	srv := newServer(t, "../fixtures/llama-bf16/snapshot.pickle")
	a, err := NewAccess(&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewAccess(&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "")
	if !regexp.MustCompile(`^[0-9a-f]{48}$`).MatchString(a.Token) || a.Token == b.Token {
		t.Fatalf("NewAccess([::]) tokens %q, %q: want 48 hex digits, different each time", a.Token, b.Token)
	}
	if got, want := a.URL("http://[::]:8080/"), "http://[::]:8080/?token="+a.Token; got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
	h := Guard(srv, a)
	host := "gpu-box.example:8080"
	for _, c := range []struct{ path, k, v string }{
		{"/", "", ""},
		{"/api/summary", "", ""},
		{"/?token=" + b.Token, "", ""},
		{"/api/summary", "Authorization", "Bearer " + b.Token},
		{"/api/summary", "Cookie", "memscope-token-8080=" + b.Token},
		{"/api/summary", "Cookie", "memscope-token-9090=" + a.Token},
	} {
		rec := ask(h, host, c.path, c.k, c.v)
		if rec.Code != http.StatusUnauthorized || strings.Contains(rec.Body.String(), "at_peak") || !strings.Contains(rec.Body.String(), "token") {
			t.Errorf("GET %s (%s: %s) without the token = %d %q, want 401", c.path, c.k, c.v, rec.Code, rec.Body.String())
		}
		checkSecurityHeaders(t, "401", rec)
	}
	rec := ask(h, host, "/?token="+a.Token)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `<script src="app.js">`) {
		t.Fatalf("GET /?token= = %d, want 200 and the page", rec.Code)
	}
	checkSecurityHeaders(t, "GET /?token=", rec)
	var cookie *http.Cookie
	for _, c := range rec.Result().Cookies() {
		if c.Name == "memscope-token-8080" {
			cookie = c
		}
	}
	if cookie == nil || cookie.Value != a.Token || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("GET /?token= set cookie %+v, want memscope-token-8080 = the token, HttpOnly, SameSite=Strict", cookie)
	}
	// The page's own requests: its assets and API with the cookie alone.
	for _, p := range []string{"/app.js", "/style.css", "/api/views", "/api/summary"} {
		rec := ask(h, host, p, "Cookie", cookie.Name+"="+cookie.Value)
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
			t.Errorf("GET %s with the cookie = %d, want 200", p, rec.Code)
		}
	}
	rec = ask(h, host, "/api/summary", "Authorization", "Bearer "+a.Token)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "at_peak") {
		t.Errorf("GET /api/summary with the bearer token = %d, want 200 and the summary", rec.Code)
	}
}

// TestPageFitsPolicy: what the policy forbids is absent from the page: no
// inline script or style element, no inline event handler, no eval, no
// request to another origin, so the page works under it (TestChromium
// watches the console for a refusal).
func TestPageFitsPolicy(t *testing.T) {
	for _, name := range []string{"index.html", "app.js", "style.css"} {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, re := range []string{`<script(\s[^>]*)?>\s*[^<\s]`, `<script>`, `<style`, `\son[a-z]+\s*=`, `\beval\(`, `new Function\(`, `javascript:`, `@import`, `url\((['"]?)(https?:|//)`} {
			if m := regexp.MustCompile(re).FindString(s); m != "" {
				t.Errorf("%s holds %q, which the Content-Security-Policy refuses", name, m)
			}
		}
	}
	if !strings.Contains(contentSecurityPolicy, "style-src-attr 'unsafe-inline'") {
		t.Errorf("policy %q: app.js writes style attributes (legend swatches, bars), which need style-src-attr", contentSecurityPolicy)
	}
}
