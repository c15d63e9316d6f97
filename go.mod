module github.com/wspec/wspec

go 1.25

require github.com/klauspost/compress v1.20.4

require github.com/spf13/pflag v1.1.0 // indirect
