package kernelref

import (
	"fmt"
	"math"
	"runtime"
	"sync"
)

// Conventions shared by every op in this package and by the WGSL kernels:
//
//   - Buffers are flat, row-major float32 slices; the shape comment on each names its
//     dimensions outermost first.
//   - A weight matrix W has shape [out, in], the Hugging Face (nn.Linear) layout, so a
//     projection is a dot product of an activation row with a weight row.
//   - Every sum (dot products, means, softmax denominators) accumulates in float64 and is
//     rounded to float32 once, when the result is stored.

// dot returns sum_k a[k] * b[k], accumulated in float64 (the products of float32 values
// are exact in float64). Four partial sums (k mod 4) break the add-latency chain; at
// float64 the order changes nothing that survives the rounding to float32.
func dot(a []float64, b []float32) float64 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 float64
	k := 0
	for ; k+4 <= n; k += 4 {
		s0 += a[k] * float64(b[k])
		s1 += a[k+1] * float64(b[k+1])
		s2 += a[k+2] * float64(b[k+2])
		s3 += a[k+3] * float64(b[k+3])
	}
	for ; k < n; k++ {
		s0 += a[k] * float64(b[k])
	}
	return (s0 + s1) + (s2 + s3)
}

// toF64 widens x to float64.
func toF64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// parallelRows calls body(lo, hi) on disjoint chunks covering [0, n), on up to
// GOMAXPROCS goroutines when work (an estimate of multiply-adds) makes it worthwhile.
// The chunks only divide the work: each output element is computed by the same code
// whatever the split, so results do not depend on the number of cores.
func parallelRows(n, work int, body func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers > n {
		workers = n
	}
	if workers <= 1 || work < 1<<15 {
		body(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(lo, hi)
		}()
	}
	wg.Wait()
}

// MatMul returns Y = X W^T (+ bias) (+ R):
//
//	Y[m, n] = sum_k X[m, k] * W[n, k]  (+ bias[n])  (+ R[m, n])
//
// with x [M, K], w [N, K] (the [out, in] layout), bias [N] or nil, resid [M, N] or nil,
// and Y [M, N]. The sum, bias and residual are added in float64 and rounded once.
func MatMul(x, w, bias, resid []float32, M, N, K int) []float32 {
	check("MatMul x", x, M*K)
	check("MatMul w", w, N*K)
	if bias != nil {
		check("MatMul bias", bias, N)
	}
	if resid != nil {
		check("MatMul resid", resid, M*N)
	}
	x64 := toF64(x)           // [M, K]
	y := make([]float32, M*N) // [M, N]
	parallelRows(N, M*N*K, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			wn := w[n*K : (n+1)*K] // [K]
			for m := 0; m < M; m++ {
				s := dot(x64[m*K:(m+1)*K], wn)
				if bias != nil {
					s += float64(bias[n])
				}
				if resid != nil {
					s += float64(resid[m*N+n])
				}
				y[m*N+n] = float32(s)
			}
		}
	})
	return y
}

// RMSNorm normalises each row of x [rows, n] by its root mean square and scales by w [n]:
//
//	y[r, i] = x[r, i] * w[i] / sqrt(mean_j(x[r, j]^2) + eps)
//
// The mean and the product are taken in float64. Returns y [rows, n].
func RMSNorm(x, w []float32, rows, n int, eps float64) []float32 {
	check("RMSNorm x", x, rows*n)
	check("RMSNorm w", w, n)
	y := make([]float32, rows*n) // [rows, n]
	for r := 0; r < rows; r++ {
		xr := x[r*n : (r+1)*n] // [n]
		var ss float64
		for _, v := range xr {
			ss += float64(v) * float64(v)
		}
		scale := 1 / math.Sqrt(ss/float64(n)+eps)
		for i := range xr {
			y[r*n+i] = float32(float64(xr[i]) * scale * float64(w[i]))
		}
	}
	return y
}

// Embed gathers rows of the embedding table e [vocab, dim]: out[m, :] = e[tok[m], :].
// Returns out [len(tok), dim].
func Embed(e []float32, tok []int, dim int) []float32 {
	vocab := len(e) / dim
	out := make([]float32, len(tok)*dim) // [M, dim]
	for m, t := range tok {
		if t < 0 || t >= vocab {
			panic(fmt.Sprintf("kernelref.Embed: token %d outside vocabulary of %d", t, vocab))
		}
		copy(out[m*dim:(m+1)*dim], e[t*dim:(t+1)*dim])
	}
	return out
}

