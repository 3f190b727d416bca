package capture

import _ "embed"

// Harness is the source of harness.py.
//
//go:embed harness.py
var Harness []byte
