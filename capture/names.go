package capture

import (
	"strconv"
	"strings"
)

// RankFile names one process's file: base+ext when the run has one process
// (world ≤ 1), base.rankN+ext for rank N of several. harness.py's rank_file
// names them the same way.
func RankFile(base, ext string, rank, world int) string {
	if world <= 1 {
		return base + ext
	}
	return base + ".rank" + strconv.Itoa(rank) + ext
}

// ParseRankFile reports whether name is a file of base and ext as RankFile
// names them, and its rank: 0 for the single-process name, N for base.rankN.
func ParseRankFile(name, base, ext string) (rank int, ok bool) {
	if name == base+ext {
		return 0, true
	}
	mid, ok := strings.CutPrefix(name, base+".rank")
	if !ok {
		return 0, false
	}
	digits, ok := strings.CutSuffix(mid, ext)
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" || len(digits) > 6 {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return 0, false
	}
	return n, true
}
