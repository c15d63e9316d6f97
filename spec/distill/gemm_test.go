package distill

import (
	"math"
	"math/rand"
	"testing"
)

func naiveGemm(ta, tb bool, M, N, K int, a, b, c []float32, acc bool) {
	for i := range M {
		for j := range N {
			var s float64
			for p := range K {
				av := a[i*K+p]
				if ta {
					av = a[p*M+i]
				}
				bv := b[p*N+j]
				if tb {
					bv = b[j*K+p]
				}
				s += float64(av) * float64(bv)
			}
			if acc {
				s += float64(c[i*N+j])
			}
			c[i*N+j] = float32(s)
		}
	}
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// Every transpose combination, odd sizes that leave partial tiles and a depth over kc,
// with and without accumulation, both micro-kernels.
func TestGemm(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, asm := range []bool{true, false} {
		saved := useAVX2
		useAVX2 = useAVX2 && asm
		for _, s := range [][3]int{{1, 1, 1}, {7, 17, 5}, {13, 40, 300}, {100, 33, 77}, {6, 800, 520}} {
			M, N, K := s[0], s[1], s[2]
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					for _, acc := range []bool{false, true} {
						a, b := randVec(rng, M*K), randVec(rng, K*N)
						c0 := randVec(rng, M*N)
						want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
						naiveGemm(ta, tb, M, N, K, a, b, want, acc)
						Gemm(ta, tb, M, N, K, a, b, got, acc)
						for i := range want {
							if d := math.Abs(float64(want[i] - got[i])); d > 1e-4*math.Sqrt(float64(K))+1e-5 {
								t.Fatalf("asm %v %v ta %v tb %v acc %v: c[%d] = %v, want %v", asm, s, ta, tb, acc, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
		useAVX2 = saved
	}
}

func benchGemm(b *testing.B, M, N, K int, ta, tb bool) {
	rng := rand.New(rand.NewSource(1))
	x, w, y := randVec(rng, M*K), randVec(rng, N*K), make([]float32, M*N)
	b.ResetTimer()
	for range b.N {
		Gemm(ta, tb, M, N, K, x, w, y, false)
	}
	b.ReportMetric(2*float64(M)*float64(N)*float64(K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkGemmLMHead(b *testing.B) { benchGemm(b, 256, 32000, 288, false, true) }
func BenchmarkGemmFFN(b *testing.B)    { benchGemm(b, 1024, 768, 288, false, true) }
func BenchmarkGemmDX(b *testing.B)     { benchGemm(b, 1024, 288, 768, false, false) }
func BenchmarkGemmDW(b *testing.B)     { benchGemm(b, 768, 288, 1024, true, false) }
func BenchmarkGemmLMHeadGo(b *testing.B) {
	saved := useAVX2
	useAVX2 = false
	defer func() { useAVX2 = saved }()
	benchGemm(b, 256, 32000, 288, false, true)
}

func TestGemmPacked(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for _, s := range [][3]int{{1, 33, 7}, {13, 40, 300}, {70, 800, 520}} {
		M, N, K := s[0], s[1], s[2]
		x, w := randVec(rng, M*K), randVec(rng, N*K)
		want, got := make([]float32, M*N), randVec(rng, M*N)
		Gemm(false, true, M, N, K, x, w, want, false)
		GemmPacked(M, x, PackWeight(w, N, K), got, false)
		for i := range want {
			if math.Abs(float64(want[i]-got[i])) > 1e-5*math.Sqrt(float64(K)) {
				t.Fatalf("%v: c[%d] = %v, want %v", s, i, got[i], want[i])
			}
		}
	}
}

func TestDotAxpy(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for _, n := range []int{3, 8, 48, 50} {
		a, b := randVec(rng, n), randVec(rng, n)
		if d := math.Abs(float64(dot(a, b) - dotGo(a, b))); d > 1e-5*float64(n) {
			t.Fatalf("dot of %d: %v, want %v", n, dot(a, b), dotGo(a, b))
		}
		y1, y2 := append([]float32(nil), b...), append([]float32(nil), b...)
		axpy(0.7, a, y1)
		axpyGo(0.7, a, y2)
		for i := range y1 {
			if math.Abs(float64(y1[i]-y2[i])) > 1e-6 {
				t.Fatalf("axpy of %d: y[%d] = %v, want %v", n, i, y1[i], y2[i])
			}
		}
	}
}
