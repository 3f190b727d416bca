package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ListenError is a failure to listen on the address asked for.
type ListenError struct {
	Addr string
	Err  error
}

func (e *ListenError) Error() string { return fmt.Sprintf("listen on %s: %v", e.Addr, e.Err) }
func (e *ListenError) Unwrap() error { return e.Err }

// Run serves srv on addr (HOST:PORT; port 0: a free one) behind Guard
// until ctx is done, then shuts down within two seconds. Once it listens
// it calls listening with the page's URL (with the access token when the
// address is not loopback: NewAccess), its address without the token, and
// whether a token is needed. A failure to listen is a *ListenError.
func Run(ctx context.Context, srv http.Handler, addr string, listening func(url, base string, token bool)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &ListenError{Addr: addr, Err: err}
	}
	name, _, _ := net.SplitHostPort(addr)
	access, err := NewAccess(ln.Addr(), name)
	if err != nil {
		ln.Close()
		return err
	}
	base := "http://" + ln.Addr().String() + "/"
	url := access.URL(base)
	hs := &http.Server{Handler: Guard(srv, access), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	if listening != nil {
		listening(url, base, access.Token != "")
	}
	select {
	case err := <-done:
		return fmt.Errorf("serving on %s: %w", base, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
