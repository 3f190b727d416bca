package serve

// A minimal client of the Chrome DevTools protocol over
// --remote-debugging-pipe: Chromium reads commands on its fd 3 and writes
// answers and events on its fd 4, each message JSON ended by a NUL byte.
// No dependency: the browser test drives Debian's chromium with it.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/memscope/memscope/internal/testenv"
)

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

type cdp struct {
	cmd     *exec.Cmd
	w       *os.File
	mu      sync.Mutex
	next    int
	pending map[int]chan cdpMessage
	onEvent func(m cdpMessage) // called on the reading goroutine
	session string
	stderr  *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.b) < 1<<20 {
		l.b = append(l.b, p...)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// startChromium runs a headless Chromium with a fresh profile and attaches
// to a new blank page. A browser that does not answer its first command
// (CI containers have seen chromium segfault at start) is started again,
// twice at most.
func startChromium(t *testing.T, bin string, onEvent func(cdpMessage)) *cdp {
	t.Helper()
	for try := 1; ; try++ {
		c, err := launchChromium(t, bin, onEvent)
		if err == nil {
			return c
		}
		if try == 3 {
			t.Fatalf("%v\nchromium: %.4000s", err, c.stderr)
		}
		t.Logf("%v (try %d of 3; starting chromium again)", err, try)
	}
}

func launchChromium(t *testing.T, bin string, onEvent func(cdpMessage)) (*cdp, error) {
	t.Helper()
	toChrome, ourEnd, err := os.Pipe() // chromium's fd 3: it reads
	if err != nil {
		t.Fatal(err)
	}
	ourRead, fromChrome, err := os.Pipe() // chromium's fd 4: it writes
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--remote-debugging-pipe",
		"--no-first-run", "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--disable-quic", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
		"--user-data-dir="+t.TempDir(), "about:blank")
	c := &cdp{cmd: cmd, w: ourEnd, pending: map[int]chan cdpMessage{}, onEvent: onEvent, stderr: &lockedBuffer{}}
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		testenv.Need(t, "the browser test: chromium would not start: %v", err)
	}
	toChrome.Close()
	fromChrome.Close()
	t.Cleanup(func() {
		c.call("Browser.close", nil) // best effort; the context kills it otherwise
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cancel()
			<-done
		}
		cancel()
		ourEnd.Close()
		ourRead.Close()
	})
	go c.read(bufio.NewReaderSize(ourRead, 1<<20))
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := c.callInto("Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return c, fmt.Errorf("Target.createTarget: %w", err)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.callInto("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		t.Fatalf("Target.attachToTarget: %v", err)
	}
	c.session = att.SessionID
	return c, nil
}

func (c *cdp) read(r *bufio.Reader) {
	for {
		b, err := r.ReadBytes(0)
		if err != nil {
			c.mu.Lock()
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(b[:len(b)-1], &m) != nil {
			continue
		}
		if m.ID != 0 {
			c.mu.Lock()
			ch := c.pending[m.ID]
			delete(c.pending, m.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		if c.onEvent != nil {
			c.onEvent(m)
		}
	}
}

// call sends a command to the browser (session "" ) and waits for its
// answer.
func (c *cdp) send(session, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan cdpMessage, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	if params == nil {
		p = []byte("{}")
	}
	msg, _ := json.Marshal(cdpMessage{ID: id, Method: method, Params: p, SessionID: session})
	if _, err := c.w.Write(append(msg, 0)); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: the browser closed the pipe", method)
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		return m.Result, nil
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("%s: no answer in 60 s", method)
	}
}

func (c *cdp) call(method string, params any) (json.RawMessage, error) {
	return c.send("", method, params)
}

func (c *cdp) callInto(method string, params, into any) error {
	r, err := c.call(method, params)
	if err != nil {
		return err
	}
	return json.Unmarshal(r, into)
}

// page sends a command to the attached page.
func (c *cdp) page(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	r, err := c.send(c.session, method, params)
	if err != nil {
		t.Fatalf("%v\nchromium: %.2000s", err, c.stderr)
	}
	return r
}

// eval evaluates a JavaScript expression in the page and decodes its
// value (awaiting a promise) into v.
func (c *cdp) eval(t *testing.T, expr string, v any) {
	t.Helper()
	r := c.page(t, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(r, &res); err != nil {
		t.Fatalf("Runtime.evaluate %s: %v", expr, err)
	}
	if res.ExceptionDetails != nil {
		t.Fatalf("Runtime.evaluate %s: %s %s", expr, res.ExceptionDetails.Text, res.ExceptionDetails.Exception.Description)
	}
	if v != nil && len(res.Result.Value) > 0 {
		if err := json.Unmarshal(res.Result.Value, v); err != nil {
			t.Fatalf("Runtime.evaluate %s = %s: %v", expr, res.Result.Value, err)
		}
	}
}

// waitFor evaluates a boolean expression until it holds, or fails after
// limit.
func (c *cdp) waitFor(t *testing.T, what, expr string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		var ok bool
		c.eval(t, "(() => { try { return !!("+expr+"); } catch (e) { return false; } })()", &ok) // the page may not be there yet
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			var errs any
			c.eval(t, "window.memscope ? memscope.errors : 'no app'", &errs)
			t.Fatalf("%s: not after %s (%s); page errors: %v", what, limit, expr, errs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
