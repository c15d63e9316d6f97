package kernelref

import (
	"math"
	"testing"

	"github.com/wspec/wspec/weights"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func wantSlice(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !near(float64(got[i]), want[i], tol) {
			t.Fatalf("%s[%d] = %v, want %v (all: %v)", what, i, got[i], want[i], got)
		}
	}
}

func TestMatMul(t *testing.T) {
	x := []float32{1, 2, 3, 4, 5, 6}          // [2, 3]
	w := []float32{1, 0, 0, 0, 1, 1, 1, 1, 1} // [3, 3]: rows e0, e1+e2, e0+e1+e2
	got := MatMul(x, w, nil, nil, 2, 3, 3)
	wantSlice(t, "plain", got, []float64{1, 5, 6, 4, 11, 15}, 0)

	bias := []float32{10, 20, 30}        // [3]
	resid := []float32{1, 1, 1, 2, 2, 2} // [2, 3]
	got = MatMul(x, w, bias, resid, 2, 3, 3)
	wantSlice(t, "bias+resid", got, []float64{12, 26, 37, 16, 33, 47}, 0)

	// Large enough to take the parallel path: must equal the row-by-row result.
	const M, N, K = 3, 700, 300
	xb, wb := make([]float32, M*K), make([]float32, N*K)
	for i := range xb {
		xb[i] = float32(math.Sin(float64(i)))
	}
	for i := range wb {
		wb[i] = float32(math.Cos(float64(i) * 0.7))
	}
	big := MatMul(xb, wb, nil, nil, M, N, K)
	for m := 0; m < M; m++ {
		row := MatMul(xb[m*K:(m+1)*K], wb, nil, nil, 1, N, K)
		for n := range row {
			if row[n] != big[m*N+n] {
				t.Fatalf("batched [%d,%d] = %v, row-wise %v", m, n, big[m*N+n], row[n])
			}
		}
	}
}

func TestRMSNorm(t *testing.T) {
	x := []float32{3, 4, 0, 0, 1, 1, 1, 1} // [2, 4]: mean squares 25/4 and 1
	w := []float32{1, 2, 1, 1}             // [4]
	got := RMSNorm(x, w, 2, 4, 0)
	wantSlice(t, "rmsnorm", got, []float64{1.2, 3.2, 0, 0, 1, 2, 1, 1}, 1e-6)
	got = RMSNorm([]float32{0, 0}, []float32{1, 1}, 1, 2, 1e-5)
	wantSlice(t, "zeros", got, []float64{0, 0}, 0)
}

func TestEmbedAddSwiGLU(t *testing.T) {
	e := []float32{0, 0, 1, 1, 2, 2} // [3, 2]
	wantSlice(t, "embed", Embed(e, []int{2, 0, 2}, 2), []float64{2, 2, 0, 0, 2, 2}, 0)
	wantSlice(t, "add", Add([]float32{1, 2}, []float32{0.5, -2}), []float64{1.5, 0}, 0)

	gate := []float32{0, 1, -1, 20} // [4]
	up := []float32{5, 2, 2, 0.5}   // [4]
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	wantSlice(t, "swiglu", SwiGLU(gate, up), []float64{0, 2 * sig(1), -2 * sig(-1), 10 * sig(20)}, 1e-6)

	packed := []float32{0, 1, 5, 2, -1, 20, 2, 0.5} // [2, 2*2]: gate then up per row
	wantSlice(t, "packed", SwiGLUPacked(packed, 2, 2), []float64{0, 2 * sig(1), -2 * sig(-1), 10 * sig(20)}, 1e-6)
}

func TestSoftmaxArgmax(t *testing.T) {
	x := []float32{1, 2, 3, 1000, 1000, -1000} // [2, 3]
	y := Softmax(x, 2, 3)
	for r := 0; r < 2; r++ {
		var s float64
		for _, v := range y[r*3 : r*3+3] {
			s += float64(v)
		}
		if !near(s, 1, 1e-6) {
			t.Errorf("row %d sums to %v", r, s)
		}
	}
	wantSlice(t, "softmax row 1", y[3:], []float64{0.5, 0.5, 0}, 1e-7)
	if !near(float64(y[2]/y[1]), math.E, 1e-5) {
		t.Errorf("softmax ratio %v, want e", y[2]/y[1])
	}

	nan := float32(math.NaN())
	for _, c := range []struct {
		x    []float32
		want int
	}{
		{[]float32{1, 3, 2}, 1},
		{[]float32{5, 5, 5}, 0},
		{[]float32{1, 7, 3, 7}, 1},
		{[]float32{nan, 1, 2}, 2},
		{[]float32{-3}, 0},
	} {
		if got := Argmax(c.x); got != c.want {
			t.Errorf("Argmax(%v) = %d, want %d", c.x, got, c.want)
		}
	}
}

func TestRopeInvFreq(t *testing.T) {
	f := RopeInvFreq(8, 10000, nil)
	for i, want := range []float64{1, 0.1, 0.01, 0.001} {
		if !near(f[i], want, 1e-12) {
			t.Errorf("inv_freq[%d] = %v, want %v", i, f[i], want)
		}
	}
	// Llama-3 scaling with orig/high = 250, orig/low = 1000: wavelengths 2pi (kept),
	// 628 (smoothed) and 6283 (divided by the factor).
	sc := &weights.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 1000}
	f = RopeInvFreq(6, 10000, sc) // unscaled: 1, 10000^(-1/3) = 0.0464, 10000^(-2/3) = 0.00215
	f0 := RopeInvFreq(6, 10000, nil)
	if f[0] != 1 {
		t.Errorf("high frequency scaled to %v", f[0])
	}
	wl := 2 * math.Pi / f0[1] // 135.3 < 250: kept
	if wl >= 250 || f[1] != f0[1] {
		t.Errorf("wavelength %v: inv_freq %v, want %v", wl, f[1], f0[1])
	}
	if !near(f[2], f0[2]/8, 1e-15) {
		t.Errorf("low frequency %v, want %v", f[2], f0[2]/8)
	}
	f = RopeInvFreq(4, 10000, sc) // 1, 0.01: wavelength 628.3 is in the smooth band
	smooth := (1000*0.01/(2*math.Pi) - 1) / 3
	if want := (1-smooth)*0.01/8 + smooth*0.01; !near(f[1], want, 1e-15) || !near(f[1], 0.00297535, 1e-8) {
		t.Errorf("smoothed inv_freq %v, want %v", f[1], want)
	}
}

