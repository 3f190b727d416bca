package testenv

import (
	"encoding/json"
	"os"
)

// SmallResults returns the results.json at path cut to its first points
// of each precision, compact: a seed small enough that minimizing the
// inputs grown from it stays quick (the whole 24 KB fixtures held the
// fuzzer in minimization for most of a minute).
func SmallResults(path string) ([]byte, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	var doc map[string]any
	if json.Unmarshal(b, &doc) != nil {
		return nil, false
	}
	pts, _ := doc["points"].([]any)
	var keep []any
	seen := map[any]int{}
	for _, p := range pts {
		m, _ := p.(map[string]any)
		if seen[m["precision"]] < 2 {
			seen[m["precision"]]++
			keep = append(keep, p)
		}
	}
	doc["points"] = keep
	out, err := json.Marshal(doc)
	return out, err == nil
}
