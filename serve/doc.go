// Package serve is 'memscope serve': a local web UI over analysed snapshots,
// in the manner of 'go tool pprof -http'. It owns the HTTP handlers, the
// JSON API they answer, the level-of-detail queries behind the timeline and
// the page itself (assets/, embedded with go:embed: no network is needed).
// It computes nothing that attribution already does: the numbers, phases,
// categories, sites, moments, fragmentation, leaks, OOMs and diffs are
// attribution's; serve indexes them for zooming and shapes them as JSON.
//
// # Data flow
//
// The command decodes and analyses each snapshot once (snapshot.Open,
// attribution.Analyze with AllocSizes) and gives the analyses to New, which
// builds one index per device (index.go) in a pass over its events:
// every allocation as an interval of events (its alloc event to the event
// that ended it, from Timeline.Death), allocated bytes after every event,
// each event's change of allocated bytes with its site, and the live
// allocations at 256 checkpoints. Beside it, on the other core, one more
// replay of the device records reserved bytes where they change (the
// timeline's reserved series) and keeps up to 256 allocator states
// (snapshot.Timeline.KeepStates), so that a moment at any event replays at
// most 16 k events or a 256th of the trace from the nearest. Each device
// is a view, numbered from 0; every API call names one with v.
//
// # Level of detail
//
// /api/timeline?from=&to=&px= (timeline.go) cuts the window into px
// columns and draws each at the event of its column with the most
// allocated bytes. The largest allocations live at any column's event are
// returned one by one (Band: id, lifetime, size, and its stacking offset
// per column, stacked in allocation order as memory_viz's active-memory
// view does); the others as bytes per site per column, the sites holding
// the most at the window's peak each, the rest as one. An answer holds at
// most maxBands bands and restSites+1 rows of px numbers whatever the
// input, and its columns add up to allocated bytes exactly. Among
// allocations of one size (a long run repeats its steps' sizes) the bands
// go to columns spread over the window, not to its first steps. Each
// column also carries reserved bytes and the segment events in it. The cost is the
// window's events and allocations plus the live allocations at one
// checkpoint, plus columns × bands.
//
// # The API
//
// /api/views, /api/summary, /api/timeline, /api/alloc?id=, /api/moment?at=,
// /api/sites?at=&q=, /api/steps, /api/leaks, /api/oom, /api/settings and
// /api/compare?a=&b= answer JSON; sizes are raw bytes, positions on the
// timeline's axis are µs after the first event (event numbers when the
// trace has no times). /api/steps answers a page of steps at a time. An
// answer of 1 KiB or more is gzipped when the client accepts it. A
// malformed or out-of-range parameter is a 400 with a message, never a
// panic. The summary's notes are report's words (report.Notes).
//
// A Server holds the analyses and reads them as long as it lives; queries
// on one device take turns (the analysis fills some state lazily), queries
// on different devices run at once. Answers are fresh values owned by the
// caller.
package serve
