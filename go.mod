module github.com/memscope/memscope

go 1.26.8

require (
	github.com/go-echarts/go-echarts/v2 v2.7.2
	github.com/go-json-experiment/json v1.27.2
	github.com/google/pprof v0.0.0-20261105003125-4bf881d7fb0b
	github.com/nlpodyssey/gopickle v0.3.0
	github.com/spf13/pflag v1.1.0
)

require golang.org/x/text v0.14.0 // indirect
