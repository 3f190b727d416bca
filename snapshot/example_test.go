package snapshot_test

import (
	"fmt"
	"log"

	"github.com/memscope/memscope/snapshot"
)

func ExampleOpen() {
	s, err := snapshot.Open("testdata/snap_p4.pickle")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s protocol %d: %d segments, %d devices traced\n", s.Format, s.Protocol, len(s.Segments), len(s.Traces))
	e := s.Traces[0][2]
	fmt.Printf("%s of %d bytes at %#x, user metadata %q\n", e.Action, e.Size, e.Addr, s.Strings.Get(e.UserMetadata))
	for _, id := range s.Stacks.Stack(e.Stack) {
		f := s.Stacks.Frame(id)
		fmt.Printf("  %s %s:%d\n", f.Name, f.Filename, f.Line)
	}
	// Output:
	// pickle protocol 4: 3 segments, 2 devices traced
	// alloc of 524288 bytes at 0x7f3a80000000, user metadata "step=3"
	//   addmm <repo>/model.py:43
	//   forward <repo>/model.py:42
	//   train_step <repo>/train.py:117
	//   <module> <repo>/train.py:200
}
