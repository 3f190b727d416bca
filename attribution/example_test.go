package attribution_test

import (
	"fmt"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// Analyze a snapshot: the peak (241.21 MiB is torch's max_memory_allocated
// for this capture, in truth.json), the phase that holds it, and the leak.
func ExampleAnalyze() {
	s, err := snapshot.Open("../fixtures/leak/snapshot.pickle")
	if err != nil {
		panic(err)
	}
	d := attribution.Analyze(s, attribution.Options{Device: -1}).Devices[0]
	ph := d.Phases.List[d.Phases.PeakPhase]
	fmt.Printf("peak allocated %s in step %d %s\n", units.Bytes(d.Peak.Allocated), ph.Step, ph.Name)
	if d.Leak.Found {
		site := d.Leak.Sites[0]
		fmt.Printf("leak: %s per step at %s\n", units.Bytes(site.BytesPerStep), site.Label)
	}
	// Output:
	// peak allocated 241.21 MiB in step 7 backward
	// leak: 8.00 MiB per step at <repo>/capture/harness.py:322 __call__
}
