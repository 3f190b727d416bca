package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
)

// TestOptionOf renders the page of every fixture, and of one whose frame
// names hold what HTML and JavaScript escape, and requires each chart's
// option to be what go-echarts' RenderSnippet gives.
func TestOptionOf(t *testing.T) {
	charts := 0
	optionMade = func(c snippetter, o string) {
		charts++
		if want := strings.TrimSpace(c.RenderSnippet().Option); o != want {
			t.Fatalf("chart option differs from RenderSnippet's:\n got %.300s\nwant %.300s", o, want)
		}
	}
	defer func() { optionMade = nil }()
	paths, _ := filepath.Glob("../fixtures/*/snapshot.pickle")
	for _, path := range paths {
		name := filepath.Base(filepath.Dir(path))
		an, v := fixtureView(t, name)
		if name == "mlp-adamw" {
			for i := range an.Snapshot.Stacks.Frames {
				an.Snapshot.Stacks.Frames[i].Name = "</script>&amp;<b>\"'\u2028__f__x"
			}
			v = attribution.NewView(an, attribution.ViewOptionsFor(len(an.Devices)))
		}
		renderHTML(t, []*attribution.View{v}, HTMLOptions{})
	}
	if charts < 5*len(paths) {
		t.Fatalf("only %d charts over %d pages", charts, len(paths))
	}
	t.Logf("%d charts over %d pages", charts, len(paths))
}