func TestRope(t *testing.T) {
	const rows, nH, hd = 3, 2, 8
	x := make([]float32, rows*nH*hd) // [rows, nH, hd]
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*1.3) + 0.1*float64(i%5))
	}
	orig := append([]float32(nil), x...)
	inv := RopeInvFreq(hd, 10000, nil)

	// Position 0 is the identity.
	y := append([]float32(nil), x...)
	Rope(y, []int{0, 0, 0}, rows, nH, hd, inv)
	wantSlice(t, "pos 0", y, f64(orig), 0)

	// Each (i, i+hd/2) pair keeps its norm, and rotates by pos*inv_freq[i].
	pos := []int{1, 7, 300}
	Rope(x, pos, rows, nH, hd, inv)
	for r := 0; r < rows; r++ {
		for h := 0; h < nH; h++ {
			base := (r*nH + h) * hd
			for i := 0; i < hd/2; i++ {
				a0, a1 := float64(orig[base+i]), float64(orig[base+i+hd/2])
				b0, b1 := float64(x[base+i]), float64(x[base+i+hd/2])
				if !near(math.Hypot(a0, a1), math.Hypot(b0, b1), 1e-5) {
					t.Fatalf("row %d head %d pair %d: norm %v -> %v", r, h, i, math.Hypot(a0, a1), math.Hypot(b0, b1))
				}
				want := math.Remainder(float64(pos[r])*inv[i], 2*math.Pi)
				got := math.Remainder(math.Atan2(b1, b0)-math.Atan2(a1, a0), 2*math.Pi)
				if !near(math.Remainder(got-want, 2*math.Pi), 0, 1e-4) {
					t.Fatalf("row %d head %d pair %d: rotated by %v, want %v", r, h, i, got, want)
				}
			}
		}
	}

	// A quarter turn maps (x0, x1) to (-x1, x0).
	q := []float32{1, 2, 3, 4} // [1, 1, 4]: pairs (1, 3) and (2, 4)
	Rope(q, []int{1}, 1, 1, 4, []float64{math.Pi / 2, math.Pi})
	wantSlice(t, "quarter/half turn", q, []float64{-3, -2, 1, -4}, 1e-6)
}

func f64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func TestAttention(t *testing.T) {
	// T = 1: the only key gets all the weight, whatever q is.
	q := []float32{3, -1, 0.5, 2} // [1, 2, 2]
	k := []float32{1, 1}          // [1, 1, 2]
	v := []float32{7, -8}         // [1, 1, 2]
	wantSlice(t, "T=1", Attention(q, k, v, []int{0}, 1, 1, 2, 1, 2), []float64{7, -8, 7, -8}, 0)

	// Equal keys: the mean of the visible values. Query 0 sees position 0 only, query 1
	// sees 0..2 (causal mask; position 3 is never visible from them).
	kc := []float32{1, 0, 1, 0, 1, 0, 100, 0} // [4, 1, 2]
	vc := []float32{1, 2, 3, 4, 5, 6, 90, 90} // [4, 1, 2]
	q = []float32{0.3, 0.4, 0.3, 0.4}         // [2, 1, 2]
	wantSlice(t, "causal mean", Attention(q, kc, vc, []int{0, 2}, 2, 4, 1, 1, 2), []float64{1, 2, 3, 4}, 1e-6)

	// Two keys with scores s and 0: weights softmax(s/sqrt(hd), 0). Grouped-query:
	// query heads 0, 1 read kv head 0 and heads 2, 3 read kv head 1.
	kc = []float32{ // [2, 2, 2]
		2, 0, 0, 0, // t = 0: kv head 0, kv head 1
		0, 0, 0, 2, // t = 1
	}
	vc = []float32{ // [2, 2, 2]
		1, 0, 10, 0,
		0, 1, 0, 10,
	}
	q = []float32{1, 0, 1, 0, 0, 1, 0, 0} // [1, 4, 2]
	out := Attention(q, kc, vc, []int{1}, 1, 2, 4, 2, 2)
	w := 1 / (1 + math.Exp(-2/math.Sqrt2)) // weight of the key scoring 2/sqrt(2)
	wantSlice(t, "gqa", out, []float64{w, 1 - w, w, 1 - w, 10 * (1 - w), 10 * w, 5, 5}, 1e-6)

	// Softmax weights sum to 1: all-ones values give all-ones output.
	const T, nH, nKV, hd = 9, 6, 3, 4
	kc, vc = make([]float32, T*nKV*hd), make([]float32, T*nKV*hd)
	for i := range kc {
		kc[i], vc[i] = float32(math.Sin(float64(i))), 1
	}
	q = make([]float32, 2*nH*hd)
	for i := range q {
		q[i] = float32(math.Cos(float64(i)) * 3)
	}
	out = Attention(q, kc, vc, []int{4, 8}, 2, T, nH, nKV, hd)
	for i, o := range out {
		if !near(float64(o), 1, 1e-6) {
			t.Fatalf("out[%d] = %v with unit values", i, o)
		}
	}
}
