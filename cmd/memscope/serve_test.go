package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serveWith runs 'memscope serve args…' in-process; fn is called with the
// URL once it listens, and the server stops when fn returns.
func serveWith(t *testing.T, fn func(url string), args ...string) runResult {
	t.Helper()
	oldCtx, oldListen := serveContext, serveListening
	ctx, cancel := context.WithCancel(context.Background())
	serveContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	serveListening = func(url string) {
		defer cancel()
		fn(url)
	}
	defer func() { serveContext, serveListening = oldCtx, oldListen; cancel() }()
	return runMemscope(append([]string{"serve"}, args...)...)
}

// TestServe: serve analyses the snapshot as summary does, prints the URL
// on stdout, answers the page and the API there, and stops when told.
func TestServe(t *testing.T) {
	snap := "../../fixtures/llama-bf16/snapshot.pickle"
	var sumDoc struct {
		Files []struct {
			Devices []struct {
				AtPeak struct {
					Allocated int64 `json:"allocated"`
				} `json:"at_peak"`
			} `json:"devices"`
		} `json:"files"`
	}
	s := runMemscope("summary", "--json", snap)
	if err := json.Unmarshal([]byte(s.stdout), &sumDoc); err != nil || len(sumDoc.Files) != 1 {
		t.Fatalf("summary --json: %v\n%s", err, s.stdout)
	}
	want := sumDoc.Files[0].Devices[0].AtPeak.Allocated
	var got int64
	var page int
	r := serveWith(t, func(url string) {
		resp, err := http.Get(url + "api/summary")
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		var sum struct {
			Summary struct {
				AtPeak struct {
					Allocated int64 `json:"allocated"`
				} `json:"at_peak"`
			} `json:"summary"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&sum); err != nil {
			t.Error(err)
		}
		got = sum.Summary.AtPeak.Allocated
		if resp, err := http.Get(url); err == nil {
			page = resp.StatusCode
			resp.Body.Close()
		}
	}, "--http", "127.0.0.1:0", snap)
	if r.err != nil || r.code != 0 {
		t.Fatalf("serve: %v (exit %d)\n%s", r.err, r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "http://127.0.0.1:") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("serve printed %q, want the URL on one line", r.stdout)
	}
	if !strings.Contains(r.stderr, "reading "+snap) || !strings.Contains(r.stderr, "the UI is on http://127.0.0.1:") {
		t.Errorf("serve's progress lines:\n%s", r.stderr)
	}
	if got != want || page != http.StatusOK {
		t.Errorf("serve: /api/summary at_peak.allocated = %d, page %d; want %d (summary --json), 200", got, page, want)
	}
}

// TestServeBadInput: serve refuses what it cannot serve, exit 2, before
// listening.
func TestServeBadInput(t *testing.T) {
	notSnap := filepath.Join(t.TempDir(), "x.pickle")
	os.WriteFile(notSnap, []byte("not a pickle"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "missing SNAP"},
		{[]string{"--http", "nonsense", "../../fixtures/llama-bf16/snapshot.pickle"}, "--http"},
		{[]string{"--device", "7", "../../fixtures/llama-bf16/snapshot.pickle"}, "--device 7"},
		{[]string{"--device", "-3", "../../fixtures/llama-bf16/snapshot.pickle"}, "--device -3"},
		{[]string{"no/such/file.pickle"}, "no such file"},
		{[]string{notSnap}, "x.pickle"},
		{[]string{"--run", "../../fixtures/sweep-llama"}, "sweep run"},
		{[]string{"--trace", "no/such/trace.json", "../../fixtures/llama-bf16/snapshot.pickle"}, "trace.json"},
	} {
		listened := false
		r := serveWith(t, func(string) { listened = true }, c.args...)
		if r.code != 2 || listened || !strings.Contains(r.stderr, c.want) {
			t.Errorf("serve %q: exit %d, listened %v, stderr %q; want exit 2 naming %q", c.args, r.code, listened, r.stderr, c.want)
		}
	}
}

// TestServeRun: --run serves a capture run's snapshot joined with its
// profiler trace (the summary's peak by operator), and two snapshots make
// two views the page can compare.
func TestServeRun(t *testing.T) {
	var sum struct {
		Summary struct {
			Ops []struct{ Op string } `json:"ops_at_peak"`
		} `json:"summary"`
	}
	var views struct {
		Views []struct{ ID int } `json:"views"`
	}
	r := serveWith(t, func(url string) {
		getJSON(t, url+"api/summary", &sum)
		getJSON(t, url+"api/views", &views)
	}, "--run", "../../fixtures/capture-train", "../../fixtures/llama-bf16/snapshot.pickle")
	if r.err != nil {
		t.Fatalf("serve --run: %v\n%s", r.err, r.stderr)
	}
	if len(sum.Summary.Ops) == 0 || len(views.Views) != 2 {
		t.Errorf("serve --run capture-train llama-bf16: %d operator rows, %d views; want the trace joined and 2 views", len(sum.Summary.Ops), len(views.Views))
	}
}

func getJSON(t *testing.T, url string, into any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Error(err)
		return
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Errorf("GET %s: %v", url, err)
	}
}

// TestServeEveryFixture: serve starts on every fixture snapshot (each
// rank's, each point's), answers its summary and timeline, stops, exits 0
// and prints nothing raw from Go (the fixture table's rule).
func TestServeEveryFixture(t *testing.T) {
	var snaps []string
	filepath.WalkDir("../../fixtures", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "snapshot") && strings.HasSuffix(d.Name(), ".pickle") {
			snaps = append(snaps, p)
		}
		return nil
	})
	if len(snaps) < 20 {
		t.Fatalf("%d fixture snapshots", len(snaps))
	}
	for _, s := range snaps {
		codes := map[string]int{}
		r := serveWith(t, func(url string) {
			for _, p := range []string{"", "api/summary", "api/timeline?px=400", "api/moment?at=end"} {
				resp, err := http.Get(url + p)
				if err != nil {
					t.Error(err)
					continue
				}
				resp.Body.Close()
				codes[p] = resp.StatusCode
			}
		}, "--http", "127.0.0.1:0", s)
		if r.code != 0 {
			t.Errorf("serve %s: exit %d: %v\n%s", s, r.code, r.err, r.stderr)
			continue
		}
		if m := rawGoOutput.FindString(r.stdout + r.stderr); m != "" {
			t.Errorf("serve %s prints %q, raw Go output:\n%s", s, m, r.stderr)
		}
		for p, c := range codes {
			if c != http.StatusOK {
				t.Errorf("serve %s: GET /%s = %d", s, p, c)
			}
		}
	}
}

// TestServeGuard: on 127.0.0.1 serve refuses a request whose Host names
// another site (a DNS-rebinding page's) with 403 and answers the page and
// the API to one naming it; on every interface (--http :0) it prints the
// URL with its token once, on stdout, refuses requests without it (401)
// and answers them with it.
func TestServeGuard(t *testing.T) {
	snap := "../../fixtures/llama-bf16/snapshot.pickle"
	status := func(u, host, auth string) (int, string) {
		req, err := http.NewRequest("GET", u, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	r := serveWith(t, func(u string) {
		if code, body := status(u+"api/summary", "evil.example:80", ""); code != http.StatusForbidden || strings.Contains(body, "at_peak") {
			t.Errorf("GET api/summary with Host evil.example = %d %q, want 403", code, body)
		}
		if code, body := status(u+"api/summary", "", ""); code != http.StatusOK || !strings.Contains(body, "at_peak") {
			t.Errorf("GET api/summary with its own Host = %d, want 200 and the summary", code)
		}
	}, "--http", "127.0.0.1:0", snap)
	if r.err != nil || strings.Contains(r.stdout, "token") {
		t.Fatalf("serve --http 127.0.0.1:0: %v, printed %q; want no token\n%s", r.err, r.stdout, r.stderr)
	}

	var token string
	r = serveWith(t, func(u string) {
		pu, err := neturl.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		token = pu.Query().Get("token")
		local := "http://127.0.0.1:" + pu.Port() + "/"
		for _, p := range []string{"", "api/summary", "app.js"} {
			if code, body := status(local+p, "", ""); code != http.StatusUnauthorized || strings.Contains(body, "at_peak") {
				t.Errorf("GET %s without the token = %d, want 401", p, code)
			}
		}
		if code, body := status(local+"api/summary", "", "Bearer "+token); code != http.StatusOK || !strings.Contains(body, "at_peak") {
			t.Errorf("GET api/summary with the token = %d, want 200 and the summary", code)
		}
		if code, body := status(local+"?token="+token, "gpu-box.example:"+pu.Port(), ""); code != http.StatusOK || !strings.Contains(body, "app.js") {
			t.Errorf("GET /?token= = %d, want 200 and the page", code)
		}
	}, "--http", ":0", snap)
	if r.err != nil || len(token) != 48 {
		t.Fatalf("serve --http :0: %v, token %q; want a 48-digit token\n%s", r.err, token, r.stderr)
	}
	if strings.Count(r.stdout+r.stderr, token) != 1 || !strings.Contains(r.stderr, "reachable from other machines") {
		t.Errorf("serve --http :0 printed the token %d times (stdout %q), want once, and stderr saying it is reachable:\n%s", strings.Count(r.stdout+r.stderr, token), r.stdout, r.stderr)
	}
}
