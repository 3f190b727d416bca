// Package capture holds the capture harness (harness.py: stdlib + torch, one
// file) that runs PyTorch workloads with allocator history recording on and
// writes each snapshot beside the numbers torch measured (truth.json). The
// harness is embedded so an installed memscope needs no checkout; the Go
// side that drives it (capture runs, sweeps, several ranks) builds on this.
package capture

import _ "embed"

// Harness is the source of harness.py.
//
//go:embed harness.py
var Harness []byte