// Add returns the elementwise sum a + b (the residual add), computed in float64.
func Add(a, b []float32) []float32 {
	check("Add b", b, len(a))
	y := make([]float32, len(a))
	for i := range a {
		y[i] = float32(float64(a[i]) + float64(b[i]))
	}
	return y
}

// Silu is x * sigmoid(x) = x / (1 + exp(-x)), in float64.
func Silu(x float64) float64 {
	return x / (1 + math.Exp(-x))
}

// SwiGLU returns out[i] = silu(gate[i]) * up[i], in float64, for gate and up of any
// shape (both [M, hidden] in the MLP).
func SwiGLU(gate, up []float32) []float32 {
	check("SwiGLU up", up, len(gate))
	out := make([]float32, len(gate))
	for i := range gate {
		out[i] = float32(Silu(float64(gate[i])) * float64(up[i]))
	}
	return out
}

// SwiGLUPacked is SwiGLU on one fused gate/up buffer gu [M, 2*hidden], each row holding
// the gate half then the up half. Returns out [M, hidden].
func SwiGLUPacked(gu []float32, M, hidden int) []float32 {
	check("SwiGLUPacked gu", gu, M*2*hidden)
	out := make([]float32, M*hidden) // [M, hidden]
	for m := 0; m < M; m++ {
		row := gu[m*2*hidden : (m+1)*2*hidden] // [2*hidden]
		copy(out[m*hidden:], SwiGLU(row[:hidden], row[hidden:]))
	}
	return out
}

// Softmax returns, for each row of x [rows, n], exp(x[i] - max x) / sum_j exp(x[j] - max x),
// in float64. Returns [rows, n].
func Softmax(x []float32, rows, n int) []float32 {
	check("Softmax x", x, rows*n)
	y := make([]float32, rows*n) // [rows, n]
	for r := 0; r < rows; r++ {
		xr := x[r*n : (r+1)*n] // [n]
		mx := math.Inf(-1)
		for _, v := range xr {
			mx = math.Max(mx, float64(v))
		}
		e := make([]float64, n) // [n]
		var sum float64
		for i, v := range xr {
			e[i] = math.Exp(float64(v) - mx)
			sum += e[i]
		}
		for i := range e {
			y[r*n+i] = float32(e[i] / sum)
		}
	}
	return y
}

// Argmax returns the index of the largest value of x, the lowest such index on ties.
// NaNs are never selected unless every value is NaN (then 0).
func Argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] || (x[best] != x[best] && v == v) {
			best = i
		}
	}
	return best
}

// ArgmaxGumbel is argmax_rows with GUMBEL: the index of the largest
// x[i] * invT + Gumbel(seed, seq, pos, id_i), in the device's f32 arithmetic (lowest index on
// ties), a draw from softmax(x * invT); id_i is i, or i + d2t[i] with a map (MAP).
func ArgmaxGumbel(x []float32, invT float32, seed uint64, seq, pos uint32, d2t []int32) int {
	best, at := float32(math.Inf(-1)), 0
	for i, v := range x {
		id := uint32(i)
		if d2t != nil {
			id = uint32(int32(i) + d2t[i])
		}
		if s := v*invT + Gumbel(seed, seq, pos, id); s > best {
			best, at = s, i
		}
	}
	return at
}

// check panics unless buf holds exactly n values.
func check(what string, buf []float32, n int) {
	if len(buf) != n {
		panic(fmt.Sprintf("ref: %s has %d values, want %d", what, len(buf), n))
	}
}

// GeluTanh is GELU in its tanh approximation (PyTorch's gelu(approximate="tanh")), float64:
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
func GeluTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

// GeGLU returns out[i] = gelu_tanh(gate[i]) * up[i] (Gemma's MLP), in float64.
func GeGLU(gate, up []float32) []float32 {
	check("GeGLU up", up, len(gate))
	out := make([]float32, len(gate))
	for i := range gate {
		out[i] = float32(GeluTanh(float64(gate[i])) * float64(up[i]))
	}
	return out
}
