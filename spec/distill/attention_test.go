package distill

import (
	"math"
	"math/rand"
	"testing"
)

// attnRef64 is the attention of attnForward in float64, written the plain way.
func attnRef64(q, k0, v0 []float64, ck, cv [][]float64, off []int, heads, hd int) []float64 {
	R := off[len(off)-1]
	out := make([]float64, R*heads*hd)
	scale := 1 / math.Sqrt(float64(hd))
	at := func(x []float64, r, h int) []float64 { return x[(r*heads+h)*hd : (r*heads+h+1)*hd] }
	dot64 := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	for s := 0; s+1 < len(off); s++ {
		for t := off[s]; t < off[s+1]; t++ {
			for h := range heads {
				var sc []float64
				var vs [][]float64
				for j := off[s]; j <= t; j++ {
					sc = append(sc, dot64(at(q, t, h), at(k0, j, h))*scale)
					vs = append(vs, at(v0, j, h))
				}
				for j := range ck {
					sc = append(sc, dot64(at(q, t, h), at(ck[j], t, h))*scale)
					vs = append(vs, at(cv[j], t, h))
				}
				mx := math.Inf(-1)
				for _, v := range sc {
					mx = math.Max(mx, v)
				}
				sum := 0.0
				for i := range sc {
					sc[i] = math.Exp(sc[i] - mx)
					sum += sc[i]
				}
				o := at(out, t, h)
				for i, v := range vs {
					for d := range o {
						o[d] += sc[i] / sum * v[d]
					}
				}
			}
		}
	}
	return out
}

func to64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// attnForward and attnBackward against the float64 reference and its finite differences,
// for plain causal attention and a chain of two TTT steps.
func TestAttentionGrad(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	off := []int{0, 5, 12}
	heads, hd := 2, 4
	R := off[len(off)-1]
	n := R * heads * hd
	for _, nc := range []int{0, 2} {
		q, k0, v0 := randVec(rng, n), randVec(rng, n), randVec(rng, n)
		var ck, cv [][]float32
		for range nc {
			ck, cv = append(ck, randVec(rng, n)), append(cv, randVec(rng, n))
		}
		g := randVec(rng, n) // loss = sum out * g
		out := make([]float32, n)
		cache := attnForward(out, q, k0, v0, ck, cv, off, heads, hd)
		c64 := func(x [][]float32) [][]float64 {
			var y [][]float64
			for _, v := range x {
				y = append(y, to64(v))
			}
			return y
		}
		want := attnRef64(to64(q), to64(k0), to64(v0), c64(ck), c64(cv), off, heads, hd)
		for i := range want {
			if math.Abs(want[i]-float64(out[i])) > 1e-5 {
				t.Fatalf("chain %d: out[%d] = %v, want %v", nc, i, out[i], want[i])
			}
		}
		dq, dk0, dv0 := make([]float32, n), make([]float32, n), make([]float32, n)
		var dck, dcv [][]float32
		for range nc {
			dck, dcv = append(dck, make([]float32, n)), append(dcv, make([]float32, n))
		}
		attnBackward(cache, g, dq, dk0, dv0, dck, dcv)
		loss := func(x []float32, i int, e float64) float64 {
			// the loss with x[i] moved by e, in float64
			all := map[*float32][]float64{}
			for _, v := range append(append([][]float32{q, k0, v0}, ck...), cv...) {
				all[&v[0]] = to64(v)
			}
			all[&x[0]][i] += e
			var ck64, cv64 [][]float64
			for j := range nc {
				ck64, cv64 = append(ck64, all[&ck[j][0]]), append(cv64, all[&cv[j][0]])
			}
			o := attnRef64(all[&q[0]], all[&k0[0]], all[&v0[0]], ck64, cv64, off, heads, hd)
			s := 0.0
			for k := range o {
				s += o[k] * float64(g[k])
			}
			return s
		}
		check := func(name string, x, dx []float32) {
			for i := range x {
				const e = 1e-4
				num := (loss(x, i, e) - loss(x, i, -e)) / (2 * e)
				if math.Abs(num-float64(dx[i])) > 1e-3*(1+math.Abs(num)) {
					t.Fatalf("chain %d: d%s[%d] = %v, finite differences %v", nc, name, i, dx[i], num)
				}
			}
		}
		check("q", q, dq)
		check("k0", k0, dk0)
		check("v0", v0, dv0)
		for j := range nc {
			check("ck", ck[j], dck[j])
			check("cv", cv[j], dcv[j])
		}
	}
}
