package serve

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// The headers every answer carries. The page is self-contained: its script
// and style sheet come from the server itself, its only inline styles are
// the style attributes app.js writes (legend swatches, bars), the favicon
// is data:, and it fetches /api/ from the same origin. Nothing may frame
// it, and nothing it answers is read as another type than it says.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// Access says who may read a listening server: Guard's rule.
type Access struct {
	// Port is the port listened on, as the Host header names it.
	Port string
	// Hosts are the names (and addresses) a request's Host header may
	// give, with Port; empty: any (only with a Token).
	Hosts []string
	// Token, when set, must come with every request: as ?token= (which
	// sets a cookie for the page's own requests), as the cookie, or as
	// "Authorization: Bearer TOKEN".
	Token string
}

// NewAccess returns the rule for a server listening on addr, named name in
// --http (such as "localhost"). On a loopback address a request must name
// the server by a loopback name in its Host header: a page of another
// site whose name resolves to 127.0.0.1 (DNS rebinding) is refused. On any
// other address the Host cannot be known in advance (the machine's names,
// a tunnel's), so a random token is required instead, as Jupyter does.
func NewAccess(addr net.Addr, name string) (Access, error) {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return Access{}, fmt.Errorf("listening on %s: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() {
		hosts := []string{"localhost", "127.0.0.1", "::1", ip.String()}
		if name != "" {
			hosts = append(hosts, strings.ToLower(strings.Trim(name, "[]")))
		}
		return Access{Port: port, Hosts: hosts}, nil
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return Access{}, fmt.Errorf("making the access token: %w", err)
	}
	return Access{Port: port, Token: hex.EncodeToString(b)}, nil
}

// URL returns the address to open: base (http://HOST:PORT/) with the token
// when one is required.
func (a Access) URL(base string) string {
	if a.Token == "" {
		return base
	}
	return base + "?token=" + url.QueryEscape(a.Token)
}

// cookie is the token's cookie name: one per port, as cookies are shared
// by every port of a host.
func (a Access) cookie() string { return "memscope-token-" + a.Port }

// Guard returns h behind a's rule: a request whose Host header names
// another server is refused with 403, one without the token with 401.
// Both answers carry the security headers.
func Guard(h http.Handler, a Access) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w.Header())
		if len(a.Hosts) > 0 && !a.hostAllowed(r.Host) {
			http.Error(w, fmt.Sprintf("memscope serve answers requests for localhost:%s or 127.0.0.1:%s only, not for Host %q: "+
				"a page of another site (DNS rebinding) may not read it", a.Port, a.Port, r.Host), http.StatusForbidden)
			return
		}
		if a.Token != "" {
			tok, fromQuery := a.tokenOf(r)
			if subtle.ConstantTimeCompare([]byte(tok), []byte(a.Token)) != 1 {
				http.Error(w, "memscope serve listens beyond this machine and needs its token: open the URL it printed (…/?token=…), "+
					"or send \"Authorization: Bearer TOKEN\"", http.StatusUnauthorized)
				return
			}
			if fromQuery {
				http.SetCookie(w, &http.Cookie{Name: a.cookie(), Value: a.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			}
		}
		h.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether the Host header hostport names this server.
func (a Access) hostAllowed(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, "80"
	}
	if port != a.Port {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	for _, h := range a.Hosts {
		if host == h {
			return true
		}
	}
	return false
}

// tokenOf returns the token r carries and whether it came in the query.
func (a Access) tokenOf(r *http.Request) (string, bool) {
	if t := r.URL.Query().Get("token"); t != "" {
		return t, true
	}
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(t), false
	}
	if c, err := r.Cookie(a.cookie()); err == nil {
		return c.Value, false
	}
	return "", false
}
