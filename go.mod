module github.com/memscope/memscope

go 1.26.8

require (
	github.com/nlpodyssey/gopickle v0.3.0 // indirect
	github.com/spf13/pflag v1.1.0 // indirect
)
