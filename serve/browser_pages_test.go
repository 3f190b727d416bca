package serve

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// encodings records the Content-Encoding of each /api answer the page
// got, by path.
type encodings struct {
	h  http.Handler
	mu sync.Mutex
	by map[string]string
}

func (e *encodings) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.h.ServeHTTP(w, r)
	if strings.HasPrefix(r.URL.Path, "/api/") {
		e.mu.Lock()
		if e.by == nil {
			e.by = map[string]string{}
		}
		e.by[r.URL.Path] = w.Header().Get("Content-Encoding")
		e.mu.Unlock()
	}
}

// TestChromiumSteps: on a recording of many steps the Steps page shows one
// page of them, its rows the server's page of phases; next, last and "go
// to step" move through them by the address; and the browser got the
// answers gzipped.
func TestChromiumSteps(t *testing.T) {
	path := bigSnapshot(t, "../fixtures/llama-bf16/snapshot.pickle", 24<<20)
	srv := newServer(t, path)
	all := srv.views[0].d.Phases.Steps
	if len(all) <= 3*defaultStepsPage {
		t.Fatalf("%d steps, want more than three pages", len(all))
	}
	enc := &encodings{h: srv}
	c, base, problems := openBrowser(t, enc)
	rowsOf := func(from, to int) int { // the page's rows: one per phase
		n := 0
		for _, st := range all[from:min(to, len(all))] {
			n += len(st.Phases)
		}
		return n
	}
	check := func(what string, offset int) {
		t.Helper()
		c.waitFor(t, what, fmt.Sprintf(`document.body.dataset.page === 'steps' && document.getElementById('st-body').dataset.offset === '%d'`, offset), 60*time.Second)
		var got struct {
			Rows  int
			First string
			Nav   string
		}
		c.eval(t, `(() => { const b = document.getElementById('st-body'), tr = b.querySelectorAll('table tr');
			return {rows: tr.length - 1, first: tr.length > 1 ? tr[1].cells[0].innerText : '', nav: (document.getElementById('st-nav') || {}).innerText || ''}; })()`, &got)
		if want := rowsOf(offset, offset+defaultStepsPage); got.Rows != want || got.First != fmt.Sprint(all[offset].Step) {
			t.Errorf("%s: %d rows from step %s, want %d from step %d", what, got.Rows, got.First, want, all[offset].Step)
		}
		if want := fmt.Sprintf("steps %d–%d of %d", offset+1, min(offset+defaultStepsPage, len(all)), len(all)); !strings.Contains(got.Nav, want) {
			t.Errorf("%s: the navigation reads %q, want %q in it", what, got.Nav, want)
		}
	}
	c.page(t, "Page.navigate", map[string]any{"url": base + "#steps"})
	check("the first page of steps", 0)
	c.eval(t, `[...document.querySelectorAll('#st-nav a')].find((a) => a.innerText === 'next ›').click()`, nil)
	check("the next page", defaultStepsPage)
	c.eval(t, `[...document.querySelectorAll('#st-nav a')].find((a) => a.innerText === 'last »').click()`, nil)
	last := (len(all) - 1) / defaultStepsPage * defaultStepsPage
	check("the last page", last)
	c.eval(t, `history.back()`, nil)
	check("back to the second page", defaultStepsPage)
	c.eval(t, fmt.Sprintf(`(() => { const i = document.getElementById('st-go'); i.value = '%d'; i.dispatchEvent(new Event('change')); })()`, all[len(all)-1].Step), nil)
	check("go to the last step", last)
	enc.mu.Lock()
	for _, p := range []string{"/api/steps", "/api/summary"} {
		if enc.by[p] != "gzip" {
			t.Errorf("the browser got %s with Content-Encoding %q, want gzip", p, enc.by[p])
		}
	}
	enc.mu.Unlock()
	for _, p := range problems() {
		t.Error(p)
	}
}
