module github.com/memscope/memscope

go 1.26.8

require (
	github.com/go-json-experiment/json v1.27.2
	github.com/nlpodyssey/gopickle v0.3.0
	github.com/spf13/pflag v1.1.0
)

require (
	github.com/chzyer/readline v1.5.1 // indirect
	github.com/go-echarts/go-echarts/v2 v2.7.2 // indirect
	github.com/google/pprof v0.0.0-20261105003125-4bf881d7fb0b // indirect
	github.com/ianlancetaylor/demangle v0.0.0-20250417193237-f615e6bd150b // indirect
	golang.org/x/sys v0.32.0 // indirect
	golang.org/x/text v0.14.0 // indirect
)
