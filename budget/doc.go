// Package budget predicts the GPU memory of one training or inference step of
// a decoder-only transformer before it runs: the five-term budget of model
// states, saved activations, logits and loss, KV cache and overhead, the peak
// of each phase (forward, backward, optimizer) and which phase and term
// should hold it, the headroom on a device, and ranked fixes with the peak
// each would leave; when none fits the device alone, Combine applies them
// in that order, each with those before it, until the run fits (the JSON
// document's "combination": positions in "fixes", their names, the shape,
// the new peak and its fit). Compare holds a prediction against measured
// phase peaks.
//
// The model comes from a Hugging Face config.json (ParseConfig, LoadConfig)
// or is filled in by hand; the run shape (micro-batch, sequence length,
// precision, optimizer, activation checkpointing, loss, mode) is a Shape.
// Predict does the arithmetic; nothing is fitted to measurements. Every byte
// count is derived from the tensors the step creates and which of them
// autograd saves for backward, for the module structure of Hugging Face's
// Llama family (RMSNorm computed in fp32, rotary embeddings, a SiLU-gated or
// plain MLP, SDPA attention that saves no s×s matrix, or eager attention that
// does), under torch.autocast, plain fp32 or bf16. Each Part holds the
// numbers its bytes were multiplied from (Operands), so a reader can redo
// the sum by hand from the formula report writes. The classic
// rule of 34·s·b·h bytes per layer (Korthikanti et al.) is shown next to the
// derived figure, not used.
//
// Predictions are of allocated bytes, what torch.cuda.max_memory_allocated
// reports; the CUDA context and other memory outside the caching allocator
// are kept apart (Prediction.Outside) and only added for the device fit.
//
// The package writes no words. Parts and shares (PartKind with its
// Operands), phase moments (Moment), the rule of thumb (RuleOperands), the
// fit (FitVerdict), fixes (Fix.Kind), notes (Note), warnings (Warning),
// ParseConfig's guesses (ConfigWarning) and when a part's tensors live
// (Lifetime) are typed values with their numbers; package report names
// them, writes the formulas and the JSON document.
//
// The package imports nothing from memscope's other packages: the command
// feeds Compare with phases measured by package attribution
// (attribution.MeasureBudget) and merged with torch's peaks from a
// capture's truth.json (ReadTruth, MergeTruth). Returned values share no
// memory with the arguments and may be kept.
package budget
