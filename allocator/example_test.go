package allocator_test

import (
	"fmt"
	"log"

	"github.com/memscope/memscope/allocator"
	"github.com/memscope/memscope/snapshot"
)

func ExampleReplay() {
	s, err := snapshot.Open("../fixtures/oom/snapshot.pickle")
	if err != nil {
		log.Fatal(err)
	}
	rep, err := allocator.Replay(s, 0)
	if err != nil {
		log.Fatal(err)
	}
	for k, c := range rep.Checks {
		if c.Checked > 0 {
			fmt.Printf("%s: %d of %d matched\n", allocator.Kind(k), c.Matched, c.Checked)
		}
	}
	fmt.Printf("end state: %d of %d blocks; retries %d, cudaMalloc failures from the recording %d\n",
		rep.EndBlocks.Matched, rep.EndBlocks.Checked, rep.Retries, rep.FailedMallocs)
	// Output:
	// segment_alloc: 43 of 43 matched
	// segment_free: 25 of 25 matched
	// block: 206 of 206 matched
	// oom: 1 of 1 matched
	// end state: 40 of 40 blocks; retries 3, cudaMalloc failures from the recording 4
}

func ExampleAllocator() {
	s, err := allocator.ParseConf("expandable_segments:True")
	if err != nil {
		log.Fatal(err)
	}
	a := allocator.New(s, &unlimited{next: 0x7f0000000000})
	x, _ := a.Malloc(3<<20, 0, snapshot.PoolID{})
	y, _ := a.Malloc(30<<20, 0, snapshot.PoolID{})
	for _, r := range a.Drain() {
		fmt.Printf("%s %+d MiB, %d MiB\n", r.Action, int64(r.Addr-x)>>20, r.Size>>20)
	}
	fmt.Printf("second block at +%d MiB, reserved %d MiB\n", (y-x)>>20, a.Reserved>>20)
	// Output:
	// segment_map +0 MiB, 20 MiB
	// alloc +0 MiB, 3 MiB
	// segment_map +20 MiB, 20 MiB
	// alloc +3 MiB, 30 MiB
	// second block at +3 MiB, reserved 40 MiB
}

// unlimited is a device that never runs out.
type unlimited struct{ next uint64 }

func (d *unlimited) Malloc(size, stream int64) (uint64, bool) {
	addr := d.next
	d.next += uint64(size)
	return addr, true
}
func (d *unlimited) Reserve(size, stream int64) uint64 { a, _ := d.Malloc(size, stream); return a }
func (d *unlimited) Map(addr uint64, size int64) bool  { return true }
func (d *unlimited) Free(addr uint64, size int64)      {}
func (d *unlimited) Unmap(addr uint64, size int64)     {}
