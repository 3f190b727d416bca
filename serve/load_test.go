package serve

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/snapshot"
)

type heard struct {
	read     map[string]int64
	analysed map[string][2]int
}

func (h *heard) Reading(path string, size int64) { h.read[path] = size }
func (h *heard) Analysed(path string, devices, events int, took time.Duration) {
	h.analysed[path] = [2]int{devices, events}
}

// TestLoad: Load analyses each snapshot with the command's Analyze, tells
// Progress of its size and, once indexed, its devices and events, and
// serves them; an error of Analyze comes back as it is.
func TestLoad(t *testing.T) {
	path := filepath.Join("..", "fixtures", "capture-train", "snapshot.pickle")
	var an *attribution.Analysis
	h := &heard{read: map[string]int64{}, analysed: map[string][2]int{}}
	srv, err := Load([]string{path}, LoadOptions{
		Progress: h,
		Analyze: func(p string) (*attribution.Analysis, error) {
			s, err := snapshot.Open(p)
			if err != nil {
				return nil, err
			}
			an = attribution.Analyze(s, attribution.Options{Device: -1, AllocSizes: true, SeriesPoints: OverviewPoints})
			return an, nil
		},
	})
	if err != nil || srv == nil {
		t.Fatalf("Load() = %v", err)
	}
	st, _ := os.Stat(path)
	if h.read[path] != st.Size() {
		t.Errorf("Reading(%s) size %d, want %d", path, h.read[path], st.Size())
	}
	if got, want := h.analysed[path], [2]int{len(an.Devices), len(an.Devices[0].Timeline.Events)}; got != want || want[1] == 0 {
		t.Errorf("Analysed(%s) devices, events = %v, want %v", path, got, want)
	}
	refused := errors.New("refused")
	if _, err := Load([]string{path}, LoadOptions{Progress: h, Analyze: func(string) (*attribution.Analysis, error) { return nil, refused }}); err != refused {
		t.Errorf("Load(failing Analyze) = %v, want its error", err)
	}
}
