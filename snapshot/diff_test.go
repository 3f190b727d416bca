package snapshot

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nlpodyssey/gopickle/pickle"
)

// differentialFiles lists the pickles checked against gopickle: the
// testdata snapshots and every real fixture under the repository root.
func differentialFiles(t testing.TB) []string {
	var files []string
	for _, pat := range []string{"testdata/*.pickle", "../fixtures/*/snapshot.pickle"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if !strings.Contains(filepath.Base(f), "ordered_dict") {
				files = append(files, f)
			}
		}
	}
	return files
}

// gopickleLoad decodes with gopickle, turning its panics into errors.
func gopickleLoad(data []byte) (tree any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("gopickle panicked: %v", p)
		}
	}()
	u := pickle.NewUnpickler(bytes.NewReader(data))
	return u.Load()
}

// TestDifferential decodes every pickle with ours and with gopickle and
// compares every segment, block, event, frame, annotation and setting.
func TestDifferential(t *testing.T) {
	for _, path := range differentialFiles(t) {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Decode(bytes.NewReader(data), path)
			if err != nil {
				t.Fatalf("Decode(%s) error: %v", path, err)
			}
			tree, err := gopickleLoad(data)
			if err != nil {
				t.Fatalf("gopickle Load(%s) error: %v", path, err)
			}
			want, err := refView(tree, s.Format.String(), s.Protocol)
			if err != nil {
				t.Fatalf("reference conversion of %s: %v", path, err)
			}
			var diffs []string
			compareTrees(path, view(s), want, &diffs)
			reportDiffs(t, diffs)
		})
	}
}

// FuzzDecode checks that the decoder never panics, that its errors are one
// line naming the input and a byte offset, and that wherever gopickle reads
// the same bytes into a snapshot-shaped tree, the two agree.
func FuzzDecode(f *testing.F) {
	for _, path := range differentialFiles(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) > 64<<10 {
			continue // the large synthetic file slows every iteration
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	for _, path := range []string{"testdata/snap.json", "testdata/snap_p4.pickle.gz", "testdata/snap_trace_plot.html"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode(bytes.NewReader(data), "fuzz")
		if err != nil {
			checkErrorShape(t, err)
			if s != nil && errKindOf(err) != kindTruncated {
				t.Fatalf("Decode returned a snapshot with a %v error: %v", errKindOf(err), err)
			}
		}
		if s != nil {
			checkAllValid(t, s) // the valid part of a salvaged one too
		}
		// Compare only where ours ran to STOP: then every length it met was
		// within the input, so gopickle cannot be led into a huge allocation.
		reachedStop := err == nil || errKindOf(err) == kindSchema || errKindOf(err) == kindFormat
		if de, ok := err.(*decodeError); ok && de.off < 0 {
			return // a value past checkValues' bounds: the reference has no such check
		}
		if len(data) == 0 || data[0] != opProto || !reachedStop {
			return
		}
		// A FRAME longer than the file does not stop ours (a file cut short
		// is read as far as it goes), but gopickle allocates its length.
		if err != nil && strings.Contains(err.Error(), "the FRAME at byte") ||
			s != nil && slices.ContainsFunc(s.Warnings, func(w Warning) bool { return strings.Contains(w.Message, "the FRAME at byte") }) {
			return
		}
		tree, gerr := gopickleLoad(data)
		if gerr != nil {
			return
		}
		format, protocol := "pickle", 0
		if s != nil {
			protocol = s.Protocol
		}
		want, rerr := refView(tree, format, protocol)
		switch {
		case err != nil && rerr == nil:
			t.Fatalf("Decode error %v, but gopickle's tree is a snapshot", err)
		case err == nil && rerr != nil:
			t.Fatalf("Decode accepted what the reference rejects: %v", rerr)
		case err == nil:
			var diffs []string
			compareTrees("fuzz", view(s), want, &diffs)
			reportDiffs(t, diffs)
		}
	})
}

// checkErrorShape fails unless err reads "decoding NAME at byte N: …" on
// one line and is not a recovered panic.
func checkErrorShape(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	if errKindOf(err) == kindInternal {
		t.Fatalf("internal error: %v", err)
	}
	// A value checked after decoding names its segment or entry instead.
	named := strings.HasPrefix(msg, "decoding fuzz: segment ") || strings.HasPrefix(msg, "decoding fuzz: device_traces[") ||
		strings.HasPrefix(msg, "decoding fuzz: external_annotations[")
	if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "decoding fuzz at byte ") && !named {
		t.Fatalf("error %q is not one line of the form \"decoding fuzz at byte N: …\" or \"decoding fuzz: ENTRY: …\"", msg)
	}
}
