package distill

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly micro-kernel (AVX2 and FMA3).
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernel6x16AVX2 is kernel6x16Go in AVX2/FMA assembly; k >= 1.
//
//go:noescape
func kernel6x16AVX2(k int, a, b, tile *float32)

// kernel6x16C is the kernel writing (acc: adding) a full tile straight into c, whose rows
// are ldc apart; k >= 1.
//
//go:noescape
func kernel6x16C(k int, a, b, c *float32, ldc int, acc bool)

// kernelFull computes a whole 6x16 tile of c (rows ldc apart) in place, reporting whether it
// could (no assembly kernel: the caller goes through the tile).
func kernelFull(k int, a, b, c []float32, ldc int, acc bool) bool {
	if !useAVX2 || k <= 0 {
		return false
	}
	_, _, _ = a[k*mr-1], b[k*nr-1], c[(mr-1)*ldc+nr-1]
	kernel6x16C(k, &a[0], &b[0], &c[0], ldc, acc)
	return true
}

func kernel6x16(k int, a, b, tile []float32) {
	if useAVX2 && k > 0 {
		_, _ = a[k*mr-1], b[k*nr-1]
		kernel6x16AVX2(k, &a[0], &b[0], &tile[0])
		return
	}
	kernel6x16Go(k, a, b, tile)
}

//go:noescape
func dotAVX(a, b *float32, n int) float32

//go:noescape
func axpyAVX(a float32, x, y *float32, n int)

// dot is sum a[i] b[i] (len(b) >= len(a)).
func dot(a, b []float32) float32 {
	if n := len(a); useAVX2 && n >= 8 && n%8 == 0 {
		_ = b[n-1]
		return dotAVX(&a[0], &b[0], n)
	}
	return dotGo(a, b)
}

// axpy is y += a x (len(y) >= len(x)).
func axpy(a float32, x, y []float32) {
	if n := len(x); useAVX2 && n >= 8 && n%8 == 0 {
		_ = y[n-1]
		axpyAVX(a, &x[0], &y[0], n)
		return
	}
	axpyGo(a, x, y)
}
