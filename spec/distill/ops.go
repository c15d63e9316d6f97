package distill

import (
	"math"
	"runtime"
	"sync"
)

// The element-wise kernels of the trainer and of the CPU forward passes, each with its
// backward pass next to it. Buffers are flat row-major float32 slices; a backward pass adds
// (+=) into the gradients of its inputs and weights, as llm.c's do, so gradients are zeroed
// once per step. A nil gradient slice means "frozen": that gradient is not computed.

// parallelFor calls body(lo, hi) on disjoint chunks of [0, n), one per core when n is worth it.
func parallelFor(n, grain int, body func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers > 1 && n >= 2*grain {
		workers = min(workers, n/grain)
	} else {
		workers = 1
	}
	if workers <= 1 {
		body(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			body(lo, hi)
		}(lo, min(lo+chunk, n))
	}
	wg.Wait()
}

// expf is e^x in float32 to about 2 ulp: x = n ln2 + r with |r| <= ln2/2, e^r by its
// degree-6 Taylor polynomial, times 2^n built in the exponent bits. It is 0 below -87.3
// (no denormals) and saturates at e^88.7.
func expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	if x < -87.3 {
		return 0
	}
	if x > 88.7 {
		x = 88.7
	}
	t := x * log2e
	n := int32(t + 0.5)
	if t < -0.5 {
		n = int32(t - 0.5)
	}
	fn := float32(n)
	r := x - fn*ln2hi - fn*ln2lo
	p := 1 + r*(1+r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720))))))
	return p * math.Float32frombits(uint32(n+127)<<23)
}

// sigmoid is 1 / (1 + e^-x).
func sigmoid(x float32) float32 { return 1 / (1 + expf(-x)) }

// dotGo is sum a[i] b[i] with four partial sums (dot's portable form).
func dotGo(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpyGo is y += a x (axpy's portable form).
func axpyGo(a float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += a * v
	}
}

// linear is y = x w^T (+ b) for x [M, K], w [N, K], b [N] or nil, y [M, N].
func linear(y, x, w, b []float32, M, N, K int) {
	Gemm(false, true, M, N, K, x, w, y, false)
	addBias(y, b, M)
}

// addBias adds b [N] (nil: nothing) to every row of y [M, N].
func addBias(y, b []float32, M int) {
	if b == nil {
		return
	}
	N := len(b)
	for m := range M {
		row := y[m*N : (m+1)*N]
		for n, v := range b {
			row[n] += v
		}
	}
}

// linearBack is linear's backward pass: dx += dy w (when dx != nil), dw += dy^T x (when
// dw != nil), db += the column sums of dy (when db != nil).
func linearBack(dx, dw, db, dy, x, w []float32, M, N, K int) {
	if dx != nil {
		Gemm(false, false, M, K, N, dy, w, dx, true)
	}
	if dw != nil {
		Gemm(true, false, N, K, M, dy, x, dw, true)
	}
	if db != nil {
		for m := range M {
			for n, v := range dy[m*N : (m+1)*N] {
				db[n] += v
			}
		}
	}
}

// rmsNorm is y = w * x / sqrt(mean(x^2) + eps) per row of x [rows, n]; rs [rows] receives
// 1/sqrt(mean(x^2) + eps) for the backward pass (nil: not kept). The mean is taken in float64.
func rmsNorm(y, x, w, rs []float32, rows, n int, eps float64) {
	parallelFor(rows, 256, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*n:(r+1)*n], y[r*n:(r+1)*n]
			var ss float64
			for _, v := range xr {
				ss += float64(v) * float64(v)
			}
			s := float32(1 / math.Sqrt(ss/float64(n)+eps))
			if rs != nil {
				rs[r] = s
			}
			for i, v := range xr {
				yr[i] = v * s * w[i]
			}
		}
	})
}

