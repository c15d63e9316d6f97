//go:build !amd64

package distill

func kernel6x16(k int, a, b, tile []float32) { kernel6x16Go(k, a, b, tile) }
