package report

import _ "embed"

// EChartsVersion is the ECharts build every HTML page carries: the one
// go-echarts v2.7.2 targets (its README and docs name v5.4.3), vendored
// in report/echarts with its licence and notice (see its README.md).
const EChartsVersion = "5.4.3"

// echartsSHA256 is the digest of the vendored dist/echarts.min.js, as
// report/echarts/README.md gives it.
const echartsSHA256 = "1156429a16a38cb8604dcc6518c19406d4226142d908f8edd2e3531443c54d19"

// echartsLib is npm echarts@5.4.3's dist/echarts.min.js, unchanged.
//
//go:embed echarts/echarts.min.js
var echartsLib string

// echartsNotice is the package's NOTICE file, which the Apache License
// asks a redistribution to carry: every page shows it in its footer.
//
//go:embed echarts/NOTICE
var echartsNotice string

// EChartsSize is the number of bytes the inlined library adds to every
// page, so that callers can say how big a page is without it.
func EChartsSize() int { return len(echartsLib) }