// rmsNormBack is rmsNorm's backward pass. With z = x*s and g = w*dy: dx += s (g - z mean(g z)),
// dw += sum over rows of z * dy.
func rmsNormBack(dx, dw, dy, x, w, rs []float32, rows, n int) {
	if dx != nil {
		parallelFor(rows, 256, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				xr, dyr, dxr := x[r*n:(r+1)*n], dy[r*n:(r+1)*n], dx[r*n:(r+1)*n]
				s := rs[r]
				var m float32
				for i, v := range xr {
					m += w[i] * dyr[i] * v * s
				}
				m /= float32(n)
				for i, v := range xr {
					dxr[i] += s * (w[i]*dyr[i] - v*s*m)
				}
			}
		})
	}
	if dw != nil {
		for r := range rows {
			xr, dyr := x[r*n:(r+1)*n], dy[r*n:(r+1)*n]
			s := rs[r]
			for i, v := range xr {
				dw[i] += v * s * dyr[i]
			}
		}
	}
}

// swiglu is h = silu(g) * u, element-wise.
func swiglu(h, g, u []float32) {
	parallelFor(len(h), 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			h[i] = g[i] * sigmoid(g[i]) * u[i]
		}
	})
}

// swigluBack is swiglu's backward pass: dg += dh u sig(g) (1 + g (1 - sig(g))), du += dh silu(g).
func swigluBack(dg, du, dh, g, u []float32) {
	parallelFor(len(dh), 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := sigmoid(g[i])
			dg[i] += dh[i] * u[i] * s * (1 + g[i]*(1-s))
			du[i] += dh[i] * g[i] * s
		}
	})
}

// ropeTable holds cos and sin of pos * inv_freq[i], [maxPos][hd/2], computed in float64 as
// Hugging Face's (and runtime/ref's) rotary embedding does.
type ropeTable struct {
	half     int
	cos, sin []float32
}

func newRopeTable(hd, maxPos int, theta float64) *ropeTable {
	half := hd / 2
	t := &ropeTable{half: half, cos: make([]float32, maxPos*half), sin: make([]float32, maxPos*half)}
	for p := range maxPos {
		for i := range half {
			f := math.Pow(theta, -float64(2*i)/float64(hd))
			s, c := math.Sincos(float64(p) * f)
			t.cos[p*half+i], t.sin[p*half+i] = float32(c), float32(s)
		}
	}
	return t
}

// apply rotates x [rows, heads, hd] in place, row r at position pos[r], by Hugging Face's
// half rotation (x[i], x[i+hd/2]); inverse rotates the other way (the backward pass).
func (t *ropeTable) apply(x []float32, pos []int, heads int, inverse bool) {
	half := t.half
	hd := 2 * half
	for r, p := range pos {
		c, s := t.cos[p*half:(p+1)*half], t.sin[p*half:(p+1)*half]
		for h := range heads {
			v := x[(r*heads+h)*hd : (r*heads+h+1)*hd]
			for i := range half {
				x0, x1 := v[i], v[i+half]
				si := s[i]
				if inverse {
					si = -si
				}
				v[i] = x0*c[i] - x1*si
				v[i+half] = x0*si + x1*c[i]
			}
		}
	}
}

// smoothL1 adds to d [n] the gradient of mean_i SmoothL1(pred_i - target_i) (beta 1) times
// scale, and returns that mean: 0.5 e^2 for |e| < 1, |e| - 0.5 else; the gradient is e
// clipped to [-1, 1].
func smoothL1(d, pred, target []float32, scale float32) float64 {
	var loss float64
	n := float32(len(pred))
	for i, p := range pred {
		e := p - target[i]
		switch {
		case e > 1:
			loss += float64(e - 0.5)
			d[i] += scale / n
		case e < -1:
			loss += float64(-e - 0.5)
			d[i] -= scale / n
		default:
			loss += float64(0.5 * e * e)
			d[i] += scale * e / n
		}
	}
	return loss / float64(len(pred))
}

func sqrt64(x float64) float64 { return math.Sqrt(x) }
