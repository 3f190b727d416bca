package units_test

import (
	"fmt"

	"github.com/memscope/memscope/internal/units"
)

func ExampleBytes() {
	for _, n := range []int64{512, 1023, 1024, 1<<20 - 1, 39_006_617, 13_249_974_108, -1536} {
		fmt.Printf("%14d %12s\n", n, units.Bytes(n))
	}
	// Output:
	//            512        512 B
	//           1023       1023 B
	//           1024     1.00 KiB
	//        1048575     1.00 MiB
	//       39006617    37.20 MiB
	//    13249974108    12.34 GiB
	//          -1536    -1.50 KiB
}

func ExampleParseBytes() {
	for _, s := range []string{"40GiB", "1.5 GiB", "40GB", "4096", "40G"} {
		n, err := units.ParseBytes(s)
		fmt.Println(n, err)
	}
	// Output:
	// 42949672960 <nil>
	// 1610612736 <nil>
	// 40000000000 <nil>
	// 4096 <nil>
	// 0 size "40G": ambiguous unit "G": write GiB (2^30) or GB (10^9)
}

func ExampleDuration() {
	for _, us := range []int64{850, 12_345, 456_000, 4_560_000} {
		fmt.Println(units.Duration(us))
	}
	// Output:
	// 850 µs
	// 12.3 ms
	// 456 ms
	// 4.56 s
}
