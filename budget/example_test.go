package budget_test

import (
	"fmt"
	"log"

	"github.com/memscope/memscope/budget"
)

// The budget of a Llama-3.2-1B fine-tune, micro-batch 4 × 4096, bf16
// autocast and AdamW, and the peak of each phase.
func ExamplePredict() {
	m, _, err := budget.LoadConfig("testdata/llama-3.2-1b.json")
	if err != nil {
		log.Fatal(err)
	}
	s := budget.DefaultShape()
	s.Batch, s.Seq = 4, 4096
	p, err := budget.Predict(m, s)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d params, %d bytes each in model states\n", p.Params.Total, p.PerParam)
	for _, ph := range p.Phases {
		fmt.Printf("%-9s %5.1f GB, mostly %s\n", ph.Phase, float64(ph.Bytes)/1e9, ph.Dominant())
	}
	fmt.Println("peak in", p.Phases[p.Peak].Phase)
	// Output:
	// 1235814400 params, 16 bytes each in model states
	// forward    72.7 GB, mostly saved activations
	// backward   76.8 GB, mostly saved activations
	// optimizer  24.8 GB, mostly model states
	// peak in backward
}
