//go:build !amd64

package distill

// useAVX2 is false off amd64: the plain Go kernels run (the tests switch it like on amd64).
var useAVX2 = false

func kernel6x16(k int, a, b, tile []float32) { kernel6x16Go(k, a, b, tile) }

func kernelFull(k int, a, b, c []float32, ldc int, acc bool) bool { return false }

func dot(a, b []float32) float32     { return dotGo(a, b) }
func axpy(a float32, x, y []float32) { axpyGo(a, x, y) }
