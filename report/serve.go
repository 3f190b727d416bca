package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/textsafe"
	"github.com/memscope/memscope/internal/units"
)

// ServeProgress words what 'memscope serve' says on stderr while it reads
// its inputs and once it listens.
type ServeProgress struct{ W io.Writer }

// Reading says a snapshot is being read and analysed.
func (p ServeProgress) Reading(path string, size int64) {
	fmt.Fprintf(p.W, "memscope: serve: reading %s (%s)…\n", textsafe.Escape(path), units.Bytes(size))
}

// Analysed says a snapshot is ready, with its devices and events and how
// long decoding, analysing and indexing took.
func (p ServeProgress) Analysed(path string, devices, events int, took time.Duration) {
	fmt.Fprintf(p.W, "memscope: serve: %s: %s, %s, ready in %s\n", textsafe.Escape(path), nouns(devices, "device"),
		nouns(events, "event"), took.Round(time.Millisecond))
}

// Listening says where the UI is and how to stop it; with token, that
// the address is reachable from other machines and the URL on stdout
// holds the token it needs.
func (p ServeProgress) Listening(url string, token bool) {
	if token {
		fmt.Fprintf(p.W, "memscope: serve: the UI is on %s, reachable from other machines: it needs the token in the URL printed on stdout (Ctrl-C stops it; listen on localhost:PORT to need none)\n", url)
		return
	}
	fmt.Fprintf(p.W, "memscope: serve: the UI is on %s (Ctrl-C stops it; over SSH, forward the port: ssh -L PORT:localhost:PORT HOST)\n", url)
}

// Notes are the explanations 'memscope summary' prints beside a device's
// numbers that a page showing the device must give too, in the same
// words: why its peak is the snapshot's end state (no allocation history
// recorded, or a trace of one entry: there is no timeline to draw), and why
// a profiler trace given with it joined nothing (no memory events on the
// device, or times that do not overlap the recording). Empty when there is
// nothing to explain; the warnings are apart, in DeviceSummary.Warnings.
func Notes(d *attribution.DeviceSummary) []string {
	out := []string{}
	if note := endStateNote(d); note != "" {
		out = append(out, "peak allocated "+units.Bytes(d.PeakAllocated.Bytes)+" "+note)
	}
	if d.Joined {
		var b strings.Builder
		joinWindowsText(&errWriter{w: &b}, d.Join)
		if s := strings.Join(strings.Fields(b.String()), " "); s != "" {
			out = append(out, "profiler trace: "+s)
		}
	}
	return out
}
