package serve

import (
	"bytes"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/trace"
)

// notesServer serves one snapshot with its summary, joined with the
// profiler trace at tracePath when it is not "", as the serve command
// does; it returns the server and the summary's text as 'memscope
// summary' prints it.
func notesServer(t *testing.T, path, tracePath string) (*Server, string) {
	t.Helper()
	an := analyzed(t, path)
	sum := attribution.Summarize(an, 10)
	if tracePath != "" {
		prof, err := trace.OpenProfile(tracePath)
		if err != nil {
			t.Fatal(err)
		}
		sum.JoinTrace(an, prof.Trace, 10)
	}
	srv, err := New([]Source{{Path: path, Analysis: an, Summary: sum}}, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Ready()
	var b bytes.Buffer
	if err := report.Write(&b, report.Text, &report.Summary{Sum: sum}); err != nil {
		t.Fatal(err)
	}
	return srv, strings.Join(strings.Fields(b.String()), " ")
}

// TestSummaryNotes: /api/summary carries the explanations 'memscope
// summary' prints, word for word: why a state-only capture (torch's
// enabled="state", the legacy _record_memory_history(True)) has no
// timeline, and why a trace recorded at another time joins nothing; a
// run with its own trace has none.
func TestSummaryNotes(t *testing.T) {
	for _, c := range []struct {
		name, snap, trace string
		want              []string // each note holds these, in order
	}{
		{"enabled=state", "../fixtures/quirks/state-only/snapshot.pickle", "", []string{"is the snapshot's end state: the trace holds one entry"}},
		{"legacy call", "../fixtures/quirks/legacy-one-entry/snapshot.pickle", "", []string{"is the snapshot's end state: the trace holds one entry"}},
		{"trace of another run", "../fixtures/leak/snapshot.pickle", "../fixtures/llama-profiled/trace.json.gz", []string{"do not overlap in time", "2026-11-29 17:30:21.518 UTC"}},
		{"trace of the same run", "../fixtures/llama-profiled/snapshot.pickle", "../fixtures/llama-profiled/trace.json.gz", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, text := notesServer(t, c.snap, c.trace)
			var s Summary
			get(t, srv, "/api/summary", &s)
			if c.want == nil {
				if len(s.Notes) != 0 {
					t.Errorf("notes %q, want none", s.Notes)
				}
				return
			}
			if len(s.Notes) != 1 {
				t.Fatalf("notes %q, want one", s.Notes)
			}
			for _, w := range c.want {
				if !strings.Contains(s.Notes[0], w) {
					t.Errorf("note %q does not say %q", s.Notes[0], w)
				}
			}
			// The CLI's words: the note, less what introduces it on the
			// page, is in the summary's text.
			words := strings.TrimPrefix(s.Notes[0], "profiler trace: ")
			if !strings.Contains(text, words) {
				t.Errorf("note %q is not what 'memscope summary' prints:\n%s", words, text)
			}
		})
	}
}
