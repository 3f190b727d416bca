package serve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRun: Run listens, tells the URL (no token on loopback), serves the
// page behind the guard, and returns nil once its context is done; an
// address it cannot listen on is a *ListenError naming it.
func TestRun(t *testing.T) {
	srv := newServer(t, "../fixtures/llama-bf16/snapshot.pickle")
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, srv, "127.0.0.1:0", func(url, base string, token bool) {
			if token || url != base {
				t.Errorf("loopback: url %q, base %q, token %v; want no token", url, base, token)
			}
			urls <- url
		})
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not listen")
	}
	resp, err := http.Get(url + "units.js")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "memscopeUnits") || resp.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("GET units.js: %d, %d bytes, CSP %q", resp.StatusCode, len(body), resp.Header.Get("Content-Security-Policy"))
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after its context is done: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop")
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	err = Run(context.Background(), srv, busy.Addr().String(), nil)
	var le *ListenError
	if !errors.As(err, &le) || le.Addr != busy.Addr().String() {
		t.Errorf("Run on a busy address: %v, want a ListenError naming %s", err, busy.Addr())
	}
}
