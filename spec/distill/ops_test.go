package distill

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// gradCheck compares grad with central finite differences of loss (a float32 forward pass)
// at up to n coordinates of x chosen at random.
func gradCheck(t *testing.T, name string, x, grad []float32, loss func() float64, n int, rng *rand.Rand) {
	t.Helper()
	idx := rng.Perm(len(x))
	if len(idx) > n {
		idx = idx[:n]
	}
	for _, i := range idx {
		const e = 1e-2
		old := x[i]
		x[i] = old + e
		lp := loss()
		x[i] = old - e
		lm := loss()
		x[i] = old
		num := (lp - lm) / (2 * e)
		if math.Abs(num-float64(grad[i])) > 2e-2*(math.Abs(num)+0.05) {
			t.Errorf("%s[%d]: gradient %v, finite differences %v", name, i, grad[i], num)
		}
	}
}

func TestExpf(t *testing.T) {
	for x := -87.0; x < 88; x += 0.0137 {
		got, want := float64(expf(float32(x))), math.Exp(float64(float32(x)))
		if math.Abs(got-want) > 3e-7*want {
			t.Fatalf("expf(%v) = %v, want %v", x, got, want)
		}
	}
	if expf(-100) != 0 {
		t.Fatal("expf(-100) != 0")
	}
}

// linear -> rmsNorm -> swiglu -> rope -> softCE and smoothL1: every backward pass against
// finite differences of the forward passes.
func TestOpsGrad(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	M, K, N, V := 3, 6, 8, 11
	x, w, b := randVec(rng, M*K), randVec(rng, N*K), randVec(rng, N)
	nw := randVec(rng, N)
	w2 := randVec(rng, V*N/2)
	target := randVec(rng, M*N/2)
	rope := newRopeTable(4, 8, 10000)
	pos := []int{5, 1, 7}
	ids := []int32{2, 7, 3}
	probs := []float32{0.5, 0.3, 0.2}
	forward := func(keep bool) (float64, map[string][]float32) {
		y := make([]float32, M*N)
		linear(y, x, w, b, M, N, K)
		rs := make([]float32, M)
		n := make([]float32, M*N)
		rmsNorm(n, y, nw, rs, M, N, 1e-5)
		h := make([]float32, M*N/2)
		g, u := make([]float32, M*N/2), make([]float32, M*N/2)
		for m := range M {
			copy(g[m*N/2:], n[m*N:m*N+N/2])
			copy(u[m*N/2:], n[m*N+N/2:(m+1)*N])
		}
		swiglu(h, g, u)
		hr := append([]float32(nil), h...)
		rope.apply(hr, pos, 1, false) // one head of 4
		z := make([]float32, M*V)
		linear(z, hr, w2, nil, M, V, N/2)
		var loss float64
		dhr := make([]float32, M*N/2)
		for m := range M {
			loss += 0.7 * softCE(z[m*V:(m+1)*V], ids, probs, 0.7)
			loss += 0.3 * smoothL1(dhr[m*N/2:(m+1)*N/2], hr[m*N/2:(m+1)*N/2], target[m*N/2:(m+1)*N/2], 0.3)
		}
		if !keep {
			return loss, nil
		}
		grads := map[string][]float32{"x": make([]float32, M*K), "w": make([]float32, N*K), "b": make([]float32, N),
			"nw": make([]float32, N), "w2": make([]float32, V*N/2)}
		linearBack(dhr, grads["w2"], nil, z, hr, w2, M, V, N/2)
		rope.apply(dhr, pos, 1, true)
		dg, du := make([]float32, M*N/2), make([]float32, M*N/2)
		swigluBack(dg, du, dhr, g, u)
		dn := make([]float32, M*N)
		for m := range M {
			copy(dn[m*N:], dg[m*N/2:(m+1)*N/2])
			copy(dn[m*N+N/2:], du[m*N/2:(m+1)*N/2])
		}
		dy := make([]float32, M*N)
		rmsNormBack(dy, grads["nw"], dn, y, nw, rs, M, N)
		linearBack(grads["x"], grads["w"], grads["b"], dy, x, w, M, N, K)
		return loss, grads
	}
	_, grads := forward(true)
	loss := func() float64 { l, _ := forward(false); return l }
	for name, p := range map[string][]float32{"x": x, "w": w, "b": b, "nw": nw, "w2": w2} {
		gradCheck(t, name, p, grads[name], loss, 20, rng)
	}
}

func TestTopK(t *testing.T) {
	z := []float32{1, 5, 3, 5, -2, 4}
	ids, probs := make([]int32, 3), make([]float32, 3)
	if a := topK(z, ids, probs); a != 1 || ids[0] != 1 || ids[1] != 3 || ids[2] != 5 {
		t.Fatalf("topK: argmax %d, ids %v", a, ids)
	}
	var sum float64
	for _, v := range z {
		sum += math.Exp(float64(v - 5))
	}
	if math.Abs(float64(probs[2])-math.Exp(-1)/sum) > 1e-6 {
		t.Fatalf("topK probs %v", probs)
	}
}

func newRng(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

func fmt4(v []int) string { return fmt.Sprint(v) }
