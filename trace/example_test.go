package trace_test

import (
	"fmt"
	"log"

	"github.com/memscope/memscope/trace"
)

// Open a profiler trace, find the allocation peak, and list the operators
// whose allocations were still live there.
func Example() {
	tr, err := trace.Open("testdata/llama-window.json")
	if err != nil {
		log.Fatal(err)
	}
	dev := tr.PeakDevice()
	tb := tr.OpTable(dev, true)
	tb.Sort(trace.ByPeakLive)
	fmt.Printf("peak on %v: %d bytes allocated\n", dev, tb.Peak.Allocated)
	for _, r := range tb.Rows[:3] {
		fmt.Printf("%-66s %d live\n", r.Name, r.SelfPeakLive)
	}
	// Output:
	// peak on cuda:0: 1746174976 bytes allocated
	// aten::_log_softmax                                                 262668288 live
	// aten::_log_softmax_backward_data (backward of aten::_log_softmax)  262668288 live
	// aten::nll_loss_backward (backward of aten::nll_loss_forward)       262668288 live
}

// KeyAverages gives the figures of torch's prof.key_averages().
func ExampleTrace_KeyAverages() {
	tr, err := trace.Open("testdata/llama-window.json")
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range tr.KeyAverages()[:2] {
		fmt.Printf("%s: self %d, total %d, %d calls\n", r.Name, r.SelfDeviceMemory, r.DeviceMemory, r.Count)
	}
	// Output:
	// aten::empty_strided: self 593363456, total 593363456, 7 calls
	// autograd::engine::evaluate_function: LogSoftmaxBackward0: self -525336576, total -262668288, 1 calls
}
