package serve_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/serve"
	"github.com/memscope/memscope/snapshot"
)

// Serve a snapshot's analysis and ask the API for a view of the whole
// timeline at 200 columns, as the page does when it opens.
func ExampleNew() {
	s, err := snapshot.Open("../fixtures/llama-bf16/snapshot.pickle")
	if err != nil {
		fmt.Println(err)
		return
	}
	an := attribution.Analyze(s, attribution.Options{Device: -1, AllocSizes: true})
	srv, err := serve.New([]serve.Source{{Path: "llama-bf16", Analysis: an}}, serve.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/api/timeline?px=200&bands=50", nil))
	var tl serve.Timeline
	if err := json.Unmarshal(rec.Body.Bytes(), &tl); err != nil {
		fmt.Println(err)
		return
	}
	top := int64(0)
	for _, v := range tl.Max {
		top = max(top, v)
	}
	fmt.Printf("%s axis, %d columns, %d bands, highest column %d bytes\n", tl.Axis, tl.Columns, len(tl.Bands), top)
	// Output: time_us axis, 200 columns, 50 bands, highest column 1746174976 bytes
}
