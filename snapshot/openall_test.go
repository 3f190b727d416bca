package snapshot

import (
	"os"
	"testing"
)

// TestOpenAll: the snapshots opened at once are those OpenWith opens one
// by one (their entries and frame files alike), and a missing file's
// error stands at its place.
func TestOpenAll(t *testing.T) {
	paths := []string{"../fixtures/llama-bf16/snapshot.pickle", "no-such.pickle", "../fixtures/oom/snapshot.pickle"}
	snaps, errs := OpenAll(paths, Options{})
	for i, p := range paths {
		want, werr := OpenWith(p, Options{})
		if (errs[i] == nil) != (werr == nil) {
			t.Fatalf("%s: OpenAll error %v, OpenWith %v", p, errs[i], werr)
		}
		if werr != nil {
			if !os.IsNotExist(errs[i]) && snaps[i] != nil {
				t.Errorf("%s: %v with a snapshot", p, errs[i])
			}
			continue
		}
		got := snaps[i]
		if len(got.Traces[0]) != len(want.Traces[0]) || len(got.Segments) != len(want.Segments) {
			t.Errorf("%s: %d entries and %d segments, OpenWith %d and %d", p, len(got.Traces[0]), len(got.Segments), len(want.Traces[0]), len(want.Segments))
		}
		files, wantFiles := got.Stacks.Files(), want.Stacks.Files()
		if len(files) != len(got.Stacks.Frames) || len(files) != len(wantFiles) {
			t.Fatalf("%s: %d files for %d frames", p, len(files), len(got.Stacks.Frames))
		}
		for k := range files {
			if files[k] != wantFiles[k] || files[k] != got.Stacks.Frame(FrameID(k)).Filename {
				t.Errorf("%s: frame %d's file %q, want %q", p, k, files[k], wantFiles[k])
				break
			}
		}
	}
}
