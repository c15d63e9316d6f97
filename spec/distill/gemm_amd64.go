package distill

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly micro-kernel (AVX2 and FMA3).
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernel6x16AVX2 is kernel6x16Go in AVX2/FMA assembly; k >= 1.
//
//go:noescape
func kernel6x16AVX2(k int, a, b, tile *float32)

func kernel6x16(k int, a, b, tile []float32) {
	if useAVX2 && k > 0 {
		_, _ = a[k*mr-1], b[k*nr-1]
		kernel6x16AVX2(k, &a[0], &b[0], &tile[0])
		return
	}
	kernel6x16Go(k, a, b, tile)
}
