// Package attribution computes every finding memscope reports from decoded
// snapshots: the summary of a device's memory, the peak's attribution to
// allocation sites, and (as they are added) phases, categories, leaks,
// fragmentation and OOM post-mortems. It prints nothing: renderers in
// package report turn its results into text, JSON, HTML and pprof.
//
// Advice (advise.go, advise_terms.go) is the peak's holders by term and the
// fixes that lower it, each computed from the snapshot's own blocks: the
// blocks of the peak's step as lifetimes, and per fix the bytes it would
// not allocate or would shrink, so that the new peak is the step's highest
// with the fix, event by event. Fixes are budget's kinds (budget.FixKind);
// report words them as budget's are.
//
// Verdicts are values (verdict.go): a finding, a fragmentation or OOM
// verdict, a leak's reason for having none, each carries its kind, its
// severity, the numbers it rests on and the allocator settings to try
// (Suggestion); the words and units are report's. Labels that name things
// (a site "file.py:12 fn", a moment "oom 1", a phase "step 3 backward")
// stay here as data.
//
// A site is where an allocation is charged: the innermost frame of its
// stack that is the user's code or library code, with plumbing (torch, the
// standard library, C++, generated code, memscope's harness, training
// loops) folded away; a library site, such as a line of a Hugging Face
// model in site-packages, also names the user's line that called it. The
// rule is Filter's (filter.go); it runs once per frame and once per stack
// of each stack table (Filter.For, sites.go), so that grouping millions of
// live blocks by site costs a slice lookup each. Blocks with no frame of
// their own share one stack, so their site is chosen per block
// (Device.SiteOfBlock, origins.go): one live before recording by the
// category that holds it (parameters, optimizer state, gradients) or as a
// cuBLAS workspace; one the autograd engine made with no Python frame as a
// gradient, or by the forward allocation it is the gradient of ("… (backward,
// autograd)", matched once per device in event order), or by the autograd
// node its C++ frames run. What nothing names stays "(allocated before
// recording began)" or "(no Python frame…)" (Site.Named).
//
// An inference run has a shape of its own (kvcache.go, kvphases.go,
// inference.go): the weights are the floor, a KV cache grows per token
// (transformers' DynamicCache) or is allocated once (StaticCache, a pool),
// and the prefill's activations peak above both. Its cache is the kv cache
// category, its generate() calls the steps (prefill, decode), and
// Device.Inference says where its memory is.
//
// Results hold IDs into the snapshot's stack table; the snapshot must stay
// alive as long as the results are used. A Filter keeps its decisions about
// every stack table it was used with for as long as it lives.
package attribution
